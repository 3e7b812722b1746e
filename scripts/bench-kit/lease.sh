#!/usr/bin/env bash
# A lease (the time a GPU machine is yours), every step in one command: bash run.sh lease [--prepare] [--budget-s N] [--deadline-s N] [--out DIR] [--small] [--restart]
#
# In order: starts build-cuda.sh in the background (ggml-cuda for this GPU, llama-server,
# llama-quantize), writes the random targets the runs need on the CPU while it builds, checks that
# llama-server answers, then runs the bench steps in order of value, each under its own time limit:
# its share of what is left of --budget-s (540 s by default, for all steps), so that a step that ends
# early leaves its time to the next ones, and a step stopped at its limit keeps the sections it
# finished. --deadline-s (570 by default) bounds this command (for a machine that runs one command
# at most 10 minutes): steps that no longer fit are left for the next `run.sh lease`, which resumes after
# the last step run (.lease-state; the build and the targets are then already there). --restart
# starts over. Without a GPU (nvidia-smi sees none) every step runs on the CPU and nothing is built:
# llama-server is used where bench/cache/llama-server/build/bin holds one. --small: the small random
# targets and a case or task or two a step (a check that every step runs, not a measurement).
# --prepare: starts the build and the targets detached (setsid: they outlive the command that started
# them) and returns at once; a later run.sh lease waits for them. For a machine that takes the kit and
# the models in two uploads (README.md): the first command prepares, the second runs.
#
# Writes two files into --out (the kit's lease-out/ by default): lease.log (everything printed, with
# each step's seconds) and lease-results.tar.gz (bench/results/, the build's log among them).
set -uo pipefail
KIT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NODE="$KIT/node/bin/node"
budget=540
deadline=570
out="$KIT/lease-out"
small=0
prepare=
STATE="$KIT/.lease-state"
while [ $# -gt 0 ]; do
  case "$1" in
  --budget-s) budget="$2"; shift 2 ;;
  --deadline-s) deadline="$2"; shift 2 ;;
  --out) out="$2"; shift 2 ;;
  --small) small=1; shift ;;
  --restart) rm -f "$STATE" "$KIT/.prepared"; shift ;;
  --prepare) prepare=detach; shift ;;
  --prepare-now) prepare=now; shift ;;
  *) echo "run.sh lease: unknown argument $1 (--budget-s N, --deadline-s N, --out DIR, --small, --restart)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out="$(cd "$out" && pwd)"
LOG="$out/lease.log"

now() { date +%s; }

# The build (in the background) and the random targets; leaves "<build exit> <gpu>" in .prepared.
prepare() {
  local t0 build_pid= build_rc=none gpu
  t0=$(now)
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    gpu=cuda
    nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader | sed 's/^/[lease] GPU: /'
    # First, and in the background: the build is the longest thing a lease waits for.
    mkdir -p "$KIT/bench/results"
    ( bash "$KIT/build-cuda.sh" >"$KIT/bench/results/build-cuda.log" 2>&1 ) &
    build_pid=$!
    echo "[lease] build-cuda.sh started (log: bench/results/build-cuda.log)"
  else
    gpu=cpu
    echo "[lease] no GPU (nvidia-smi sees none): every step on the CPU, nothing built"
  fi

  # The random targets, written on the CPU while the build runs (one process each: the writer is
  # single-threaded). The Q8_0 copy of the 1.5B needs llama-quantize: its step makes it.
  local -a targets=(1.5b-qwen-coder 7b 7b-qwen qwen-vocab qwen-coder-small)
  [ "$small" = 1 ] && targets=(qwen-coder-small)
  local t=$(now) name
  local -a writers=()
  for name in "${targets[@]}"; do
    "$NODE" "$KIT/bench/targets.js" "$name" &
    writers+=($!)
  done
  local failed=0 pid
  for pid in "${writers[@]}"; do wait "$pid" || failed=1; done
  echo "[lease] targets written in $(($(now) - t)) s$([ $failed = 1 ] && echo ' (one failed: its steps will say)')"
  if [ -n "$build_pid" ]; then
    wait "$build_pid" && build_rc=0 || build_rc=$?
    tail -3 "$KIT/bench/results/build-cuda.log"
    echo "[lease] build-cuda.sh: exit $build_rc, $(($(now) - t0)) s after it started"
  fi
  echo "$build_rc $gpu" >"$KIT/.prepared"
}

