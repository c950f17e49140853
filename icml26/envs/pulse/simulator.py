"""Seeded simulator of multi-window physiological recordings with known factors.

A *recording* is one dynamical system: its parameters are drawn once (given its class) and
shared by all its windows -- the *transferable* factors. Each *window* is an independent
sample of that system with its own *sample-specific* factors: cardiac phase at the window
start, the realization of the RR process, baseline wander, white noise and motion artefacts.
Windows of one recording are independent given the recording's parameters (the method card's
assumption A1).

Channels: ``ecg`` (the McSharry model, :mod:`~icml26.envs.pulse.cardiac`) and ``ppg`` (a
Windkessel driven by the same beats). Classes are rhythm / conduction regimes of the dynamics:

======  ==========================================================================
class   definition (source domain)
======  ==========================================================================
normal  sinus rhythm, HR U(55, 100) bpm, HR sd U(1, 5) bpm, LF/HF U(0.5, 2)
af      atrial fibrillation: i.i.d. gamma RR, CV U(0.12, 0.25), HR U(70, 120), no P
        wave, fibrillatory f-waves 4-8 Hz of amplitude U(0.03, 0.08)
bbb     bundle-branch block: sinus, Q/R/S widths x U(1.8, 2.6) (amplitudes / w^2, angles
        spread by sqrt(w)), discordant T (amplitude x -U(0.5, 1))
ste     ST elevation: sinus, an extra Gaussian wave at theta = pi/5 (b 0.35, a U(0.3, 0.8))
======  ==========================================================================

Every recording also jitters the wave angles (+N(0, 0.02) rad), amplitudes (x e^N(0, 0.1)) and
widths (x e^N(0, 0.08)), and draws a respiratory rate, an electrode gain, a PPG gain and a
Windkessel time constant (transferable but not class-defining).

The *target* domain (``domain="target"``) is a shifted population and device: another lead
(R x 0.45, S x 2.2, Q x 0.5, T x 0.6, P x 0.8), heart rates + 12 bpm, stiffer arteries
(Windkessel tau U(0.5, 1.0) s instead of U(0.9, 1.8) s), twice the noise and artefact rate and
1.5 x the baseline wander.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml26.envs.pulse import cardiac

__all__ = [
    "CLASSES",
    "CHANNELS",
    "TRANSFERABLE_FACTORS",
    "SAMPLE_FACTORS",
    "DOMAINS",
    "PhysioConfig",
    "PhysioData",
    "sample_systems",
    "render_windows",
    "simulate",
]

CLASSES = ("normal", "af", "bbb", "ste")
CHANNELS = ("ecg", "ppg")
# recording-level (shared by every window of a recording)
TRANSFERABLE_FACTORS = (
    "heart_rate",  # mean heart rate, bpm
    "rr_cv",  # coefficient of variation of the RR interval
    "qrs_width",  # multiplier of the Q, R, S widths (1 = normal conduction)
    "t_amplitude",  # signed multiplier of the T wave
    "st_level",  # amplitude of the ST-segment wave (0 = none)
    "p_amplitude",  # multiplier of the P wave (0 = absent, as in AF)
    "log_gain",  # log electrode gain of the ECG
    "ppg_tau",  # Windkessel time constant R C, s
    "resp_rate",  # breaths per minute
)
# window-level (independent between windows of one recording)
SAMPLE_FACTORS = (
    "log_wander",  # log RMS of the baseline wander (respiratory + slow drift)
    "log_noise",  # log standard deviation of the white noise
    "artefacts",  # sum of |amplitude| of the motion artefacts (0 = none)
    "phase_cos",  # cos / sin of the cardiac phase at the window start
    "phase_sin",
)

_B = dict(zip(cardiac.WAVES, range(5)))
_FLOOR = 1e-6  # log factors of switched-off nuisance
_ST = 5  # column of the ST-segment wave in the morphology arrays


@dataclass(frozen=True)
class Domain:
    """Parameter ranges of one population/device. Ranges are (low, high) of a uniform draw."""

    hr: Mapping[str, tuple[float, float]]
    lead: tuple[float, float, float, float, float] = (1.0, 1.0, 1.0, 1.0, 1.0)  # P Q R S T
    ppg_tau: tuple[float, float] = (0.9, 1.8)
    noise: tuple[float, float] = (0.01, 0.1)  # white-noise sd, log-uniform
    wander: tuple[float, float] = (0.03, 0.8)  # wander RMS, log-uniform
    artefact_rate: float = 0.8  # Poisson mean per window
    artefact_sd: float = 0.7  # sd of an artefact's ECG amplitude

    def scaled(self, noise: float, wander: float, artefacts: float) -> Domain:
        """The domain with its nuisance scaled (noise and wander ranges, artefact rate)."""
        return dataclasses.replace(
            self,
            noise=(self.noise[0] * noise, self.noise[1] * noise),
            wander=(self.wander[0] * wander, self.wander[1] * wander),
            artefact_rate=self.artefact_rate * artefacts,
        )


_SOURCE_HR = {
    "normal": (55.0, 100.0),
    "af": (70.0, 120.0),
    "bbb": (55.0, 100.0),
    "ste": (55.0, 100.0),
}
DOMAINS: dict[str, Domain] = {
    "source": Domain(hr=_SOURCE_HR),
    "target": Domain(
        hr={k: (lo + 12.0, hi + 12.0) for k, (lo, hi) in _SOURCE_HR.items()},
        lead=(0.8, 0.5, 0.45, 2.2, 0.6),
        ppg_tau=(0.5, 1.0),
        noise=(0.02, 0.2),
        wander=(0.045, 1.2),
        artefact_rate=1.6,
    ),
}


@dataclass(frozen=True)
class PhysioConfig:
    """What the simulator renders: sampling, window length, channels, domain and nuisance scale."""

    fs: float = 64.0  # output sampling rate, Hz
    window_seconds: float = 4.0
    channels: tuple[str, ...] = CHANNELS
    domain: str = "source"
    fine_factor: int = 4  # the dynamics are solved at fs * fine_factor (256 Hz by default)
    burn_seconds: float = 3.0  # transient discarded before each window
    noise_scale: float = 1.0  # multiplies the domain's noise range
    wander_scale: float = 1.0  # multiplies the domain's wander range
    artefact_scale: float = 1.0  # multiplies the domain's artefact rate
    classes: tuple[str, ...] = CLASSES

    def __post_init__(self) -> None:
        object.__setattr__(self, "channels", tuple(self.channels))
        object.__setattr__(self, "classes", tuple(self.classes))
        if self.domain not in DOMAINS:
            raise ValueError(
                f"PhysioConfig: domain must be one of {sorted(DOMAINS)}, got {self.domain!r}"
            )
        bad = [c for c in self.channels if c not in CHANNELS]
        if bad or not self.channels or len(set(self.channels)) != len(self.channels):
            raise ValueError(
                f"PhysioConfig: channels must be distinct names from {CHANNELS}, got {self.channels}"
            )
        bad = [c for c in self.classes if c not in CLASSES]
        if bad or len(self.classes) < 2 or len(set(self.classes)) != len(self.classes):
            raise ValueError(
                f"PhysioConfig: classes must be >= 2 distinct names from {CLASSES}, got {self.classes}"
            )
        for name in ("fs", "window_seconds", "noise_scale", "wander_scale", "artefact_scale"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v >= 0):
                raise ValueError(f"PhysioConfig: {name} must be a finite number >= 0, got {v!r}")
        if self.fs < 32 or self.window_seconds < 1.0:
            raise ValueError(
                f"PhysioConfig: need fs >= 32 Hz and window_seconds >= 1, got {self.fs}, {self.window_seconds}"
            )
        if not isinstance(self.fine_factor, int) or self.fine_factor < 1:
            raise ValueError(
                f"PhysioConfig: fine_factor must be an int >= 1, got {self.fine_factor!r}"
            )

    @property
    def length(self) -> int:
        """Samples per window."""
        return int(round(self.fs * self.window_seconds))

    @property
    def domain_params(self) -> Domain:
        return DOMAINS[self.domain].scaled(self.noise_scale, self.wander_scale, self.artefact_scale)

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> PhysioConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(f"PhysioConfig: unknown option(s) {unknown}; known: {sorted(known)}")
        return cls(**kwargs)


@dataclass
class PhysioData:
    """Windows of recordings with their labels and factors.

    ``windows`` (n_recordings, windows_per_recording, channels, samples) float32;
    ``labels`` (n_recordings,) int (-1 when unknown); ``factors`` maps each transferable factor
    to an (n_recordings,) array and each sample-specific factor to (n_recordings, W) (empty for
    real recordings).
    """

    windows: np.ndarray
    labels: np.ndarray
    fs: float
    channels: tuple[str, ...]
    class_names: tuple[str, ...]
    factors: dict[str, np.ndarray] = field(default_factory=dict)
    source: str = "simulator"

    def __post_init__(self) -> None:
        if self.windows.ndim != 4:
            raise ValueError(
                f"PhysioData: windows must be (recordings, windows, channels, samples), got {self.windows.shape}"
            )
        if self.labels.shape != (self.windows.shape[0],):
            raise ValueError(
                f"PhysioData: labels must be ({self.windows.shape[0]},), got {self.labels.shape}"
            )

    @property
    def n_recordings(self) -> int:
        return int(self.windows.shape[0])

    @property
    def windows_per_recording(self) -> int:
        return int(self.windows.shape[1])

    def flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(windows (N*W, C, T), labels (N*W,), recording index (N*W,)), recording-major."""
        n, w = self.windows.shape[:2]
        rec = np.repeat(np.arange(n), w)
        return self.windows.reshape(n * w, *self.windows.shape[2:]), self.labels[rec], rec

    def factor_matrix(self, names: Sequence[str]) -> np.ndarray:
        """(N*W, len(names)): each factor per window (recording factors repeated)."""
        n, w = self.windows.shape[:2]
        cols = []
        for name in names:
            v = np.asarray(self.factors[name], dtype=np.float64)
            cols.append(np.repeat(v, w) if v.ndim == 1 else v.reshape(n * w))
        return np.stack(cols, axis=1)

    def subset(self, recordings: np.ndarray) -> PhysioData:
        """The data of the given recordings (an index array)."""
        return dataclasses.replace(
            self,
            windows=self.windows[recordings],
            labels=self.labels[recordings],
            factors={k: v[recordings] for k, v in self.factors.items()},
        )

    def without_labels(self) -> PhysioData:
        """The same windows with labels -1 and no factors (what a self-supervised learner sees)."""
        return dataclasses.replace(self, labels=np.full_like(self.labels, -1), factors={})


