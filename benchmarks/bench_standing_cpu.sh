#!/usr/bin/env bash
# The CPU run of the standing benchmark (its cpu subset, or SCOPE=functions: all function tasks):
# greedy, one model, the arms in ARMS (default "baseline monitored"; also "declarations" and
# "declarations+monitored": the IDE's declarations in the prompt, without/with the monitor).
# DTYPE=bfloat16 loads the weights in bfloat16 (what `groundcode serve` uses on CPUs with AVX512-BF16;
# the results directory then ends in -bfloat16). Paired bootstrap intervals of every arm against
# the first, of declarations+monitored against monitored and of monitored+vocabulary (untyped
# receivers held to the project's names) against monitored go to paired_<b>_vs_<a>.json.
# Writes summary.json, report.md/.html and timing.json to benchmarks/results/standing_<scope>_<model>/ (a new
# directory per model: it refuses to overwrite a results directory unless FORCE=1) and the
# samples/results JSONL to $W outside the repository (the `reference` oracle rows hold the packages'
# own code, which stays out of the repository). Needs: groundcode bench build --recipe standing --out "$BENCH"
# Run: bash benchmarks/bench_standing_cpu.sh   (env: BENCH=task dir, MODEL=registry name/tiny/path,
# default: smollm2-135m, the registry default; R=results dir, W=work dir)
set -euo pipefail
BENCH=${BENCH:-$HOME/.cache/groundcode/bench/standing}
T=$BENCH/tasks.jsonl
MODEL=${MODEL:-smollm2-135m}
TAG=$(basename "$MODEL")
# SCOPE=cpu: the recipe's cpu subset (16 function + 16 dereference tasks); SCOPE=functions: the
# function tasks (198), SCOPE=dereference: the dereference tasks (1295), with STAGES="16 32 ..."
# (--limit per stage; "all" = every task). STAGES="16" with SCOPE=functions and with
# SCOPE=dereference are exactly the cpu subset's tasks (same fixed sha256 order).
SCOPE=${SCOPE:-cpu}
case "$SCOPE" in
  cpu) SEL=(--subset standing:cpu); WHAT="16 function + 16 dereference tasks (recipe standing, subset cpu)";;
  functions) SEL=(--kinds function); WHAT="function tasks of the standing recipe";;
  dereference) SEL=(--kinds dereference); WHAT="dereference tasks of the standing recipe";;
  *) echo "error: SCOPE must be cpu, functions or dereference" >&2; exit 2;;
esac
ARMS=${ARMS:-baseline monitored}
DTYPE=${DTYPE:-}
DTYPE_FLAG=(); if [ -n "$DTYPE" ]; then DTYPE_FLAG=(--dtype "$DTYPE"); fi
R=${R:-benchmarks/results/standing_${SCOPE}_$TAG${DTYPE:+-$DTYPE}}
W=${W:-$HOME/.cache/groundcode/bench/standing-${SCOPE}-run-$TAG${DTYPE:+-$DTYPE}}
GC=${GC:-groundcode}
# HW: where the samples were generated (for the report and timing.json); set it when the samples
# came from elsewhere (RESUME=1 STOP_AT=1 scores a samples file that is already complete)
export HW=${HW:-2 shared CPU cores}
MODEL_FLAG=(--model "$MODEL")
if [ -z "${FORCE:-}" ] && [ -e "$R/summary.json" ]; then
  echo "error: $R already holds results; set R=a new directory (or FORCE=1 to replace them)" >&2; exit 2
fi
mkdir -p "$R" "$W"
# RESUME=1 continues an interrupted run (bench run skips tasks already in the samples file)
if [ -z "${RESUME:-}" ]; then rm -f "$W/samples.jsonl"; fi
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
LOAD0=$(python3 -c 'import os; print(round(os.getloadavg()[0], 2))')
t() { date +%s.%N; }
t0=$(t)
# Generation in stages of growing --limit (nested subsets: each stage resumes the previous one),
# baseline then monitored per stage, so an interrupted run still has paired samples. STOP_AT
# (epoch seconds) stops generation there (SIGINT; the samples file is resumable) and goes on to
# scoring, which keeps only tasks that both configurations finished.
STAGES=${STAGES:-all}
MAX_PROMPT=${MAX_PROMPT:-0}   # prompt cap in tokens (0: the model's window minus the new tokens)
STOP_AT=${STOP_AT:-}
left() { if [ -n "$STOP_AT" ]; then echo $(( STOP_AT - $(date +%s) )); else echo 999999; fi; }
gen() {  # gen CONFIG LIMIT FLAGS...
  local cfg=$1 lim=$2; shift 2
  local lf=(); if [ "$lim" != all ]; then lf=(--limit "$lim"); fi
  local s; s=$(left)
  if [ "$s" -le 0 ]; then return 0; fi
  timeout -s INT "$s" $GC bench run "$T" "${SEL[@]}" "${lf[@]}" --config "$cfg" "$@" --max-new-tokens 96 --max-prompt-tokens "$MAX_PROMPT" "${MODEL_FLAG[@]}" "${DTYPE_FLAG[@]}" --out "$W/samples.jsonl" || true
}
# shellcheck source=benchmarks/standing_arms.sh
source "$(dirname "$0")/standing_arms.sh"   # flags ARM
for A in $ARMS; do flags "$A" > /dev/null; done
declare -A RUN_S
for A in $ARMS; do RUN_S[$A]=0; done
for L in $STAGES; do
  for A in $ARMS; do
    # shellcheck disable=SC2046
    a=$(t); gen "$A" "$L" $(flags "$A"); b=$(t)
    RUN_S[$A]=$(python3 -c "print(${RUN_S[$A]} + $b - $a)")
  done
