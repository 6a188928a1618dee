#!/usr/bin/env bash
# The CPU run of the API-invocation benchmark (issue #9): base, DAG, DAG++, DAG++ + SDK monitors,
# SDK monitors alone, on the recipe's `cpu` subset with the registry default model (smollm2-135m).
# Writes summary.json, table.md and timing.json to benchmarks/results/bench_api_cpu/; samples and
# per-sample results (they quote botocore's documentation) stay in $W outside the repository.
# Run: bash benchmarks/bench_api_cpu.sh   (env: W=work dir, MODEL=name/path, SUBSET=api:cpu; SUBSET=all:
# every task of the recipe, 120; R=results dir)
set -euo pipefail
W=${W:-$HOME/.cache/groundcode/bench/api-cpu-run}
R=${R:-benchmarks/results/bench_api_cpu}
GC=${GC:-groundcode}
SUBSET=${SUBSET:-api:cpu}
SEL=(--subset "$SUBSET"); if [ "$SUBSET" = all ]; then SEL=(); fi
MODEL_FLAG=()
if [ -n "${MODEL:-}" ]; then MODEL_FLAG=(--model "$MODEL"); fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
mkdir -p "$R" "$W"
t() { date +%s.%N; }
t0=$(t)
# all of botocore (kept when present: the run resumes; index speed: benchmarks/api_index.py)
[ -f "$W/index/api.sqlite" ] || $GC index api --out "$W/index"
t1=$(t)
[ -f "$W/bench/tasks.jsonl" ] || $GC bench build --kind api --recipe api --out "$W/bench"   # checks tasks_sha256
t2=$(t)
$GC bench api-run "$W/bench/tasks.jsonl" "${SEL[@]}" --index "$W/index" --out "$W/samples.jsonl" \
  --configs base,dag,dagpp,dagpp+sdk,sdk --precision 0.5 -k 1 --threshold 0.8 --design desc+spec \
  --max-new-tokens 48 "${MODEL_FLAG[@]}"
t3=$(t)
$GC bench api-score "$W/bench/tasks.jsonl" "$W/samples.jsonl" "${SEL[@]}" --results "$W/results.jsonl" \
  --summary "$R/summary.json" | tee "$R/table.md"
t4=$(t)
python3 - "$R/timing.json" "$t0" "$t1" "$t2" "$t3" "$t4" <<'PY'
import json, os, sys
out, t0, t1, t2, t3, t4 = sys.argv[1], *map(float, sys.argv[2:])
row = {"index_s": round(t1 - t0, 1), "build_s": round(t2 - t1, 1), "run_s": round(t3 - t2, 1),
       "score_s": round(t4 - t3, 1), "total_s": round(t4 - t0, 1),
       "load_avg_at_end": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()}
json.dump(row, open(out, "w"), indent=2)
print("\n".join(f"{k:>16} {v}" for k, v in row.items()))
PY