def _loguniform(rng: np.random.Generator, lo: float, hi: float, size: Any) -> np.ndarray:
    """Log-uniform on [lo, hi]; all zeros when the range is scaled to 0 (nuisance switched off)."""
    if hi <= 0:
        rng.uniform(size=size)  # keep the stream aligned with the scaled-up case
        return np.zeros(size)
    return np.exp(rng.uniform(np.log(lo), np.log(hi), size=size))


def sample_systems(
    rng: np.random.Generator, labels: np.ndarray, config: PhysioConfig
) -> dict[str, np.ndarray]:
    """Draw each recording's system parameters given its class index (into ``config.classes``)."""
    dom = config.domain_params
    n = labels.shape[0]
    names = np.asarray(config.classes)[labels]
    hr = np.empty(n)
    for c in config.classes:
        m = names == c
        hr[m] = rng.uniform(*dom.hr[c], size=int(m.sum()))
    is_af = names == "af"
    hr_sd = rng.uniform(1.0, 5.0, size=n)
    rr_cv = np.where(is_af, rng.uniform(0.12, 0.25, size=n), hr_sd / hr)
    theta = np.tile(np.r_[cardiac.DEFAULT_MORPHOLOGY.theta, np.pi / 5], (n, 1))
    a = np.tile(np.r_[cardiac.DEFAULT_MORPHOLOGY.a, 0.0], (n, 1))
    b = np.tile(np.r_[cardiac.DEFAULT_MORPHOLOGY.b, 0.35], (n, 1))
    theta[:, :5] += rng.normal(0.0, 0.02, size=(n, 5))
    a[:, :5] *= np.exp(rng.normal(0.0, 0.1, size=(n, 5))) * np.asarray(dom.lead)
    b[:, :5] *= np.exp(rng.normal(0.0, 0.08, size=(n, 5)))
    p_amp = np.where(is_af, 0.0, np.exp(rng.normal(0.0, 0.15, size=n)))
    t_amp = np.exp(rng.normal(0.0, 0.15, size=n))
    width = np.ones(n)
    bbb = names == "bbb"
    width[bbb] = rng.uniform(1.8, 2.6, size=int(bbb.sum()))
    t_amp[bbb] *= -rng.uniform(0.5, 1.0, size=int(bbb.sum()))
    for wave in ("Q", "R", "S"):
        j = _B[wave]
        b[:, j] *= width
        a[:, j] /= width**2
        if wave != "R":
            theta[:, j] *= np.sqrt(width)
    a[:, _B["P"]] *= p_amp
    a[:, _B["T"]] *= t_amp
    st = np.zeros(n)
    ste = names == "ste"
    st[ste] = rng.uniform(0.3, 0.8, size=int(ste.sum()))
    a[:, _ST] = st
    return {
        "label": labels,
        "heart_rate": hr,
        "rr_cv": rr_cv,
        "lf_hf": rng.uniform(0.5, 2.0, size=n),
        "resp_hz": rng.uniform(0.15, 0.4, size=n),
        "is_af": is_af,
        "theta": theta,
        "a": a,
        "b": b,
        "qrs_width": width,
        "t_amplitude": t_amp,
        "st_level": st,
        "p_amplitude": p_amp,
        "log_gain": rng.uniform(np.log(0.6), np.log(1.6), size=n),
        "ppg_log_gain": rng.uniform(np.log(0.5), np.log(2.0), size=n),
        "ppg_tau": rng.uniform(*dom.ppg_tau, size=n),
        "f_amp": np.where(is_af, rng.uniform(0.03, 0.08, size=n), 0.0),
        "f_hz": rng.uniform(4.0, 8.0, size=n),
    }


