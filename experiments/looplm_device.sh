#!/usr/bin/env bash
# The looplm comparison on a GPU machine, as ONE command (docs/results/looplm.md, issue 35): every
# arm x seeds 0-9 of looplm/permutation-hops-8x3 at 2x the task's RL budget (480 RL steps; each
# trial also scores its weights after 60, 120 and 240 steps: the per-arm ladder), all on cuda:
#
#     bash experiments/looplm_device.sh [WORKERS] [DEADLINE_S]
#
# Needs python3 with torch, numpy, scipy, tqdm, threadpoolctl (the device image) and the wheels of
# gymnasium and farama-notifications in results/wheels (pure Python). Does not touch CUDA MPS (the
# GPU may be shared with other commands). Runs a 2-step smoke of three arms (exit 1 if one
# fails), then the trials with WORKERS processes (default 5, each reused for many trials),
# appending each TrialResult to $OUT/looplm-cuda.jsonl.gz as it finishes (a gzip member per line:
# a kill loses only the last line), warm starts first, then seed by seed; stops DEADLINE_S seconds
# (default 530) after it started, so what finished comes back. A partial file carried in as
# results/looplm-cuda.jsonl.gz is continued. Load it here with
#     python experiments/looplm.py import results/looplm-cuda.jsonl.gz --commit <commit run>
set -u
T0=$(date +%s)
WORKERS=${1:-5}
DEADLINE=${2:-530}
DEVICE=${DEVICE:-cuda}  # DEVICE=cpu SEEDS=0 bash ... checks the script on a machine without a GPU
SEEDS=${SEEDS:-0-9}
SCALE=${SCALE:-2}
OUT=${OUT:-results/device-out}
PY=${PY:-python3}
mkdir -p "$OUT"
exec > >(tee "$OUT/looplm-device.log") 2>&1
[ -f results/looplm-cuda.jsonl.gz ] && cp results/looplm-cuda.jsonl.gz "$OUT/looplm-cuda.jsonl.gz"
if [ "${PIP_WHEELS:-1}" = 1 ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site-looplm results/wheels/*.whl || exit 1
  export PYTHONPATH=/tmp/site-looplm${PYTHONPATH:+:$PYTHONPATH}
fi
export ICML26_TORCH_THREADS=1 OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
$PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
$PY experiments/looplm.py --allow-dirty run --smoke --device "$DEVICE" --workers 3 \
  --arms "GRPO,RLTT learned,4-layer GRPO" || exit 1
LEFT=$(( DEADLINE - ($(date +%s) - T0) ))
echo "smoke done after $(( $(date +%s) - T0 )) s; $LEFT s left for the comparison"
timeout --signal=INT "$LEFT" $PY experiments/looplm.py --allow-dirty run --device "$DEVICE" \
  --seeds "$SEEDS" --budget-scale "$SCALE" --workers "$WORKERS" --reuse-workers \
  --jsonl "$OUT/looplm-cuda.jsonl.gz"
echo "stopped after $(( $(date +%s) - T0 )) s: $($PY -c "
import sys; sys.path.insert(0, 'experiments')
from pathlib import Path
from looplm import _read_lines
print(len(_read_lines(Path('$OUT/looplm-cuda.jsonl.gz'))))") trials in $OUT/looplm-cuda.jsonl.gz"
exit 0
