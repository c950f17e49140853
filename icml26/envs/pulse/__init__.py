"""The pulse family: self-supervised representations of physiological time series (PULSE).

* :mod:`~icml26.envs.pulse.env` -- ``icml26/PhysioProbe-v0``, the evaluator: the agent embeds
  every window, the env fits the probe (linear-probe accuracy, or R^2 of each known factor);
* :mod:`~icml26.envs.pulse.simulator` -- multi-window recordings with known factors:
  :func:`simulate`, :class:`PhysioConfig`, :class:`PhysioData`;
* :mod:`~icml26.envs.pulse.cardiac` -- the dynamics: sinus / AF RR processes, the McSharry ECG
  model, a Windkessel PPG;
* :mod:`~icml26.envs.pulse.probes` -- the logistic and ridge probes (numpy/scipy);
* :mod:`~icml26.envs.pulse.wfdb_io` -- WFDB records (formats 16, 212, 80) read and written in
  numpy; :func:`load_folder` turns a labelled folder into :class:`PhysioData`.

Importing this package is cheap; the modules load on first use.

```python
import gymnasium as gym, icml26
env = gym.make("icml26/PhysioProbe-v0")                        # linear probe, source domain
env = gym.make("icml26/PhysioProbe-v0", probe="factors")       # R^2 per known factor
env = gym.make("icml26/PhysioProbe-v0", domain="target")       # the shifted domain
env = gym.make("icml26/PhysioProbe-v0", label_fraction=0.01)   # 1% of the labels
env = gym.make("icml26/PhysioProbe-v0", data_dir="/data/mydb", channels=("MLII",))  # WFDB
```

## The generative model

A *recording* is one dynamical system; its parameters are shared by all its windows
(*transferable*). Each window is an independent sample of that system with its own
*sample-specific* factors. Channels: ECG from the McSharry et al. (2003) model (phase on the
unit limit cycle at angular speed 2 pi / RR(t); z-equation driven by Gaussian P, Q, R, S, T
waves, solved by the trapezoidal rule at 256 Hz, output at 64 Hz) and PPG from a two-element
Windkessel (``P' = -P / tau + Q``) fed by a half-sine ejection after each beat.

| factor | level | what it is |
|---|---|---|
| `heart_rate` | recording | mean heart rate, bpm (class ranges overlap) |
| `rr_cv` | recording | RR coefficient of variation (sinus: HR sd / HR; AF: 0.12-0.25) |
| `qrs_width` | recording | multiplier of the Q/R/S widths (bundle-branch block: 1.8-2.6) |
| `t_amplitude` | recording | signed T-wave multiplier (discordant T in bundle-branch block) |
| `st_level` | recording | amplitude of the ST-segment wave (ST elevation: 0.3-0.8) |
| `p_amplitude` | recording | P-wave multiplier (0 in AF) |
| `log_gain` | recording | electrode gain (transferable, not class-defining) |
| `ppg_tau` | recording | Windkessel time constant R C, s (transferable, not class-defining) |
| `resp_rate` | recording | breaths per minute (drives RSA, wander, PPG modulation) |
| `log_wander` | window | log RMS of the baseline wander (respiratory + slow drift) |
| `log_noise` | window | log sd of the white noise |
| `artefacts` | window | sum of the motion artefacts' absolute amplitudes |
| `phase_cos`, `phase_sin` | window | cardiac phase at the window start |

Classes (by the dynamics): `normal` sinus rhythm, `af` atrial fibrillation (irregular RR, no P,
f-waves), `bbb` bundle-branch block (wide QRS, discordant T), `ste` ST elevation. The `target`
domain is another lead (small R, deep S), heart rates + 12 bpm, stiffer arteries, and twice the
noise and artefacts.

## Protocols (task `pulse/ecg-ppg`)

One pretraining (512 unlabelled recordings x 8 windows, `budget.updates` gradient updates on
the agent's objective), then the frozen encoder is scored by the linear probe at 100%, 10% and
1% of the labels (5 label draws, at least one per class, as in the PULSE release), on the
target domain, and by the factor probe. Splits are always by recording. The supervised encoder
(`pulse-supervised`) sees the pretraining labels and is reference only; `pulse-random` is the
null.

## Real recordings

`wfdb_io.read_record` reads WFDB headers and signal files (formats 16, 212, 80; physical value
= (digital - baseline) / gain) and agrees bit for bit with the `wfdb` package (the optional
extra `icml26-gym[pulse]`, used by the tests as the reference). `load_folder(folder)` reads the
records in `RECORDS` (or every `.hea`), picks channels by name, resamples to 64 Hz and cuts
evenly spaced windows; classes come from `labels.csv` (`record,label`).
"""

from __future__ import annotations

from icml26._lazy import lazy_exports

_EXPORTS = {
    "PhysioProbeEnv": "env",
    "PhysioConfig": "simulator",
    "PhysioData": "simulator",
    "simulate": "simulator",
    "CLASSES": "simulator",
    "TRANSFERABLE_FACTORS": "simulator",
    "SAMPLE_FACTORS": "simulator",
    "logistic_probe": "probes",
    "ridge_r2": "probes",
    "read_record": "wfdb_io",
    "write_record": "wfdb_io",
    "load_folder": "wfdb_io",
}

__getattr__, __all__ = lazy_exports(__name__, _EXPORTS)
