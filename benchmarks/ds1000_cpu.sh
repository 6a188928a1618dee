#!/usr/bin/env bash
# DS-1000 on the shared CPU with the registry's default model (smollm2-135m): plain prompts vs the
# k=2 best snippets of the paper's ensemble retriever, on a seeded subset of N problems per
# library, greedy (pass@1); the official test programs run in the bubblewrap sandbox. Samples and
# results stay outside the repository ($W: they quote DS-1000); the summaries and timings go to
# benchmarks/results/ds1000_cpu.json.
# Needs: bash recipes/ds1000_env.sh; groundcode index snippets --python ~/.cache/groundcode/ds1000-env/bin/python --ds1000 "$DATA"
# Run: bash benchmarks/ds1000_cpu.sh   (env: DATA, N=5 per library, SEED=0, W, MODEL, K=2, MAXN=160)
set -euo pipefail
DATA=${DATA:-../shared/data/ds1000.jsonl.gz}
N=${N:-5}; SEED=${SEED:-0}; K=${K:-2}; MAXN=${MAXN:-160}
W=${W:-$HOME/.cache/groundcode/bench/ds1000-cpu}
GC=${GC:-groundcode}
MODEL_FLAG=()
if [ -n "${MODEL:-}" ]; then MODEL_FLAG=(--model "$MODEL"); fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
mkdir -p "$W"
common=(--per-library "$N" --seed "$SEED" --max-new-tokens "$MAXN" --workers 2 --out "$W" "${MODEL_FLAG[@]}")
t() { date +%s.%N; }
t0=$(t)
$GC bench ds1000 "$DATA" --config plain "${common[@]}"
t1=$(t)
$GC bench ds1000 "$DATA" --config "ensemble-k$K" --retriever ensemble -k "$K" "${common[@]}"
t2=$(t)
python3 - "$W/summary.json" benchmarks/results/ds1000_cpu.json "$t0" "$t1" "$t2" "$N" "$SEED" "$K" "$MAXN" <<'PY'
import json, os, sys
src, dst, t0, t1, t2, n, seed, k, maxn = sys.argv[1:]
s = json.load(open(src))
out = {"command": "bash benchmarks/ds1000_cpu.sh", "per_library": int(n), "seed": int(seed), "k": int(k),
       "max_new_tokens": int(maxn), "decoding": "greedy (pass@1)",
       "wall_s": {"plain": round(float(t1) - float(t0), 1), f"ensemble-k{k}": round(float(t2) - float(t1), 1)},
       "loadavg_at_end": os.getloadavg(), "summaries": {c: s[c] for c in ("plain", f"ensemble-k{k}") if c in s}}
json.dump(out, open(dst, "w"), indent=2)
print(f"wrote {dst}")
PY
