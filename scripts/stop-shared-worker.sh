#!/usr/bin/env bash
# Stops the shared inference worker(s) listening in DIR (the extension's DRAFTLINE_SHARED_WORKER_DIR;
# see src/worker/sharedWorker.ts). The worker is detached from the editor that started it and stays up
# for 10 minutes after its last window left (so a reloaded window finds its models loaded): a demo
# that ends should not leave it behind. SIGTERM (it removes its socket and lock), SIGKILL after 5 s.
#
# Usage: bash scripts/stop-shared-worker.sh DIR
set -uo pipefail
dir=${1:?usage: stop-shared-worker.sh DIR}
# Running, and not a zombie its parent has not reaped yet (a window's extension host that is busy).
running() { kill -0 "$1" 2>/dev/null && ! grep -qs '^[0-9]* ([^)]*) Z' "/proc/$1/stat"; }
for lock in "$dir"/*.sock.lock; do
  [ -f "$lock/pid" ] || continue
  pid=$(cat "$lock/pid" 2>/dev/null)
  [[ "$pid" =~ ^[0-9]+$ ]] || continue
  kill -TERM "$pid" 2>/dev/null || continue
  for _ in $(seq 50); do
    running "$pid" || break
    sleep 0.1
  done
  if running "$pid"; then
    kill -KILL "$pid" 2>/dev/null
    rm -rf "$lock" "${lock%.lock}"
    echo "stopped the shared inference worker (pid $pid, killed: it did not stop within 5 s)"
  else
    echo "stopped the shared inference worker (pid $pid)"
  fi
done
exit 0
