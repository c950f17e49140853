"""Cardiac dynamics in numpy: RR processes, the McSharry ECG model and a Windkessel PPG.

All functions work on a batch of ``n`` independent windows at once (one row each) on a fine
time grid ``t`` (seconds, shape ``(L,)``), and take their randomness from a
``numpy.random.Generator``.

* :func:`sinus_beats` / :func:`af_beats` -- beat times of sinus rhythm (RR modulated by the
  bimodal Mayer-wave / respiratory spectrum of ECGSYN) and of atrial fibrillation (i.i.d.
  irregular RR intervals).
* :func:`beat_phase` -- the cardiac phase ``theta(t)``: ``2 pi`` per beat, linear between beats.
  On the McSharry limit cycle (radius 1) this *is* the solution of ``x' = a x - w y,
  y' = a y + w x`` with ``w = 2 pi / RR``, so the (x, y) part needs no integration.
* :func:`mcsharry_ecg` -- the z-equation of McSharry et al. (2003):
  ``z' = -sum_i a_i dtheta_i exp(-dtheta_i^2 / (2 b_i^2)) - (z - z0)``, linear in z given
  ``theta(t)``, solved with the trapezoidal rule (second order) on the fine grid.
* :func:`windkessel_ppg` -- a two-element Windkessel ``C P' = Q(t) - P / R`` driven by a
  half-sine ventricular ejection after each beat (pre-ejection + transit delay), solved exactly
  for piecewise-constant inflow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = [
    "WAVES",
    "Morphology",
    "DEFAULT_MORPHOLOGY",
    "sinus_beats",
    "af_beats",
    "beat_phase",
    "mcsharry_ecg",
    "ecg_scale",
    "windkessel_ppg",
]

WAVES = ("P", "Q", "R", "S", "T")
# McSharry, Clifford, Tarassenko & Smith (2003), IEEE TBME 50(3):289, Table 1: angles (rad),
# amplitudes a_i and widths b_i of the P, Q, R, S and T waves.
_THETA = (-np.pi / 3, -np.pi / 12, 0.0, np.pi / 12, np.pi / 2)
_A = (1.2, -5.0, 30.0, -7.5, 0.75)
_B = (0.25, 0.1, 0.1, 0.1, 0.4)


@dataclass(frozen=True)
class Morphology:
    """Gaussian-wave parameters of the ECG: angles (rad, R at 0), amplitudes and widths.

    Arrays have shape ``(n, k)`` (one row per window) or ``(k,)``; ``k`` waves, the first five
    being P, Q, R, S, T. Extra waves (an ST-segment bump) are appended columns.
    """

    theta: np.ndarray
    a: np.ndarray
    b: np.ndarray

    def rows(self, n: int) -> Morphology:
        """The same morphology broadcast to ``n`` rows."""
        return Morphology(*(np.broadcast_to(np.atleast_2d(v), (n, np.shape(v)[-1])) for v in self))

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter((np.asarray(self.theta), np.asarray(self.a), np.asarray(self.b)))


DEFAULT_MORPHOLOGY = Morphology(np.array(_THETA), np.array(_A), np.array(_B))


def _rr_spectrum_amplitudes(
    freqs: np.ndarray, lf_hf: np.ndarray, resp_hz: np.ndarray, width: float = 0.01
) -> np.ndarray:
    """Amplitudes of the RR fluctuation's sinusoids, ``(n, F)``, normalized to unit variance.

    The spectrum is ECGSYN's bimodal one: a Gaussian peak at 0.1 Hz (Mayer waves, power
    ``lf_hf / (1 + lf_hf)``) and one at the respiratory frequency (respiratory sinus arrhythmia),
    both of standard deviation ``width`` Hz (McSharry et al. 2003, eq. 4: c1 = c2 = 0.01 Hz).
    """
    lf = lf_hf[:, None] / (1.0 + lf_hf[:, None])
    hf = 1.0 - lf
    s = lf * np.exp(-0.5 * ((freqs - 0.1) / width) ** 2) + hf * np.exp(
        -0.5 * ((freqs - resp_hz[:, None]) / width) ** 2
    )
    amp = np.sqrt(2.0 * s)
    # a sum of cosines with random phases has variance sum(amp^2) / 2
    return amp / np.sqrt(0.5 * np.sum(amp**2, axis=1, keepdims=True))


def sinus_beats(
    rng: np.random.Generator,
    rr_mean: np.ndarray,
    rr_cv: np.ndarray,
    lf_hf: np.ndarray,
    resp_hz: np.ndarray,
    t0: float,
    t1: float,
) -> np.ndarray:
    """Beat times (n, K) of sinus rhythm covering ``[t0, t1]`` (NaN-padded beyond the last beat).

    RR(t) = rr_mean (1 + rr_cv f(t)) with f a unit-variance sum of cosines on 0.01..0.5 Hz whose
    amplitudes follow the bimodal spectrum and whose phases are random (ECGSYN draws the RR
    series the same way, by an inverse FFT with random phases). The first beat falls a random
    fraction of an RR interval before ``t0``.
    """
    n = rr_mean.shape[0]
    freqs = np.arange(0.01, 0.5001, 0.01)
    amp = _rr_spectrum_amplitudes(freqs, lf_hf, resp_hz)
    phase = rng.uniform(0.0, 2 * np.pi, size=(n, freqs.size))

    def rr_at(t: np.ndarray) -> np.ndarray:
        f = np.sum(amp * np.cos(2 * np.pi * freqs * t[:, None] + phase), axis=1)
        return rr_mean * np.clip(1.0 + rr_cv * f, 0.5, 1.5)

    first = t0 - rng.uniform(0.0, 1.0, size=n) * rr_mean * 1.5
    return _accumulate(first, rr_at, t1)


def af_beats(
    rng: np.random.Generator, rr_mean: np.ndarray, rr_cv: np.ndarray, t0: float, t1: float
) -> np.ndarray:
    """Beat times (n, K) of atrial fibrillation: i.i.d. gamma RR intervals with mean ``rr_mean``
    and coefficient of variation ``rr_cv``, floored at 0.25 s (ventricular refractoriness)."""
    n = rr_mean.shape[0]
    shape = 1.0 / rr_cv**2

    def rr_at(t: np.ndarray) -> np.ndarray:
        return np.maximum(rng.gamma(shape, rr_mean / shape), 0.25)

    first = t0 - rng.uniform(0.0, 1.0, size=n) * rr_mean * 1.5
    return _accumulate(first, rr_at, t1)


def _accumulate(first: np.ndarray, rr_at, t1: float) -> np.ndarray:  # type: ignore[no-untyped-def]
    beats = [first]
    while np.nanmin(beats[-1]) <= t1:
        last = beats[-1]
        nxt = last + rr_at(np.nan_to_num(last))
        beats.append(np.where(last > t1, np.nan, nxt))
    return np.stack(beats, axis=1)


def beat_phase(t: np.ndarray, beats: np.ndarray) -> np.ndarray:
    """Unwrapped cardiac phase (n, L): ``2 pi k`` at the k-th beat (the R peak), linear between."""
    out = np.empty((beats.shape[0], t.size))
    for i, b in enumerate(beats):
        b = b[np.isfinite(b)]
        out[i] = np.interp(t, b, 2 * np.pi * np.arange(b.size), left=np.nan, right=np.nan)
    if not np.all(np.isfinite(out)):
        raise ValueError("beat_phase: the beats do not cover the time grid")
    return out


def hr_adjusted(morph: Morphology, hr: np.ndarray) -> Morphology:
    """ECGSYN's heart-rate adjustment (ecgsyn.m): widths times sqrt(HR/60); P and T angles times
    (HR/60)^(1/4), Q and S angles times sqrt(HR/60), so the waves keep their durations in time."""
    f1 = np.sqrt(hr / 60.0)[:, None]
    f2 = np.sqrt(f1)
    theta, a, b = morph
    scale = np.ones_like(theta)
    scale[:, 0], scale[:, 1], scale[:, 3], scale[:, 4] = f2[:, 0], f1[:, 0], f1[:, 0], f2[:, 0]
    return Morphology(theta * scale, a, b * f1)


def mcsharry_ecg(phase: np.ndarray, dt: float, morph: Morphology) -> np.ndarray:
    """z(t) of the McSharry model (n, L) for the phase ``theta(t)`` with z0 = 0, started at 0.

    ``dz/dt = -sum_i a_i dtheta_i exp(-dtheta_i^2 / (2 b_i^2)) - z`` where
    ``dtheta_i = (theta - theta_i) mod 2 pi`` wrapped to [-pi, pi). The trapezoidal rule gives
    ``z_{k+1} = ((1 - h/2) z_k + h/2 (u_k + u_{k+1})) / (1 + h/2)``, a first-order IIR filter.
    """
    from scipy.signal import lfilter

    theta, a, b = morph
    n = phase.shape[0]
    # the forcing is a function of the wrapped phase only: tabulate it per window on a fine
    # phase grid (512 points, about 7 per width of the narrowest wave) and interpolate linearly
    grid = np.linspace(-np.pi, np.pi, _PHASE_GRID + 1)
    table = np.zeros((n, grid.size))
    for i in range(theta.shape[1]):
        d = np.mod(grid[None, :] - theta[:, i : i + 1] + np.pi, 2 * np.pi) - np.pi
        table -= a[:, i : i + 1] * d * np.exp(-(d**2) / (2 * b[:, i : i + 1] ** 2))
    pos = (np.mod(phase + np.pi, 2 * np.pi)) * (_PHASE_GRID / (2 * np.pi))
    j = np.minimum(pos.astype(np.int64), _PHASE_GRID - 1)
    frac = pos - j
    u = (
        np.take_along_axis(table, j, axis=1) * (1 - frac)
        + np.take_along_axis(table, j + 1, axis=1) * frac
    )
    h = dt
    num = np.array([h / 2, h / 2]) / (1 + h / 2)
    den = np.array([1.0, -(1 - h / 2) / (1 + h / 2)])
    # initial state chosen so that z_0 = 0 exactly (z_0 = num[0] u_0 + zi)
    z, _ = lfilter(num, den, u, axis=1, zi=-num[0] * u[:, :1])
    return z


_SCALE_CACHE: dict[float, float] = {}
_PHASE_GRID = 512


def ecg_scale(dt: float) -> float:
    """Peak-to-trough height of z for the default morphology at 60 bpm, so that dividing by it
    puts a default ECG's R-to-S excursion at 1 (about 1 mV). ECGSYN instead rescales every
    signal to [-0.4, 1.2] mV, which would erase amplitude differences between systems."""
    if dt not in _SCALE_CACHE:
        t = np.arange(0.0, 6.0, dt)
        beats = np.arange(-1.0, 7.5, 1.0)[None, :]
        z = mcsharry_ecg(beat_phase(t, beats), dt, DEFAULT_MORPHOLOGY.rows(1))[0]
        last = z[t >= 4.0]
        _SCALE_CACHE[dt] = float(last.max() - last.min())
    return _SCALE_CACHE[dt]


def windkessel_ppg(
    t: np.ndarray,
    beats: np.ndarray,
    tau: np.ndarray,
    ejection_s: np.ndarray,
    delay_s: np.ndarray,
) -> np.ndarray:
    """Pressure (n, L) of a two-element Windkessel, ``P' = -P / tau + Q(t)`` (C = 1), for inflow
    ``Q(t) = sin(pi s / ejection)`` for ``0 <= s = t - beat - delay < ejection`` after every beat.

    Started at the mean pressure ``tau * mean(Q)`` of the mean RR; solved exactly for Q held
    constant over each step (``P <- e^{-h/tau} P + tau (1 - e^{-h/tau}) Q``).
    """
    n, L = beats.shape[0], t.size
    filled = np.where(np.isfinite(beats), beats, np.inf)
    last = np.empty((n, L), dtype=np.int64)  # index of the last beat at or before each t
    for i in range(n):
        last[i] = np.searchsorted(filled[i], t, side="right") - 1
    q = np.zeros((n, L))
    for back in range(4):  # a pulse outlasts at most three further beats (RR >= 0.25 s)
        k = last - back
        ok = k >= 0
        s = t[None, :] - np.take_along_axis(filled, np.maximum(k, 0), axis=1) - delay_s[:, None]
        on = ok & (s >= 0) & (s < ejection_s[:, None])
        q += np.where(on, np.sin(np.pi * np.clip(s, 0, None) / ejection_s[:, None]), 0.0)
    from scipy.signal import lfilter

    h = float(t[1] - t[0])
    decay = np.exp(-h / tau)
    gain = tau * (1 - decay)
    rr = np.nanmean(np.diff(beats, axis=1), axis=1)
    start = tau * (2 / np.pi) * ejection_s / rr  # the mean pressure
    p = np.empty((n, L))
    for i in range(n):
        p[i], _ = lfilter([gain[i]], [1.0, -decay[i]], q[i], zi=[decay[i] * start[i]])
    return p


def as_array(values: Mapping[str, np.ndarray], keys: tuple[str, ...]) -> np.ndarray:
    """Stack named per-row values into an (n, len(keys)) array."""
    return np.stack([np.asarray(values[k], dtype=np.float64) for k in keys], axis=1)