lease() {
  local t0 build_rc gpu cores
  t0=$(now)
  cores=$(nproc)
  echo "[lease] $(tr -d '\n' <"$KIT/KIT.json" | tr -s ' ')"
  echo "[lease] budget ${budget} s for the steps after the build; ${cores} cores; out: $out"
  if [ -f "$KIT/.prepare.pid" ] && [ ! -f "$KIT/.prepared" ]; then
    local pid
    pid=$(cat "$KIT/.prepare.pid")
    echo "[lease] waiting for the preparation run.sh lease --prepare started (pid $pid)"
    while [ ! -f "$KIT/.prepared" ] && kill -0 "$pid" 2>/dev/null; do
      # A build that outlasts this call's deadline: hand back what there is, and let the next call wait on.
      if [ $(($(now) - t0)) -ge $((deadline - 60)) ]; then
        echo "[lease] still preparing $(($(now) - t0)) s into this call: the steps wait for the next run.sh lease (the same line)"
        tail -3 "$KIT/bench/results/build-cuda.log" 2>/dev/null || true
        tar -czf "$out/lease-results.tar.gz" -C "$KIT/bench" results
        return 0
      fi
      sleep 2
    done
    cat "$KIT/.prepare.log"
    echo "[lease] prepared $(($(now) - t0)) s after this call started"
  fi
  [ -f "$KIT/.prepared" ] || prepare
  read -r build_rc gpu <"$KIT/.prepared"
  local replay_q8=1.5b-qwen-coder-q8 replay_f16=1.5b-qwen-coder big_targets=7b,7b-qwen profile_targets=v3,qwen-vocab
  [ "$small" = 1 ] && { replay_q8=qwen-coder-small replay_f16=qwen-coder-small big_targets= profile_targets=v3; }
  local cuda=$gpu
  if [ "$gpu" = cuda ] && [ "$build_rc" = 3 ]; then
    echo "[lease] ggml-cuda is built but the built llama-server does not start: the GPU steps run on the GPU without llama-server's modes (see build-cuda.log)"
  elif [ "$gpu" = cuda ] && [ "$build_rc" != 0 ]; then
    cuda=cpu
    echo "[lease] the CUDA build failed: the GPU steps run on the CPU instead (see build-cuda.log)"
  fi

  # llama-server, in the environment the bench gives it, before any step needs it.
  t=$(now)
  timeout -k 5 90 bash "$KIT/run.sh" server-check --gpu "$cuda"
  echo "[lease] server check: exit $?, $(($(now) - t)) s"

  local n=1 e=6 r=24 tasks=20 t2=6 q= kv_rounds=15
  [ "$small" = 1 ] && { n=1 e=1 r=1 tasks=2 t2=1 q=--quick kv_rounds=2; }
  # name | weight | run.sh arguments. In order of value; weights are shares of the budget left.
  local -a steps=(
    "edits-gpu-q8|22|$q --gpu $cuda --regimes edits --edits-replay-target $replay_q8 --edits-cases $e --edits-replay-cases $r"
    "regime1-gpu|14|$q --gpu $cuda --regimes 1 --pairs v3 --tasks $tasks --auto-closed-tasks $((tasks / 4))"
    "trees-gpu|8|$q --gpu $cuda --regimes 1 --pairs v3 --tasks $((tasks / 2 > 0 ? tasks / 2 : 1)) --auto-closed-tasks 0 --modes plain,draft,hybrid --trees on"
    "kv-branches-gpu|6|kv-branches --gpu $cuda --targets v3,$replay_f16 --flash-attention off,on --rounds $kv_rounds --shapes off"
    "regime2-gpu|16|$q --gpu $cuda --regimes 2 --regime2-targets v3${big_targets:+,$big_targets} --tasks $t2"
    "edits-gpu-f16|12|$q --gpu $cuda --regimes edits --edits-replay-target $replay_f16 --edits-cases $n --edits-replay-cases $((r / 2 > 0 ? r / 2 : 1))"
    "profile-gpu|10|profile --gpu $cuda --targets $profile_targets --tasks $((t2 < 4 ? t2 : 4))"
    "edits-cpu|8|$q --gpu cpu --threads $cores --regimes edits --edits-replay-target $replay_q8 --edits-cases $n --edits-replay-cases $((r / 3 > 0 ? r / 3 : 1))"
    "regime1-cpu|4|$q --gpu cpu --threads $cores --regimes 1 --pairs v3 --tasks $((tasks / 2 > 0 ? tasks / 2 : 1)) --auto-closed-tasks 0"
  )
  # Where an earlier call of this lease stopped: the next step and the budget left.
  local first=0 left=$budget weights=0 step w i
  if [ -f "$STATE" ]; then
    read -r first left <"$STATE"
    echo "[lease] resuming at step $((first + 1)) of ${#steps[@]} with ${left} s of the budget left (--restart starts over)"
    [ "$first" -ge "${#steps[@]}" ] && echo "[lease] every step has run (--restart runs them again)"
  fi
  for ((i = first; i < ${#steps[@]}; i++)); do weights=$((weights + $(cut -d'|' -f2 <<<"${steps[$i]}"))); done
  local -a summary=()
  for ((i = first; i < ${#steps[@]}; i++)); do
    step=${steps[$i]}
    IFS='|' read -r name w args <<<"$step"
    local limit=$((left * w / weights))
    [ "$limit" -lt 20 ] && limit=20
    local call_left=$((deadline - ($(now) - t0) - 15))
    if [ "$call_left" -lt 20 ]; then
      echo "[lease] ${call_left} s left of this call's ${deadline} s: steps $((i + 1))-${#steps[@]} wait for the next run.sh lease"
      break
    fi
    [ "$limit" -gt "$call_left" ] && limit=$call_left
    echo
    echo "[lease] step $name: limit ${limit} s: run.sh $args"
    t=$(now)
    # timeout signals its whole process group: node and the llama-servers it started.
    # shellcheck disable=SC2086
    timeout -k 10 "$limit" bash "$KIT/run.sh" $args
    local rc=$? took=$(($(now) - t))
    local verdict="exit $rc"
    [ $rc = 124 ] || [ $rc = 137 ] && verdict="stopped at its limit"
    echo "[lease] step $name: ${took} s (limit ${limit} s), $verdict"
    summary+=("$name ${took}s/${limit}s $verdict")
    left=$((left - took))
    [ "$left" -lt 0 ] && left=0
    weights=$((weights - w))
    echo "$((i + 1)) $left" >"$STATE"
  done
  echo
  echo "[lease] steps: ${summary[*]}"
  tar -czf "$out/lease-results.tar.gz" -C "$KIT/bench" results
  echo "[lease] results: $out/lease-results.tar.gz ($(du -k "$out/lease-results.tar.gz" | cut -f1) KiB); lease $(($(now) - t0)) s in all"
}

case "$prepare" in
detach)
  rm -f "$KIT/.prepared"
  small_flag=()
  [ "$small" = 1 ] && small_flag=(--small)
  setsid bash "$KIT/lease.sh" --prepare-now "${small_flag[@]}" </dev/null >"$KIT/.prepare.log" 2>&1 &
  echo $! >"$KIT/.prepare.pid"
  echo "[lease] preparing in the background (pid $!, log $KIT/.prepare.log): the build and the targets; run.sh lease waits for them"
  ;;
now) prepare ;;
*)
  lease 2>&1 | tee "$LOG"
  exit "${PIPESTATUS[0]}"
  ;;
esac
