#!/usr/bin/env bash
# The CPU run of the standing benchmark (its cpu subset, or SCOPE=functions: all function tasks):
# baseline vs monitored, greedy, one model.
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
R=${R:-benchmarks/results/standing_${SCOPE}_$TAG}
W=${W:-$HOME/.cache/groundcode/bench/standing-${SCOPE}-run-$TAG}
GC=${GC:-groundcode}
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
  timeout -s INT "$s" $GC bench run "$T" "${SEL[@]}" "${lf[@]}" --config "$cfg" "$@" --max-new-tokens 96 --max-prompt-tokens "$MAX_PROMPT" "${MODEL_FLAG[@]}" --out "$W/samples.jsonl" || true
}
tb=0; tm=0
for L in $STAGES; do
  a=$(t); gen baseline "$L" --no-monitor; b=$(t); gen monitored "$L" --monitor; c=$(t)
  tb=$(python3 -c "print($tb + $b - $a)"); tm=$(python3 -c "print($tm + $c - $b)")
done
t1=$(python3 -c "print($t0 + $tb)")
t2=$(python3 -c "print($t1 + $tm)")
$GC bench run "$T" "${SEL[@]}" --config reference --oracle --out "$W/samples.jsonl"
python3 - "$W/samples.jsonl" "$W/samples_paired.jsonl" <<'PY'
import json, sys
import os
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()] if os.path.exists(sys.argv[1]) else []
have = {}
for r in rows:
    have.setdefault(r["config"], set()).add(r["task_id"])
both = have.get("baseline", set()) & have.get("monitored", set())
keep = [r for r in rows if r["task_id"] in both]
with open(sys.argv[2], "w") as fh:
    fh.writelines(json.dumps(r) + "\n" for r in keep)
print(f"paired tasks: {len(both)} (baseline {len(have.get('baseline', ()))}, monitored {len(have.get('monitored', ()))})")
open(sys.argv[2] + ".count", "w").write(str(len(both)))
PY
PAIRED=$(cat "$W/samples_paired.jsonl.count")
t2b=$(t)
$GC bench score "$T" "$W/samples_paired.jsonl" --results "$W/results.jsonl" --summary "$R/summary.json"
t3=$(t)
$GC bench report "$R/summary.json" --results "$W/results.jsonl" --tasks "$T" --baseline baseline --no-examples --out "$R" \
  --title "groundcode standing benchmark ($SCOPE): baseline vs monitored ($TAG)" \
  --notes "$WHAT ($PAIRED tasks finished by both configurations), model $MODEL, commit $COMMIT, greedy, 96 new tokens, prompts capped at ${MAX_PROMPT} tokens (0: the window), 2 shared CPU cores. Commands: benchmarks/bench_standing_cpu.sh; docs/BENCHMARK.md."
t4=$(t)
python3 - "$R/timing.json" "$COMMIT" "$MODEL" "$LOAD0" "$PAIRED" "$t0" "$t1" "$t2" "$t3" "$t4" <<'PY'
import json, os, sys
out, commit, model, load0, paired = sys.argv[1:6]
t0, t1, t2, t3, t4 = map(float, sys.argv[6:])
row = {"commit": commit, "model": model, "paired_tasks": int(paired), "stages": os.environ.get("STAGES", "all"),
       "max_prompt_tokens": int(os.environ.get("MAX_PROMPT", "0")), "scope": os.environ.get("SCOPE", "cpu"), "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
       "load_avg_1m_at_start": float(load0), "run_baseline_s": round(t1 - t0, 1), "run_monitored_s": round(t2 - t1, 1),
       "score_s": round(t3 - t2, 1), "report_s": round(t4 - t3, 1), "total_s": round(t4 - t0, 1),
       "load_avg_1m_at_end": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}
json.dump(row, open(out, "w"), indent=2)
print("\n".join(f"{k:>20} {v}" for k, v in row.items()))
PY
