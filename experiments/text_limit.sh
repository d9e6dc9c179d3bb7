#!/usr/bin/env bash
# Steps or text, the second half: does twice the training text move held-out sentence order?
#
# experiments/README.md ("Steps or text?"): continued bert-sop-minilm for 4,674 steps of 256 pairs
# on long-mix (--pair-weight 10; runs/gpu-2026-11-26/teacher-pw10, an H200, 6.5 minutes):
# held-out interior SOP went 0.612 -> 0.651 while training pairs went 0.72 -> 0.95, i.e. it
# memorised its 5.7M training tokens. This makes the same run, the same seed and steps, on
# long-mix-plus (long-mix and four software manuals: 11.5M training tokens), scored during
# training on long-mix's held-out documents (--eval-corpus long-mix) as the first one was,
# then measures both on training against held-out documents (experiments/order_limit.py).
#
#   experiments/text_limit.sh                # a GPU: about 7 minutes on an H200, 10 on an H100
#   STEPS=20 experiments/text_limit.sh       # a smoke test of the pipeline (CPU: about 15 minutes)
#   ALBERTS=1 experiments/text_limit.sh      # then the two ALBERTs' next stage from that teacher, below
#   MINUTES=6.5 ...                      # a clock budget for the teacher as well (a slower GPU ends early)
#
# With ALBERTS=1, albert-sop-minilm and albert-nsp-minilm are each given one more stage from the
# new teacher, side by side and with equal steps (ALBERT_STEPS, default 3,503: the SOP model's
# third stage in experiments/README.md), on long-mix-plus, scored on long-mix: the SOP one distils the
# teacher's pair head too (--distil-pair), the NSP one its hidden states and MLM only, as in their
# second stages. Both are then evaluated as the shipped models are (`albert-lab evaluate --json
# --by-source`; EVAL_LIMIT pairs per task for a smoke test) into $RUNS/evaluate.json. On an
# H200 the two stages take about 3 minutes together.
#
# BASE names the long-mix run to compare with (default runs/gpu-2026-11-26/teacher-pw10, when it
# is there; its weights are not committed: its curve is in experiments/order-limit.json). Writes
# experiments/text-limit.json and experiments/text-limit.png; the run folder is $RUNS/teacher-plus, RUNS by
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
    --eval-corpus long-mix --batch-size 256 --lr 2e-4 --pair-weight 10 --steps "$STEPS" ${MINUTES:+--minutes "$MINUTES"} --eval-every 200 \
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
"$PY" experiments/order_limit.py --out text-limit --checkpoints "${checkpoints[@]}" --curves "${curves[@]}" --labels "${labels[@]}"

[ "${ALBERTS:-0}" = 1 ] || exit 0
teacher="$RUNS/teacher-plus/checkpoint"
stage() {  # NAME OBJECTIVE EXTRA...: one ALBERT's stage from the new teacher, in its own runs folder
  local name=$1 objective=$2
  shift 2
  [ -f "$RUNS/$name/$name/checkpoint/model.safetensors" ] && return 0
  "$PY" -m albert_lab train --init-from "checkpoints/$name" --distil-from "$teacher" --pair-weight 4 "$@" \
    --objective "$objective" --corpus long-mix-plus --eval-corpus long-mix --batch-size 64 --lr 5e-4 \
    --steps "${ALBERT_STEPS:-3503}" --eval-every 500 --checkpoint-every 500 --gradflow-every 100000 --optimizer adamw \
    --dropout 0 --seq-len 128 --weight-decay 0.01 --seed 1 --warmup 100 --eval-limit 600 --log-every 100 --foreground \
    --name "$name-plus" --runs-dir "$RUNS/$name" --run-id "$name" > "$RUNS/$name.log" 2>&1
}
mkdir -p "$RUNS"
stage albert-sop-minilm sop --distil-pair &
sop=$!
stage albert-nsp-minilm nsp &
nsp=$!
wait "$sop" || { tail -5 "$RUNS/albert-sop-minilm.log"; exit 1; }
wait "$nsp" || { tail -5 "$RUNS/albert-nsp-minilm.log"; exit 1; }
"$PY" -m albert_lab evaluate --json --by-source ${EVAL_LIMIT:+--limit "$EVAL_LIMIT"} --checkpoint "$teacher" \
  --checkpoint "$RUNS/albert-sop-minilm/albert-sop-minilm/checkpoint" \
  --checkpoint "$RUNS/albert-nsp-minilm/albert-nsp-minilm/checkpoint" > "$RUNS/evaluate.json"
echo "wrote $RUNS/evaluate.json"
