#!/usr/bin/env bash
# The demo workspace's example.ts (scripts/start.sh): written on the first run; after that the user's
# edits are kept (it is their file now), and the line printed says so and how to start afresh:
# DRAFTLINE_DEMO_FRESH=1 puts the original back. Usage: demo-example.sh <workspace folder>
set -euo pipefail
WORKSPACE=${1:?usage: demo-example.sh <workspace folder>}
EXAMPLE="$WORKSPACE/example.ts"
original() {
  cat <<'TS'
// Type below: Draftline completes with its embedded demo models ("draftline-code": small but real,
// trained for Draftline; see models/README.md in the Draftline repository). Weak, but local.
export function sum(values: number[]): number {
  let total = 0;
  for (const value of values) {
    total += value;
  }
  return total;
}

export function average(values: number[]): number {
  
}
TS
}
mkdir -p "$WORKSPACE"
if [ ! -f "$EXAMPLE" ]; then
  original > "$EXAMPLE"
  echo "example.ts: a new copy ($EXAMPLE)."
elif [ "${DRAFTLINE_DEMO_FRESH:-}" = 1 ]; then
  original > "$EXAMPLE"
  echo "example.ts: started afresh (DRAFTLINE_DEMO_FRESH=1); your edits of it are gone."
elif original | cmp -s - "$EXAMPLE"; then
  echo "example.ts: as it comes ($EXAMPLE)."
else
  echo "example.ts keeps your edits from the last run ($EXAMPLE); DRAFTLINE_DEMO_FRESH=1 bash scripts/start.sh starts it afresh."
fi
