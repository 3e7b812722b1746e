#!/usr/bin/env bash
# Installs what the end-to-end tests (test/e2e/) need to drive a real VS Code headless:
#   - Debian packages: chromium (driven by playwright-core), ripgrep, the headers code-server's native
#     modules build against, and a compiler toolchain;
#   - code-server@4.100.3 (VS Code 1.100.3; the newest that accepts node 20) into <repo>/.cache/code-server/,
#     with its own package.json / node_modules (the repo's package.json is not touched).
#
# Idempotent and non-interactive; meant to run as root on a fresh Debian (bookworm) machine, and cheap to
# re-run (skips what is already there). Downloads only from the npm registry and Debian apt: the GitHub
# ripgrep download of @vscode/ripgrep's postinstall is pre-seeded from Debian's /usr/bin/rg, and node-gyp
# is pointed at the local node headers so it never fetches them.
#
# Usage: bash scripts/setup-e2e.sh [system|code-server]   (env: CODE_SERVER_VERSION to override, FORCE=1 to reinstall)
#   system       only the Debian packages (the integration tier's software GPU needs them)
#   code-server  only code-server (only test/e2e needs it: scripts/test.sh installs it meanwhile)
set -euo pipefail
PART="${1:-all}"
case "$PART" in all | system | code-server) ;; *) printf 'usage: %s [system|code-server]\n' "$0" >&2; exit 2 ;; esac

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CS_VERSION="${CODE_SERVER_VERSION:-4.100.3}"
CS_DIR="$REPO/.cache/code-server"
CS_BIN="$CS_DIR/node_modules/.bin/code-server"
MARKER="$CS_DIR/.installed-$CS_VERSION"
# @vscode/ripgrep version used by code-server 4.100.x and the ripgrep release its postinstall downloads.
RG_PKG_VERSION="1.15.11"
RG_RELEASE="v13.0.0-10"

START=$(date +%s)
log() { printf '[setup-e2e] %s\n' "$*"; }
# DRAFTLINE_MACHINE_CACHE (set by scripts/test.sh): code-server installed once per machine and version,
# outside the checkout, for every checkout here (CI's fresh clones among them), as a CI cache would.
if [[ -n "${DRAFTLINE_MACHINE_CACHE:-}" && ! -e "$CS_DIR" ]]; then
  mkdir -p "$DRAFTLINE_MACHINE_CACHE/code-server-$CS_VERSION" "$(dirname "$CS_DIR")"
  ln -s "$DRAFTLINE_MACHINE_CACHE/code-server-$CS_VERSION" "$CS_DIR"
