#!/usr/bin/env bash
# DS-1000 on the shared CPU with the registry's default model (smollm2-135m): plain prompts vs the
# K best snippets of the paper's ensemble retriever, on a seeded subset of N problems per
# library, greedy (pass@1); the official test programs run in the bubblewrap sandbox. The two
# configurations run side by side (one process each, one thread each). Samples and results stay
# outside the repository ($W/plain, $W/ensemble: they quote DS-1000); the summaries and timings
# go to benchmarks/results/ds1000_cpu.json.
# Needs: bash recipes/ds1000_env.sh; groundcode index snippets --python ~/.cache/groundcode/ds1000-env/bin/python --ds1000 "$DATA"
# Run: bash benchmarks/ds1000_cpu.sh   (env: DATA, N=2 per library, SEED=0, W, MODEL, K=2, MAXN=128,
# RESULT: the JSON to write, default benchmarks/results/ds1000_cpu.json)
set -euo pipefail
DATA=${DATA:-../shared/data/ds1000.jsonl.gz}
N=${N:-2}; SEED=${SEED:-0}; K=${K:-2}; MAXN=${MAXN:-128}
W=${W:-$HOME/.cache/groundcode/bench/ds1000-cpu${MODEL:+-$MODEL}}
RESULT=${RESULT:-benchmarks/results/ds1000_cpu.json}
GC=${GC:-groundcode}
MODEL_FLAG=()
if [ -n "${MODEL:-}" ]; then MODEL_FLAG=(--model "$MODEL"); fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
common=(--per-library "$N" --seed "$SEED" --max-new-tokens "$MAXN" --workers 2 "${MODEL_FLAG[@]}")
run() {   # name, out dir, extra flags...
  local name=$1 out=$2; shift 2
  local t0; t0=$(date +%s)
  $GC bench ds1000 "$DATA" --config "$name" --out "$out" "${common[@]}" "$@"
  echo $(( $(date +%s) - t0 )) > "$out/wall_s"
}
mkdir -p "$W/plain" "$W/ensemble"
run plain "$W/plain" & p1=$!
run "ensemble-k$K" "$W/ensemble" --retriever ensemble -k "$K" & p2=$!
wait $p1 $p2
python3 - "$W" "$RESULT" "$N" "$SEED" "$K" "$MAXN" <<'PY'
import json, os, sys
w, dst, n, seed, k, maxn = sys.argv[1:]
out = {"command": "bash benchmarks/ds1000_cpu.sh", "model": os.environ.get("MODEL") or "smollm2-135m (the registry default)", "per_library": int(n), "seed": int(seed), "k": int(k),
       "max_new_tokens": int(maxn), "decoding": "greedy (pass@1)", "loadavg_at_end": os.getloadavg(),
       "wall_s": {}, "summaries": {}}
for sub, name in (("plain", "plain"), ("ensemble", f"ensemble-k{k}")):
    out["summaries"][name] = json.load(open(f"{w}/{sub}/summary.json"))[name]
    out["wall_s"][name] = int(open(f"{w}/{sub}/wall_s").read())
json.dump(out, open(dst, "w"), indent=2)
print(f"wrote {dst}")
PY
