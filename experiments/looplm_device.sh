#!/usr/bin/env bash
# The looplm comparison on one GPU machine, as ONE command (docs/results/looplm.md, issue 35):
# every arm x seeds 0-9 of looplm/permutation-hops-8x3 at 4x the task's RL budget (960 steps; the
# weights after 120, 240 and 480 steps are scored too) and GRPO's ladder at 8x (1920 steps,
# seeds 0-2), all on cuda:
#
#     bash experiments/looplm_device.sh [WORKERS] [LIMIT_S]
#
# Needs python3 with torch, numpy, scipy, tqdm, threadpoolctl, matplotlib (the device image) and
# the wheels of gymnasium and farama-notifications in results/wheels (pure Python; carried).
# Starts CUDA MPS when it can (many small processes then share the GPU without time slicing),
# runs a 2-step smoke of every arm (exit 1 if one fails), then the trials with WORKERS processes
# in all (default 16: 3 for the ladder), appending each TrialResult to $OUT/looplm-cuda*.jsonl.gz as
# it finishes, seed by seed; stops after LIMIT_S seconds (default 600) so what finished comes
# back. Partial files carried in as results/looplm-cuda*.jsonl.gz are continued. Load them here with
#     python experiments/looplm.py import results/looplm-cuda.jsonl.gz --commit <commit run>
set -u
WORKERS=${1:-16}
LIMIT=${2:-600}
DEVICE=${DEVICE:-cuda}  # DEVICE=cpu SEEDS=0 bash ... checks the script on a machine without a GPU
SEEDS=${SEEDS:-0-9}
OUT=${OUT:-results/device-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/looplm-device.log") 2>&1
[ -f results/looplm-cuda.jsonl.gz ] && cp results/looplm-cuda.jsonl.gz "$OUT/looplm-cuda.jsonl.gz"
PY=${PY:-python3}
if [ "${PIP_WHEELS:-1}" = 1 ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site results/wheels/*.whl || exit 1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export ICML26_TORCH_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.used --format=csv,noheader || true
MPS=0
if [ "$DEVICE" = cuda ] && command -v nvidia-cuda-mps-control >/dev/null; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d && MPS=1
fi
echo "MPS=$MPS"
t0=$(date +%s)
if ! $PY experiments/looplm.py --allow-dirty run --smoke --device "$DEVICE" --workers ${SMOKE_WORKERS:-9}; then
  if [ "$MPS" = 1 ]; then
    echo quit | nvidia-cuda-mps-control; MPS=0; echo "smoke failed under MPS; retrying without"
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    $PY experiments/looplm.py --allow-dirty run --smoke --device "$DEVICE" --workers ${SMOKE_WORKERS:-9} || exit 1
  else
    exit 1
  fi
fi
echo "smoke done in $(( $(date +%s) - t0 )) s (MPS=$MPS)"
[ -f results/looplm-cuda-ladder.jsonl.gz ] && cp results/looplm-cuda-ladder.jsonl.gz "$OUT/"
timeout --signal=INT "$LIMIT" $PY experiments/looplm.py --allow-dirty run --device "$DEVICE" \
  --arms GRPO --seeds 0-2 --budget-scale 8 --workers 3 --jsonl "$OUT/looplm-cuda-ladder.jsonl.gz" &
LADDER=$!
timeout --signal=INT "$LIMIT" $PY experiments/looplm.py --allow-dirty run --device "$DEVICE" \
  --seeds "$SEEDS" --budget-scale 4 --workers $(( WORKERS > 4 ? WORKERS - 3 : 1 )) --jsonl "$OUT/looplm-cuda.jsonl.gz"
wait "$LADDER"  # (a bare wait would also wait for the tee above)
echo "after $(( $(date +%s) - t0 )) s: $(zcat "$OUT"/looplm-cuda*.jsonl.gz 2>/dev/null | wc -l) trials in $OUT"
[ "$MPS" = 1 ] && echo quit | nvidia-cuda-mps-control
exit 0
