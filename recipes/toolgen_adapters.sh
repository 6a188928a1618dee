#!/usr/bin/env bash
# Rebuild the BASE and TOOLGEN LoRA adapters of smollm2-135m (docs/TOOLGEN.md) deterministically:
# the same pinned sdists (src/groundcode/training/toolgen_corpus.json), the same augmentation, the
# same seeded example choice (seed 42) and training order. On CPU the run stops on a time budget,
# so with a busy machine fewer steps may run: finetune.json beside each adapter records the steps,
# tokens, loss curve and load average. Outputs go to $WORK (default ~/.cache/groundcode/toolgen).
#
#   bash recipes/toolgen_adapters.sh
#   MODEL=qwen2.5-coder-0.5b BUDGET=3600 bash recipes/toolgen_adapters.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
WORK=${WORK:-$HOME/.cache/groundcode/toolgen}
MODEL=${MODEL:-smollm2-135m}
BUDGET=${BUDGET:-690}            # seconds of training per variant (the CPU run: <= 12 min wall)
TOKENS=${TOKENS:-8000}           # training tokens per variant (examples taken in seeded order)
mkdir -p "$WORK"
SOURCES=$($PY -c 'import json,importlib.resources as r; print(" ".join(json.loads(r.files("groundcode.training").joinpath("toolgen_corpus.json").read_text())["sources"]))')
# 1. augmentation (resumable: a rerun skips finished files)
$PY -m groundcode augment $SOURCES --out "$WORK/aug.jsonl" --workers "${WORKERS:-2}" --no-progress
# 2. both variants from the same base, the same examples, the same seed
for V in base toolgen; do
  $PY -m groundcode train finetune --data "$WORK/aug.jsonl" --variant $V --model "$MODEL" \
      --out "$WORK/$MODEL-$V" --max-train-tokens "$TOKENS" --max-len 256 --max-prompt 96 \
      --batch-size 2 --lr 1e-3 --eval-examples 8 --time-budget-s "$BUDGET" --save-every 10 \
      --exclude-recipe standing --seed 42 ${THREADS:+--threads $THREADS}
done
