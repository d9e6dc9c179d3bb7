#!/usr/bin/env bash
# Steps or text, the second half: does twice the training text move held-out sentence order?
#
# docs/results.md ("Steps or text?") continued bert-sop-minilm for 4,674 steps of 256 pairs
# on long-mix (--pair-weight 10; runs/gpu-2026-11-26/teacher-pw10, an H200, 6.5 minutes):
# held-out interior SOP went 0.612 -> 0.651 while training pairs went 0.72 -> 0.95, i.e. it
# memorised its 5.7M training tokens. This makes the same run, the same seed and steps, on
# long-mix-plus (long-mix and four software manuals: 11.5M training tokens), scored during
# training on long-mix's held-out documents (--eval-corpus long-mix) as the first one was,
# then measures both on training against held-out documents (scripts/order_limit.py).
#
#   scripts/text_limit.sh                # a GPU: about 7 minutes on an H200, 10 on an H100
#   STEPS=20 scripts/text_limit.sh       # a smoke test of the pipeline (CPU: about 15 minutes)
#
# BASE names the long-mix run to compare with (default runs/gpu-2026-11-26/teacher-pw10, when it
# is there; its weights are not committed: its curve is in docs/order-limit.json). Writes
# docs/text-limit.json and docs/text-limit.png; the run folder is $RUNS/teacher-plus, RUNS by
# default runs/text-limit-STEPS (a smoke test's short run is never taken for the full one).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
STEPS=${STEPS:-4674}
RUNS=${RUNS:-runs/text-limit-$STEPS}
BASE=${BASE:-runs/gpu-2026-11-26/teacher-pw10}

"$PY" -m albert_lab corpora --install long-mix-plus >/dev/null
if [ ! -f "$RUNS/teacher-plus/checkpoint/model.safetensors" ]; then
  "$PY" -m albert_lab train --init-from checkpoints/bert-sop-minilm --objective sop --corpus long-mix-plus \
    --eval-corpus long-mix --batch-size 256 --lr 2e-4 --pair-weight 10 --steps "$STEPS" --eval-every 200 \
    --checkpoint-every 500 --gradflow-every 100000 --name bert-sop-minilm-plus --optimizer adamw --dropout 0 \
    --seq-len 128 --weight-decay 0.01 --seed 1 --warmup 100 --eval-limit 600 --log-every 50 --foreground \
    --runs-dir "$RUNS" --run-id teacher-plus
fi
checkpoints=(checkpoints/bert-sop-minilm)
curves=()
labels=()
if [ -f "$BASE/checkpoint/model.safetensors" ]; then
  checkpoints+=("$BASE")
  curves+=("$BASE")
  labels+=("long-mix (5.7M training tokens)")
fi
checkpoints+=("$RUNS/teacher-plus")
curves+=("$RUNS/teacher-plus")
labels+=("long-mix-plus (11.5M training tokens)")
"$PY" scripts/order_limit.py --out text-limit --checkpoints "${checkpoints[@]}" --curves "${curves[@]}" --labels "${labels[@]}"