fi
die() { printf '[setup-e2e] ERROR: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------- apt
if [[ "$PART" != code-server ]]; then
APT_PACKAGES=(
  chromium            # the browser playwright-core drives (never `playwright install`)
  fonts-liberation    # readable fonts in screenshots
  ripgrep             # VS Code search; also seeds @vscode/ripgrep's download
  libkrb5-dev libsecret-1-dev libx11-dev libxkbfile-dev   # headers for code-server's native modules
  build-essential python3 pkg-config make g++             # node-gyp toolchain
  tar gzip ca-certificates
  mesa-vulkan-drivers libvulkan1   # llvmpipe, a software Vulkan device: test/integration/vulkan.test.ts runs the GPU path on it
  xz-utils util-linux iproute2     # the bench kit's archive (xz), its no-network run (unshare) with loopback up (ip): test/integration/benchKit.test.ts
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  log "apt: missing packages: ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || die "not root and no sudo: install these yourself: ${missing[*]}"
    SUDO="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  log "apt: apt-get update"
  $SUDO apt-get update -q
  log "apt: apt-get install --no-install-recommends ${missing[*]}"
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  log "apt: all ${#APT_PACKAGES[@]} packages already installed"
fi
command -v chromium >/dev/null || die "chromium not on PATH after apt install"
command -v rg >/dev/null || die "rg not on PATH after apt install"
fi
if [[ "$PART" == system ]]; then
  log "done in $(($(date +%s) - START)) s"
  exit 0
fi

# --------------------------------------------------------------------------------------------- node
command -v node >/dev/null || die "node is not installed (the project needs node 20)"
NODE_MAJOR=$(node -p 'process.versions.node.split(".")[0]')
if [[ "$NODE_MAJOR" != "20" ]]; then
  log "WARNING: node $(node -v): code-server $CS_VERSION is built for node 20; other majors may fail"
fi

# ------------------------------------------------------------------------------------- code-server
installed_version() {
  [[ -f "$CS_DIR/node_modules/code-server/package.json" ]] || return 1
  node -p "require('$CS_DIR/node_modules/code-server/package.json').version" 2>/dev/null
}

if [[ "${FORCE:-0}" != "1" && -f "$MARKER" && -x "$CS_BIN" && "$(installed_version || true)" == "$CS_VERSION" ]]; then
  log "code-server $CS_VERSION already installed in $CS_DIR (FORCE=1 to reinstall)"
else
  log "installing code-server@$CS_VERSION into $CS_DIR"
  mkdir -p "$CS_DIR"
  rm -f "$CS_DIR"/.installed-*
  if [[ ! -f "$CS_DIR/package.json" ]]; then
    cat >"$CS_DIR/package.json" <<'JSON'
{
  "name": "draftline-e2e-code-server",
  "private": true,
  "description": "code-server for Draftline's end-to-end tests; installed by scripts/setup-e2e.sh",
  "allowScripts": { "code-server": true, "argon2": true }
}
JSON
  fi

  # Pre-seed @vscode/ripgrep's download cache: its postinstall looks for
  # $TMPDIR/vscode-ripgrep-cache-<pkg version>/ripgrep-<release>-<target>.tar.gz before going to GitHub.
  case "$(uname -m)" in
    x86_64) RG_TARGET="x86_64-unknown-linux-musl" ;;
    aarch64 | arm64) RG_TARGET="aarch64-unknown-linux-musl" ;;
    *) die "unsupported architecture $(uname -m)" ;;
  esac
  INSTALL_TMP="$REPO/.cache/tmp"
  RG_CACHE="$INSTALL_TMP/vscode-ripgrep-cache-$RG_PKG_VERSION"
  RG_TGZ="$RG_CACHE/ripgrep-$RG_RELEASE-$RG_TARGET.tar.gz"
  mkdir -p "$RG_CACHE"
  if [[ ! -s "$RG_TGZ" ]]; then
    log "pre-seeding ripgrep download with Debian's $(command -v rg) -> $RG_TGZ"
    staging="$(mktemp -d)"
    cp "$(command -v rg)" "$staging/rg"
    tar -C "$staging" -czf "$RG_TGZ" rg
    rm -rf "$staging"
  fi

  # node-gyp: use the local node headers instead of downloading them.
  NODE_PREFIX="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")"
  if [[ -f "$NODE_PREFIX/include/node/node.h" ]]; then
    export npm_config_nodedir="$NODE_PREFIX"
  else
    die "node headers not found at $NODE_PREFIX/include/node (node-gyp would download them)"
  fi

  # The warnings npm 11 prints for the options below, which it no longer knows but still passes on.
  EXPECTED_NPM_WARNINGS='/^npm warn Unknown (cli|env) config "(--)?(unsafe-perm|build-from-source|nodedir|yes)"/d'
  # npm_config_yes: a nested `npx node-gyp` must not prompt (an ~/.npmrc may say yes=false).
  # npm_config_build_from_source: node-pre-gyp / prebuild-install (argon2, kerberos) would first try to
  #   download prebuilt binaries from GitHub; build them locally instead.
  # allowScripts in package.json: newer npm (11.x) gates dependency install scripts on it.
  # --unsafe-perm: code-server's postinstall.sh refuses to run as root unless $npm_config_unsafe_perm is
  #   set (npm 11 warns "Unknown cli config" but still exports it to the scripts).
  log "npm install code-server@$CS_VERSION (builds native modules; a few minutes)"
  # npm 11 no longer knows these two options, yet the install scripts still read them from the environment
  # npm gives them: without them, the install fails as root (unsafe-perm) or offline (build-from-source).
  # npm prints "Unknown cli/env config" for each of them (and code-server's nested npm install again):
  # the lines are dropped below, and only those: any other warning or error still shows.
  (
    cd "$CS_DIR"
    export TMPDIR="$INSTALL_TMP"   # os.tmpdir() for the ripgrep seed above
    export npm_config_yes=true npm_config_build_from_source=true npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
    export JOBS="${JOBS:-2}"   # node-gyp parallelism; the machines have few cores
    { npm install --save-exact --unsafe-perm --no-audit --no-fund --loglevel=warn "code-server@$CS_VERSION" 2>&1 1>&3 | sed -E "$EXPECTED_NPM_WARNINGS" >&2; } 3>&1
  )

  [[ -x "$CS_BIN" ]] || die "install finished but $CS_BIN is missing"
  got="$(installed_version || true)"
  [[ "$got" == "$CS_VERSION" ]] || die "installed code-server version is '$got', wanted $CS_VERSION"
  # The ripgrep VS Code uses must be there (the postinstall would have failed without the seed).
  rg_found="$(find "$CS_DIR/node_modules" -path '*@vscode/ripgrep/bin/rg' -type f 2>/dev/null | head -n1 || true)"
  [[ -n "$rg_found" ]] || die "no @vscode/ripgrep/bin/rg under $CS_DIR/node_modules"
  log "ripgrep in place: $rg_found"
  rm -rf "$INSTALL_TMP"
  date -u +%FT%TZ >"$MARKER"
fi

# --version with throwaway XDG dirs (it writes a default config.yaml under $XDG_CONFIG_HOME).
xdg="$(mktemp -d)"
ver="$(XDG_CONFIG_HOME="$xdg" XDG_DATA_HOME="$xdg" "$CS_BIN" --version 2>/dev/null | grep -v ' info ' | head -n1 || true)"
rm -rf "$xdg"
[[ -n "$ver" ]] || die "$CS_BIN --version printed nothing"
log "code-server: $CS_BIN ($ver)"
log "chromium: $(command -v chromium) ($(chromium --version 2>/dev/null || echo '?'))"
log "done in $(($(date +%s) - START)) s"
