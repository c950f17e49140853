"""The pulse simulator against neurokit2's ECGSYN port, side by side: speed and waveform.

* speed: ``n`` independent 4-s ECG windows (3 s of transient each, solved at 256 Hz), ours in
  one vectorized call of :func:`icml26.envs.pulse.simulator.simulate` (ECG channel, every
  nuisance on) against ``neurokit2.ecg_simulate(method="ecgsyn")`` called once per window
  (its RK4 integration of the same McSharry model, at 256 Hz);
* waveform: at 60 bpm without variability, the mean beat of our default morphology against
  ECGSYN's, both scaled to ECGSYN's [-0.4, 1.2] mV range: correlation and the times of the
  R peak and of the T-wave maximum. (ECGSYN's angles are ecgsyn.m's -70, -15, 0, 15, 100
  degrees; ours the paper's table, -60, -15, 0, 15, 90, so the P and T waves sit a little
  differently.)

neurokit2 pins setuptools < 82, so it is not an extra of this package; install it aside::

    pip install --no-deps --target /tmp/nk neurokit2==0.3.0 PyWavelets
    PYTHONPATH=/tmp/nk python perf/pulse.py [--windows 256]

Prints seconds and the ratio neurokit2 / ours. Absolute numbers depend on the machine (this one
is shared); ratios from one run are robust.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from icml26.envs.pulse import cardiac  # noqa: E402
from icml26.envs.pulse.simulator import PhysioConfig, simulate  # noqa: E402


def mean_beat(x: np.ndarray, fs: float, hr: float) -> np.ndarray:
    """Average of the signal folded at the beat period, rolled so the R peak is at 1/3."""
    period = int(round(fs * 60.0 / hr))
    beats = x[: (x.size // period) * period].reshape(-1, period)[1:]
    m = beats.mean(axis=0)
    return np.roll(m, period // 3 - int(np.argmax(m)))


def to_range(x: np.ndarray) -> np.ndarray:
    return (x - x.min()) * 1.6 / (x.max() - x.min()) - 0.4


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--windows", type=int, default=256)
    args = p.parse_args()
    try:
        import neurokit2 as nk
    except ImportError:
        raise SystemExit("neurokit2 is not importable; see the module docstring") from None

    n = args.windows
    cfg = PhysioConfig(channels=("ecg",))
    simulate(np.random.default_rng(0), 1, 1, cfg)  # warm-up (imports, scale cache)
    t0 = time.perf_counter()
    simulate(np.random.default_rng(1), max(1, n // 4), 1, cfg)
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i in range(n):
        nk.ecg_simulate(
            duration=7, sampling_rate=256, heart_rate=75, method="ecgsyn", random_state=i
        )
    theirs = time.perf_counter() - t0
    print(f"{n} ECG windows (4 s + 3 s transient, 256 Hz internal)")
    print(f"  icml26 simulate (vectorized) {ours:8.3f} s")
    print(
        f"  neurokit2 ecgsyn (per window) {theirs:8.3f} s   ratio neurokit2 / ours = {theirs / ours:.1f}"
    )

    fs, hr, dur = 256.0, 60.0, 20.0
    t = np.arange(0.0, dur, 1 / fs)
    beats = np.arange(-1.0, dur + 2.0, 60.0 / hr)[None, :]
    z = cardiac.mcsharry_ecg(
        cardiac.beat_phase(t, beats), 1 / fs, cardiac.DEFAULT_MORPHOLOGY.rows(1)
    )[0]
    ref = nk.ecg_simulate(
        duration=dur,
        sampling_rate=int(fs),
        heart_rate=hr,
        heart_rate_std=0.0,
        method="ecgsyn",
        random_state=0,
    )
    a, b = (
        to_range(mean_beat(z[int(4 * fs) :], fs, hr)),
        to_range(mean_beat(np.asarray(ref)[int(4 * fs) :], fs, hr)),
    )
    r = float(np.corrcoef(a, b)[0, 1])
    per = a.size
    t_wave = lambda m: (np.argmax(m[per // 3 + int(0.12 * fs) :]) + int(0.12 * fs)) / fs  # noqa: E731
    print(
        f"mean beat at {hr:.0f} bpm, scaled to [-0.4, 1.2] mV: correlation ours vs ECGSYN = {r:.3f}"
    )
    print(
        f"  R-to-T-peak interval: ours {t_wave(a) * 1000:.0f} ms, ECGSYN {t_wave(b) * 1000:.0f} ms"
    )
    print(
        f"  max |difference| {np.max(np.abs(a - b)):.3f} mV, RMS {np.sqrt(np.mean((a - b) ** 2)):.3f} mV"
    )


if __name__ == "__main__":
    main()