def _wander(
    rng: np.random.Generator, t: np.ndarray, resp_hz: np.ndarray, rms: np.ndarray
) -> np.ndarray:
    """Baseline wander (n, T) of RMS ``rms``: a respiratory sinusoid plus a slow random drift
    (six sinusoids at 0.05-0.5 Hz with random phases), mixed in a random proportion."""
    n = rms.shape[0]
    resp = np.sin(2 * np.pi * resp_hz[:, None] * t + rng.uniform(0, 2 * np.pi, (n, 1)))
    f = rng.uniform(0.05, 0.5, size=(n, 6))
    drift = np.sum(
        rng.normal(size=(n, 6, 1))
        * np.sin(2 * np.pi * f[:, :, None] * t + rng.uniform(0, 2 * np.pi, (n, 6, 1))),
        axis=1,
    )
    mix = rng.uniform(0.0, 1.0, size=(n, 1))
    w = mix * resp / resp.std(axis=1, keepdims=True) + (1 - mix) * drift / drift.std(
        axis=1, keepdims=True
    )
    return w / np.sqrt(np.mean(w**2, axis=1, keepdims=True)) * rms[:, None]


def _artefacts(
    rng: np.random.Generator, t: np.ndarray, n: int, rate: float, sd: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Motion artefacts: Poisson(rate) Gaussian transients per window (width U(0.05, 0.3) s),
    amplitudes N(0, sd) on the ECG and N(0, sd / 2) on the PPG; returns both and sum |a_ecg|."""
    ecg = np.zeros((n, t.size))
    ppg = np.zeros((n, t.size))
    total = np.zeros(n)
    counts = rng.poisson(rate, size=n)
    for i in np.flatnonzero(counts):
        k = counts[i]
        c = rng.uniform(t[0], t[-1], size=k)
        w = rng.uniform(0.05, 0.3, size=k)
        amp = rng.normal(0.0, sd, size=k)
        amp_ppg = rng.normal(0.0, sd / 2, size=k)
        shape = np.exp(-0.5 * ((t[None, :] - c[:, None]) / w[:, None]) ** 2)
        ecg[i] = amp @ shape
        ppg[i] = amp_ppg @ shape
        total[i] = np.abs(amp).sum()
    return ecg, ppg, total


def render_windows(
    rng: np.random.Generator,
    systems: Mapping[str, np.ndarray],
    recording: np.ndarray,
    config: PhysioConfig,
    chunk: int = 512,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Render one window per entry of ``recording`` (indices into ``systems``).

    Returns (windows (n, C, T) float32, sample-specific factors, each (n,)).
    """
    from scipy.signal import resample_poly

    n = recording.shape[0]
    T, fs, k = config.length, float(config.fs), config.fine_factor
    dom = config.domain_params
    fine_dt = 1.0 / (fs * k)
    t_fine = np.arange(-config.burn_seconds, config.window_seconds, fine_dt)
    keep = t_fine.size - T * k
    t_out = np.arange(T) / fs
    out = np.empty((n, len(config.channels), T), dtype=np.float32)
    facs = {name: np.empty(n) for name in SAMPLE_FACTORS}
    scale = cardiac.ecg_scale(fine_dt)
    for lo in range(0, n, chunk):
        idx = recording[lo : lo + chunk]
        m = idx.size
        s = {key: np.asarray(v)[idx] for key, v in systems.items()}
        rr_mean = 60.0 / s["heart_rate"]
        t0, t1 = float(t_fine[0]) - 0.5, float(t_fine[-1]) + 0.5
        beats = np.empty((m, 0))
        sin_rows, af_rows = np.flatnonzero(~s["is_af"]), np.flatnonzero(s["is_af"])
        parts = {}
        if sin_rows.size:
            parts["sin"] = cardiac.sinus_beats(
                rng,
                rr_mean[sin_rows],
                s["rr_cv"][sin_rows],
                s["lf_hf"][sin_rows],
                s["resp_hz"][sin_rows],
                t0,
                t1,
            )
        if af_rows.size:
            parts["af"] = cardiac.af_beats(rng, rr_mean[af_rows], s["rr_cv"][af_rows], t0, t1)
        width = max(p.shape[1] for p in parts.values())
        beats = np.full((m, width), np.nan)
        if "sin" in parts:
            beats[sin_rows, : parts["sin"].shape[1]] = parts["sin"]
        if "af" in parts:
            beats[af_rows, : parts["af"].shape[1]] = parts["af"]
        phase = cardiac.beat_phase(t_fine, beats)
        start_phase = phase[:, keep]
        channels: dict[str, np.ndarray] = {}
        if "ecg" in config.channels:
            morph = cardiac.hr_adjusted(
                cardiac.Morphology(s["theta"], s["a"], s["b"]), s["heart_rate"]
            )
            z = cardiac.mcsharry_ecg(phase, fine_dt, morph)[:, keep:] / scale
            channels["ecg"] = z
        if "ppg" in config.channels:
            ejection = 0.3 * np.sqrt(rr_mean)
            delay = rng.uniform(0.2, 0.3, size=m)  # pre-ejection period + pulse transit time
            p = cardiac.windkessel_ppg(t_fine, beats, s["ppg_tau"], ejection, delay)[:, keep:]
            mean_p = s["ppg_tau"] * (2 / np.pi) * ejection / rr_mean
            channels["ppg"] = 3.0 * (p / mean_p[:, None] - 1.0)
        down = {c: resample_poly(v, 1, k, axis=1) for c, v in channels.items()}
        # sample-specific nuisance at the output rate
        wander_rms = _loguniform(rng, *dom.wander, size=m)
        noise_sd = _loguniform(rng, *dom.noise, size=m)
        wander = _wander(rng, t_out, s["resp_hz"], wander_rms)
        art_ecg, art_ppg, art_total = _artefacts(rng, t_out, m, dom.artefact_rate, dom.artefact_sd)
        resp_mod = 1.0 + rng.uniform(0.0, 0.2, size=(m, 1)) * np.sin(
            2 * np.pi * s["resp_hz"][:, None] * t_out + rng.uniform(0, 2 * np.pi, (m, 1))
        )
        if "ecg" in down:
            ecg = down["ecg"] * np.exp(s["log_gain"])[:, None]
            if np.any(s["f_amp"] > 0):
                fwave = np.sin(
                    2 * np.pi * s["f_hz"][:, None] * t_out
                    + rng.uniform(0, 2 * np.pi, (m, 1))
                    + np.cumsum(rng.normal(0, 0.15, (m, T)), axis=1)
                )
                ecg = ecg + s["f_amp"][:, None] * fwave
            down["ecg"] = ecg + wander + art_ecg + noise_sd[:, None] * rng.normal(size=(m, T))
        if "ppg" in down:
            ppg = down["ppg"] * resp_mod * np.exp(s["ppg_log_gain"])[:, None]
            down["ppg"] = (
                ppg + 0.5 * wander + art_ppg + 0.5 * noise_sd[:, None] * rng.normal(size=(m, T))
            )
        for j, c in enumerate(config.channels):
            out[lo : lo + m, j] = down[c]
        facs["log_wander"][lo : lo + m] = np.log(np.maximum(wander_rms, _FLOOR))
        facs["log_noise"][lo : lo + m] = np.log(np.maximum(noise_sd, _FLOOR))
        facs["artefacts"][lo : lo + m] = art_total
        facs["phase_cos"][lo : lo + m] = np.cos(start_phase)
        facs["phase_sin"][lo : lo + m] = np.sin(start_phase)
    return out, facs


def simulate(
    rng: np.random.Generator,
    recordings_per_class: int,
    windows_per_recording: int,
    config: PhysioConfig | None = None,
) -> PhysioData:
    """Balanced recordings (``recordings_per_class`` of each class, in shuffled order) with
    ``windows_per_recording`` independent windows each, and all their factors."""
    config = config or PhysioConfig()
    n_cls = len(config.classes)
    labels = rng.permutation(np.repeat(np.arange(n_cls), recordings_per_class))
    systems = sample_systems(rng, labels, config)
    n, w = labels.size, windows_per_recording
    recording = np.repeat(np.arange(n), w)
    windows, sample = render_windows(rng, systems, recording, config)
    factors: dict[str, np.ndarray] = {
        name: np.asarray(systems[name], dtype=np.float64)
        for name in TRANSFERABLE_FACTORS
        if name in systems
    }
    factors["resp_rate"] = 60.0 * systems["resp_hz"]
    for name, v in sample.items():
        factors[name] = v.reshape(n, w)
    return PhysioData(
        windows=windows.reshape(n, w, len(config.channels), config.length),
        labels=labels.astype(np.int64),
        fs=float(config.fs),
        channels=config.channels,
        class_names=config.classes,
        factors=factors,
        source=f"simulator:{config.domain}",
    )
