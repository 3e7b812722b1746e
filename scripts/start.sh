#!/usr/bin/env bash
# Sets up everything on a fresh Debian machine and runs Draftline in a real VS Code (code-server),
# with the embedded demo models, at http://127.0.0.1:${PORT:-8080}/ . Ctrl+C stops it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PORT=${PORT:-8080}

# Each step says what it does before it starts: the first run spends minutes before the URL appears.
step() { printf '\n[start] %s\n' "$*"; }
if [ ! -d node_modules/node-llama-cpp ]; then
  step "Installing Draftline's dependencies (npm install; the first time takes a minute or more: node-llama-cpp brings llama.cpp's prebuilt binaries)..."
  npm install --no-audit --no-fund
fi
step 'Setting up code-server (VS Code in the browser), once; later runs skip what is already there...'
bash scripts/setup-e2e.sh
step 'Building and packaging the extension (the bundle, the native addon, the .vsix)...'
npm run package -- --out .cache/draftline-linux-x64.vsix

# The demo's workspace and VS Code state live outside the repository: a workspace inside it makes VS
# Code offer the repository "found in the parent folders". DRAFTLINE_DEMO_DIR to put them elsewhere.
RUN=${DRAFTLINE_DEMO_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/draftline-demo}
mkdir -p "$RUN/workspace" "$RUN/user-data/User" "$RUN/extensions"
RUN=$(cd "$RUN" && pwd)
if git -C "$RUN/workspace" rev-parse --show-toplevel >/dev/null 2>&1; then
  echo "note: $RUN/workspace is inside a git repository ($(git -C "$RUN/workspace" rev-parse --show-toplevel)); set DRAFTLINE_DEMO_DIR to a folder outside one" >&2
fi
# The demo's example.ts: made on the first run, kept with the user's edits after (said so at the URL).
EXAMPLE_NOTE=$(bash scripts/demo-example.sh "$RUN/workspace")
cat > "$RUN/user-data/User/settings.json" <<'JSON'
{
  "workbench.startupEditor": "none",
  "editor.quickSuggestions": { "other": false, "comments": false, "strings": false },
  "editor.suggestOnTriggerCharacters": false,
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "security.workspace.trust.enabled": false,
  "git.openRepositoryInParentFolders": "never"
}
JSON
printf 'bind-addr: 127.0.0.1:%s\nauth: none\ncert: false\n' "$PORT" > "$RUN/config.yaml"
CS=.cache/code-server/node_modules/.bin/code-server
# Lines of code-server's output that are no problem (below): left out of what this script prints.
CODE_SERVER_NOISE='^File not found: .*/node_modules/vsda/rust/web/vsda(_bg\.wasm|\.js)$'
export XDG_DATA_HOME="$RUN/xdg-data" XDG_CONFIG_HOME="$RUN/xdg-config"
step 'Installing the extension into code-server...'
"$CS" --config "$RUN/config.yaml" --user-data-dir "$RUN/user-data" --extensions-dir "$RUN/extensions" \
  --install-extension .cache/draftline-linux-x64.vsix --force
# The inference worker the extension starts is shared by all windows and detached from them (it
# outlives a window reload for 10 minutes). The demo's lives in its own directory, so that on exit
# (Ctrl+C included) this script stops it rather than leaving ~300 MB behind.
export DRAFTLINE_SHARED_WORKER_DIR="$RUN/worker"
mkdir -p -m 700 "$DRAFTLINE_SHARED_WORKER_DIR"
CS_PID=
cleanup() {
  trap - EXIT INT TERM
  if [ -n "$CS_PID" ]; then
    kill -TERM "$CS_PID" 2>/dev/null || true
    wait "$CS_PID" 2>/dev/null || true
  fi
  bash scripts/stop-shared-worker.sh "$DRAFTLINE_SHARED_WORKER_DIR" || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
echo
echo "Draftline is running in VS Code at:  http://127.0.0.1:$PORT/?folder=$RUN/workspace"
echo "(open it in a browser; open example.ts and type. Ctrl+C here stops it, and the inference worker with it.)"
echo "$EXAMPLE_NOTE"
echo
# In the background and waited for (not exec'd): the trap above must run when it ends.
# code-server's output without its two "File not found: …/node_modules/vsda/rust/web/vsda_bg.wasm" and
# "…/vsda.js" lines: vsda is the closed-source signing module of Microsoft's VS Code builds, which no
# open-source build (code-server's included) has; the browser asks for it, is told it is missing, and
# goes on without it. Nothing of Draftline's or of VS Code's features depends on it. $! stays
# code-server's pid (the filter is a process substitution).
"$CS" --config "$RUN/config.yaml" --auth none --bind-addr "127.0.0.1:$PORT" --disable-telemetry --disable-update-check \
  --disable-workspace-trust --disable-getting-started-override --ignore-last-opened \
  --user-data-dir "$RUN/user-data" --extensions-dir "$RUN/extensions" "$RUN/workspace" \
  > >(grep --line-buffered -v -E "$CODE_SERVER_NOISE") 2>&1 &
CS_PID=$!
wait "$CS_PID"