done
RUNS_JSON=$(for A in $ARMS; do echo "$A=${RUN_S[$A]}"; done | python3 -c 'import sys, json; print(json.dumps({k: round(float(v), 1) for k, v in (l.strip().split("=") for l in sys.stdin)}))')
t2=$(t)
$GC bench run "$T" "${SEL[@]}" --config reference --oracle --out "$W/samples.jsonl"
python3 - "$W/samples.jsonl" "$W/samples_paired.jsonl" $ARMS <<'PY'
import json, sys
import os
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()] if os.path.exists(sys.argv[1]) else []
arms = sys.argv[3:]
have = {}
for r in rows:
    have.setdefault(r["config"], set()).add(r["task_id"])
both = set.intersection(*(have.get(a, set()) for a in arms))
keep = [r for r in rows if r["task_id"] in both and r["config"] in set(arms) | {"reference"}]
with open(sys.argv[2], "w") as fh:
    fh.writelines(json.dumps(r) + "\n" for r in keep)
print(f"paired tasks: {len(both)} (" + ", ".join(f"{a} {len(have.get(a, ()))}" for a in arms) + ")")
open(sys.argv[2] + ".count", "w").write(str(len(both)))
PY
PAIRED=$(cat "$W/samples_paired.jsonl.count")
t2b=$(t)
$GC bench score "$T" "$W/samples_paired.jsonl" --results "$W/results.jsonl" --summary "$R/summary.json" --whole-statements
t3=$(t)
FIRST=${ARMS%% *}
$GC bench report "$R/summary.json" --results "$W/results.jsonl" --tasks "$T" --baseline "$FIRST" --no-examples --out "$R" \
  --title "groundcode standing benchmark ($SCOPE): ${ARMS// / vs } ($TAG${DTYPE:+, $DTYPE})" \
  --notes "$WHAT ($PAIRED tasks finished by every configuration), model $MODEL${DTYPE:+ ($DTYPE weights)}, commit $COMMIT, greedy, 96 new tokens, prompts capped at ${MAX_PROMPT} tokens (0: the window), ${HW}. Commands: benchmarks/bench_standing_cpu.sh; docs/BENCHMARK.md."
PAIRS=""
for A in $ARMS; do if [ "$A" != "$FIRST" ]; then PAIRS="$PAIRS $FIRST:$A"; fi; done
case " $ARMS " in *" monitored "*) case " $ARMS " in *" declarations+monitored "*) PAIRS="$PAIRS monitored:declarations+monitored";; esac;; esac
case " $ARMS " in *" monitored "*) case " $ARMS " in *" monitored+vocabulary "*) PAIRS="$PAIRS monitored:monitored+vocabulary";; esac;; esac
KINDS=$(python3 -c '
import json, sys
try:
    print(" ".join(json.load(open(sys.argv[1]))[sys.argv[2]]["kinds"]))
except (OSError, KeyError, ValueError):
    pass    # nothing scored (no paired tasks): no intervals
' "$R/summary.json" "$FIRST")
for P in $PAIRS; do
  for K in $KINDS; do
    python3 benchmarks/paired_diff.py "$W/results.jsonl" --a "${P%%:*}" --b "${P#*:}" --kind "$K" \
      --out "$R/paired_${P#*:}_vs_${P%%:*}_$K.json" || true
  done
done
t4=$(t)
python3 - "$R/timing.json" "$COMMIT" "$MODEL" "$LOAD0" "$PAIRED" "$t0" "$t2" "$t3" "$t4" "$RUNS_JSON" <<'PY'
import json, os, sys
out, commit, model, load0, paired = sys.argv[1:6]
t0, t2, t3, t4 = map(float, sys.argv[6:10])
row = {"commit": commit, "model": model, "dtype": os.environ.get("DTYPE") or "float32", "paired_tasks": int(paired), "stages": os.environ.get("STAGES", "all"),
       "max_prompt_tokens": int(os.environ.get("MAX_PROMPT", "0")), "scope": os.environ.get("SCOPE", "cpu"), "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
       "hardware": os.environ.get("HW", "2 shared CPU cores"), "load_avg_1m_at_start": float(load0), "run_s": json.loads(sys.argv[10]),
       "score_s": round(t3 - t2, 1), "report_s": round(t4 - t3, 1), "total_s": round(t4 - t0, 1),
       "load_avg_1m_at_end": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}
json.dump(row, open(out, "w"), indent=2)
print("\n".join(f"{k:>20} {v}" for k, v in row.items()))
PY
