#!/usr/bin/env bash
# Reproduce the four shipped checkpoints from a fresh clone, with the project's own
# training module on the built-in long-mix corpus (Wikipedia leads and five long-document
# sources; `albert-lab corpora`). On 2 CPU cores 6,000 steps (about 44M tokens) took 58
# minutes per model in bf16 on an AMD EPYC (13,000 tokens/s); about twice that where
# devices.fast_bf16 picks fp32. A checkpoint already shipped from this recipe is skipped,
# so the four can be trained across sessions:
#   1. albert-sop   ALBERT all-shared, E=128 < H=256, L=6, objective SOP
#   2. albert-nsp   the same spec, objective NSP
#   3. albert-none  the same spec, no inter-sentence loss
#   4. bert-nsp     BERT-style baseline (not shared, E = H = 256), same depth and width, NSP
# All four share one tokenizer (trained once on the corpus, then cached). Afterwards the
# checkpoints are exported into checkpoints/ and evaluated (scripts/export_checkpoints.py).
#
# EXPERIMENTS=1 also trains albert-sop-random (SOP with each document's walk starting at
# a random sentence, so more training pairs are interior; evaluated beside the four, not
# shipped).
#
# Usage: [EXPERIMENTS=1] scripts/train_checkpoints.sh [STEPS]     (PYTHON=... to choose the interpreter)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
STEPS=${1:-6000}
COMMON=(--corpus long-mix --vocab-size 8000 --seq-len 128 --batch-size 64 --lr 3e-3 --warmup 300
        --steps "$STEPS" --seed 0 --eval-every 300 --eval-limit 600 --checkpoint-every 300 --gradflow-every 300
        --log-every 50 --foreground)

shipped() {  # is checkpoints/<name> already this recipe's output?
  "$PY" - "$1" "$STEPS" <<'PY'
import json, sys
card = json.load(open(f"checkpoints/{sys.argv[1]}/albert_lab.json"))["provenance"]
sys.exit(0 if card["corpus"] == "long-mix" and card["steps"] == int(sys.argv[2]) else 1)
PY
}

train() {  # name, then spec arguments
  local name=$1; shift
  if shipped "$name" 2>/dev/null; then
    echo "== $name: shipped from this recipe (checkpoints/$name)"; return
  fi
  if [ -f "runs/ship-$name/checkpoint/albert_lab.json" ] && grep -q '"status": "succeeded"' "runs/ship-$name/run.json"; then
    echo "== $name: already trained (runs/ship-$name)"; return
  fi
  if [ -d "runs/ship-$name" ]; then
    echo "== $name: resuming"; "$PY" -m albert_lab train --resume "runs/ship-$name" --foreground; return
  fi
  echo "== $name"
  "$PY" -m albert_lab train "$@" "${COMMON[@]}" --name "$name" --run-id "ship-$name"
}

train albert-sop  --preset lab-albert --objective sop
train albert-nsp  --preset lab-albert --objective nsp
train albert-none --preset lab-albert --objective none
train bert-nsp    --preset lab-bert   --objective nsp
if [ "${EXPERIMENTS:-0}" = 1 ]; then
  train albert-sop-random --preset lab-albert --objective sop --chunk-start random
fi
"$PY" scripts/export_checkpoints.py
