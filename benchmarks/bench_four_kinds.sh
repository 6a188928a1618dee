#!/usr/bin/env bash
# The four-kind benchmark (issue 40), Python: cursor tasks where a name is read (name), right
# after a call's `(` (call), inside an import line (import), built from a recipe's packages, run
# greedy with two arms (default: the member monitor alone vs with the names monitor), scored by
# pylint — the hallucination rate of each kind judged by pylint, never by the monitor that was
# asked: undefined_name (undefined-variable), import_error (import-error, no-name-in-module),
# no_member — with paired 95% intervals per kind (benchmarks/paired_diff.py), and the rates net
# of what the reference itself has (benchmarks/hallucinations.py).
#
#   bash benchmarks/bench_four_kinds.sh      (env: RECIPE=standing|heldout, KINDS="name import",
#        LIMIT=60 per kind, ARMS="monitored monitored+names", MODEL=smollm2-135m, R=results dir,
#        W=work dir outside the repository, DTYPE=gguf|int8|... (default: the loader's),
#        OMP_NUM_THREADS to share the cores, ENV=0 to leave the repositories without their
#        dependency environments, BATCH=1 for completions that do not depend on the task mix:
#        each task alone in the engine, llama.cpp's cache emptied between tasks)
# Builds the tasks once into ~/.cache/groundcode/bench/$RECIPE-four (groundcode bench build
# --recipe $RECIPE --kinds name,call,import; the call kind's keyword cursors, where a parameter's
# name is written: KINDS=keyword BUILD_KINDS=keyword BENCH=~/.cache/groundcode/bench/$RECIPE-kw). Writes $R/summary.json, $R/paired_<b>_vs_<a>_<kind>.json
# and the samples/results JSONL to $W (they quote package code: outside the repository).
set -euo pipefail
RECIPE=${RECIPE:-standing}
KINDS=${KINDS:-name import}
LIMIT=${LIMIT:-60}
ARMS=${ARMS:-monitored monitored+names}
MODEL=${MODEL:-smollm2-135m}
TAG=$(basename "$MODEL")
GC=${GC:-groundcode}
BENCH=${BENCH:-$HOME/.cache/groundcode/bench/$RECIPE-four}
R=${R:-benchmarks/results/four_kinds_${RECIPE}_$TAG}
W=${W:-$HOME/.cache/groundcode/bench/four-kinds-run-$RECIPE-$TAG}
mkdir -p "$R" "$W"
if [ ! -s "$BENCH/tasks.jsonl" ]; then
  $GC bench build --recipe "$RECIPE" --kinds "${BUILD_KINDS:-name,call,import}" --out "$BENCH"
fi
# the repositories' pinned third-party wheels in their .venv, where the recipe ships them
# (recipes/$RECIPE.env.json; evaluation/bench_env.py): the analyzer and the judge see them
if [ "${ENV:-1}" = 1 ] && [ -f "$(dirname "$0")/../src/groundcode/evaluation/recipes/$RECIPE.env.json" ]; then
  $GC bench env "$BENCH"
fi
# shellcheck source=benchmarks/standing_arms.sh
source "$(dirname "$0")/standing_arms.sh"
KLIST=$(echo "$KINDS" | tr ' ' ',')
for A in $ARMS; do
  # shellcheck disable=SC2046
  $GC bench run "$BENCH/tasks.jsonl" --kinds "$KLIST" --limit "$LIMIT" --config "$A" $(flags "$A") \
    --max-new-tokens 96 --max-prompt-tokens 1024 --model "$MODEL" ${DTYPE:+--dtype "$DTYPE"} ${BATCH:+--batch "$BATCH"} --out "$W/samples.jsonl"
done
$GC bench run "$BENCH/tasks.jsonl" --kinds "$KLIST" --limit "$LIMIT" --config reference --oracle --out "$W/samples.jsonl"
$GC bench score "$BENCH/tasks.jsonl" "$W/samples.jsonl" --results "$W/results.jsonl" --summary "$R/summary.json" --whole-statements
set -- $ARMS
for K in $KINDS; do
  python3 benchmarks/paired_diff.py "$W/results.jsonl" --a "$1" --b "$2" --kind "$K" --out "$R/paired_${2}_vs_${1}_$K.json" || true
done
python3 benchmarks/hallucinations.py "$W/results.jsonl" --a "$1" --b "$2" --out "$R/hallucinations_${2}_vs_${1}.json"
python3 - "$R/timing.json" "$RECIPE" "$MODEL" "$LIMIT" "$KINDS" <<'PY'
import json, os, subprocess, sys
out, recipe, model, limit, kinds = sys.argv[1:6]
json.dump({"commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
           "recipe": recipe, "model": model, "limit_per_kind": int(limit), "kinds": kinds.split(),
           "load_avg_1m_at_end": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
           "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "dtype": os.environ.get("DTYPE"),
           "batch": os.environ.get("BATCH")},
          open(out, "w"), indent=2)
PY
