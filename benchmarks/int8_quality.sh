#!/usr/bin/env bash
# A quantized dtype (int8, or gguf: the GGUF file on llama.cpp) against bfloat16 on the standing
# dereference tasks (issue 42's quality check): the same model, both monitored, greedy, the first
# LIMIT dereference tasks (fixed order), then a paired bootstrap of every metric. Needs:
# groundcode bench build --recipe standing --out "$BENCH".
#   bash benchmarks/int8_quality.sh        (env: MODEL, LIMIT=120, DTYPE=int8|gguf, BENCH,
#                                           W=work dir, R=results dir)
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-$HOME/.cache/groundcode/bench/standing}
T=$BENCH/tasks.jsonl
MODEL=${MODEL:-smollm2-135m}
LIMIT=${LIMIT:-120}
DTYPE=${DTYPE:-int8}
W=${W:-$HOME/.cache/groundcode/bench/$DTYPE-deref-$MODEL}
R=${R:-benchmarks/results/${DTYPE}_dereference_$MODEL}
GC=${GC:-.venv/bin/groundcode}
mkdir -p "$W" "$R"
for dt in bfloat16 "$DTYPE"; do
  $GC bench run "$T" --kinds dereference --limit "$LIMIT" --config "monitored-$dt" --dtype "$dt" \
    --max-new-tokens 96 --max-prompt-tokens 1024 --model "$MODEL" --out "$W/samples.jsonl"
done
$GC bench score "$T" "$W/samples.jsonl" --results "$W/results.jsonl" --summary "$R/summary.json"
${PY:-.venv/bin/python} benchmarks/paired_diff.py "$W/results.jsonl" --a monitored-bfloat16 --b "monitored-$DTYPE" \
  --kind dereference --out "$R/paired_${DTYPE}_vs_bfloat16.json"
