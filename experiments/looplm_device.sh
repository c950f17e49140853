#!/usr/bin/env bash
# The looplm comparison (every arm x seeds 0-9 of looplm/permutation-hops-8x3, the task's default
# budget) on one GPU machine, as ONE command (docs/results/looplm.md, issue 35):
#
#     bash experiments/looplm_device.sh [WORKERS] [LIMIT_S]
#
# Needs python3 with torch, numpy, scipy, tqdm, threadpoolctl, matplotlib (the device image) and
# the wheels of gymnasium and farama-notifications in results/wheels (pure Python; carried).
# Starts CUDA MPS when it can (many small processes then share the GPU without time slicing),
# runs a 2-step smoke of every arm (exit 1 if one fails), then the trials with WORKERS processes
# (default 16), appending each TrialResult to $OUT/looplm-cuda.jsonl as it finishes; stops
# launching after LIMIT_S seconds (default 480) so what finished comes back. A previous partial
# file carried in as results/looplm-cuda.jsonl is continued. Load it here with
#     python experiments/looplm.py import results/looplm-cuda.jsonl --commit <commit run>
set -u
WORKERS=${1:-16}
LIMIT=${2:-480}
OUT=${OUT:-results/device-out}
mkdir -p "$OUT"
[ -f results/looplm-cuda.jsonl ] && cp results/looplm-cuda.jsonl "$OUT/looplm-cuda.jsonl"
PY=python3
$PY -m pip install --no-index --no-deps -q results/wheels/*.whl 2>&1 | tail -2
export ICML26_TORCH_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,memory.used --format=csv,noheader || true
MPS=0
if command -v nvidia-cuda-mps-control >/dev/null; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d && MPS=1
fi
echo "MPS=$MPS"
t0=$(date +%s)
if ! $PY experiments/looplm.py --allow-dirty run --smoke --device cuda --workers 9; then
  if [ "$MPS" = 1 ]; then
    echo quit | nvidia-cuda-mps-control; MPS=0; echo "smoke failed under MPS; retrying without"
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    $PY experiments/looplm.py --allow-dirty run --smoke --device cuda --workers 9 || exit 1
  else
    exit 1
  fi
fi
echo "smoke done in $(( $(date +%s) - t0 )) s (MPS=$MPS)"
timeout --signal=INT "$LIMIT" $PY experiments/looplm.py --allow-dirty run --device cuda \
  --workers "$WORKERS" --jsonl "$OUT/looplm-cuda.jsonl"
echo "rc=$? after $(( $(date +%s) - t0 )) s; $(wc -l < "$OUT/looplm-cuda.jsonl") trials in $OUT/looplm-cuda.jsonl"
[ "$MPS" = 1 ] && echo quit | nvidia-cuda-mps-control
exit 0
