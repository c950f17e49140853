#!/usr/bin/env bash
# x1 rung (500 updates) of the six core arms, seed by seed, until 21:00 (resumable store)
cd /work/wt/pulse-run
export PYTHONPATH=/work/wt/pulse-run TQDM_DISABLE=1
end=$(date -d 21:00 +%s)
for s in 0 1 2 3 4 5 6 7 8 9; do
  left=$(( end - $(date +%s) ))
  [ $left -le 30 ] && { echo "$(date -Is) stop: deadline"; break; }
  echo "$(date -Is) seed $s"
  timeout $left /work/main/.venv/bin/python experiments/pulse.py run --rungs 1 --seeds $s \
    --arms PULSE PULSE-cross MAE SimCLR supervised "random init" --store results/pulse_top.db
done
echo "$(date -Is) done"
