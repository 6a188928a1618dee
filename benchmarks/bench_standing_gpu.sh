#!/usr/bin/env bash
# Generation for the standing benchmark's four arms on one GPU machine: every (model, scope, arm)
# is its own `groundcode bench run` process (its own model copy and Jedi worker; the GPU is shared),
# at most MAXJ at once (default 8: 16 processes with whole-window prompts of qwen2.5-coder-0.5b ran
# an 80 GB H100 out of memory), restarted after a crash (bench run resumes its samples file; 12 tries
# at most each), function scopes first. Then each (model, scope) gets one merged samples file (the
# first sample of a task per arm: a restart may repeat a batch) for scoring on any machine:
#   RESUME=1 STOP_AT=1 SCOPE=functions ARMS="baseline monitored declarations declarations+monitored" \
#     MODEL=M W=$OUT/standing-functions-M R=benchmarks/results/standing_functions_M \
#     HW="one NVIDIA H100 ..." bash benchmarks/bench_standing_cpu.sh
# Env: MODELS (registry names; default "qwen2.5-coder-0.5b smollm2-135m"), SCOPES (default
# "functions dereference"), DEREF (dereference tasks per arm, default 300), OUT (default
# ~/.cache/groundcode/bench/gpu), BENCH (task dir), MAXJ, GC (the groundcode command).
# Weights load in bfloat16 on CUDA (the loader's default there). The H100 run of issue #18 is
# docs/BENCHMARK.md's "Four arms" section; it ran these commands from a copy of this loop.
set -uo pipefail
BENCH=${BENCH:-$HOME/.cache/groundcode/bench/standing}
T=$BENCH/tasks.jsonl
MODELS=${MODELS:-qwen2.5-coder-0.5b smollm2-135m}
SCOPES=${SCOPES:-functions dereference}
OUT=${OUT:-$HOME/.cache/groundcode/bench/gpu}
MAXJ=${MAXJ:-8}
GC=${GC:-groundcode}
ARMS="baseline monitored declarations declarations+monitored"
export TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
mkdir -p "$OUT/logs"
# shellcheck source=benchmarks/standing_arms.sh
source "$(dirname "$0")/standing_arms.sh"   # flags ARM
declare -A tries pids
while true; do
  busy=0; running=0
  for j in "${!pids[@]}"; do if kill -0 "${pids[$j]}" 2>/dev/null; then running=$((running+1)); fi; done
  for S in $SCOPES; do for M in $MODELS; do for A in $ARMS; do
    case $S in functions) SEL=(--kinds function); n=198;;
      dereference) SEL=(--kinds dereference --limit "${DEREF:-300}"); n=${DEREF:-300};; esac
    j=${M}_${S}_${A}; f=$OUT/$j.jsonl
    if [ -n "${pids[$j]:-}" ] && kill -0 "${pids[$j]}" 2>/dev/null; then busy=1; continue; fi
    have=$(python3 -c 'import json,sys; print(len({json.loads(l)["task_id"] for l in open(sys.argv[1])}))' "$f" 2>/dev/null || echo 0)
    if [ "$have" -ge "$n" ]; then continue; fi
    k=${tries[$j]:-0}; if [ "$k" -ge 12 ]; then continue; fi
    busy=1; if [ "$running" -ge "$MAXJ" ]; then continue; fi
    running=$((running+1)); tries[$j]=$((k+1))
    echo "$(date +%T) start $j (have $have, try $((k+1)))" | tee -a "$OUT/logs/supervisor.log"
    # shellcheck disable=SC2046
    $GC bench run "$T" "${SEL[@]}" --config "$A" $(flags "$A") --max-new-tokens 96 --max-prompt-tokens 0 \
      --model "$M" --out "$f" >> "$OUT/logs/$j.log" 2>&1 < /dev/null &
    pids[$j]=$!
  done; done; done
  [ $busy = 0 ] && break
  sleep 10
done
for S in $SCOPES; do for M in $MODELS; do
  python3 - "$OUT" "$M" "$S" $ARMS <<'PY'
import json, os, sys
out, m, s, arms = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
w = os.path.join(out, f"standing-{s}-{m}"); os.makedirs(w, exist_ok=True)
n = 0
with open(os.path.join(w, "samples.jsonl"), "w") as fh:
    for a in arms:
        seen = set()
        p = os.path.join(out, f"{m}_{s}_{a}.jsonl")
        for line in (open(p) if os.path.exists(p) else ()):
            r = json.loads(line)
            if r["task_id"] not in seen:
                seen.add(r["task_id"]); fh.write(json.dumps(r) + "\n"); n += 1
print(f"{w}/samples.jsonl: {n} rows")
PY
done; done
