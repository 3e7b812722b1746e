#!/usr/bin/env bash
# Stops the shared inference worker(s) listening in DIR (the extension's DRAFTLINE_SHARED_WORKER_DIR;
# see src/worker/sharedWorker.ts). The worker is detached from the editor that started it and stays up
# for 10 minutes after its last window left (so a reloaded window finds its models loaded): a demo
# that ends should not leave it behind. SIGTERM (it removes its socket and lock), SIGKILL after 5 s.
#
# Usage: bash scripts/stop-shared-worker.sh DIR
set -uo pipefail
dir=${1:?usage: stop-shared-worker.sh DIR}
# Running: alive, and not a zombie its parent has not reaped yet (a window's extension host that is
# busy). A /proc entry that is gone between the two looks is a process reaped in between: stopped.
running() {
  kill -0 "$1" 2>/dev/null || return 1
  [ -d /proc/self ] || return 0
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  [[ "$stat" != *") Z "* && "$stat" != *") X "* ]]
}
for lock in "$dir"/*.sock.lock; do
  [ -f "$lock/pid" ] || continue
  pid=$(cat "$lock/pid" 2>/dev/null)
  [[ "$pid" =~ ^[0-9]+$ ]] || continue
  kill -TERM "$pid" 2>/dev/null || continue
  # Decided once, in the loop: a second look after it could see a zombie reaped in between as alive.
  stopped=
  for _ in $(seq 50); do
    if ! running "$pid"; then
      stopped=1
      break
    fi
    sleep 0.1
  done
  if [ -z "$stopped" ]; then
    kill -KILL "$pid" 2>/dev/null
    rm -rf "$lock" "${lock%.lock}"
    echo "stopped the shared inference worker (pid $pid, killed: it did not stop within 5 s)"
  else
    echo "stopped the shared inference worker (pid $pid)"
  fi
done
exit 0
