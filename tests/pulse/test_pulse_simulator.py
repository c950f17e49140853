"""The pulse simulator: the dynamics against independent solvers, and the known factors
recoverable from the signals by oracle estimators but not from pure noise."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.signal import butter, filtfilt, find_peaks

from icml26.envs.pulse import cardiac
from icml26.envs.pulse.probes import ridge_r2
from icml26.envs.pulse.simulator import (
    SAMPLE_FACTORS,
    TRANSFERABLE_FACTORS,
    PhysioConfig,
    sample_systems,
    simulate,
)


def test_mcsharry_matches_an_adaptive_ode_solver() -> None:
    """The trapezoidal z-filter against scipy's RK45 on the McSharry z-equation (same phase)."""
    dt = 1 / 256
    t = np.arange(0.0, 4.0, dt)
    beats = np.array([[-0.7, 0.1, 0.95, 1.78, 2.7, 3.5, 4.4, 5.3]])
    morph = cardiac.hr_adjusted(cardiac.DEFAULT_MORPHOLOGY.rows(1), np.array([70.0]))
    z = cardiac.mcsharry_ecg(cardiac.beat_phase(t, beats), dt, morph)[0]
    theta, a, b = (v[0] for v in morph)

    def rhs(tt: float, y: np.ndarray) -> list[float]:
        ph = np.interp(tt, beats[0], 2 * np.pi * np.arange(beats.shape[1]))
        w = np.mod(ph + np.pi, 2 * np.pi) - np.pi
        d = np.mod(w - theta + np.pi, 2 * np.pi) - np.pi
        return [float(-np.sum(a * d * np.exp(-(d**2) / (2 * b**2))) - y[0])]

    ref = solve_ivp(rhs, (0.0, t[-1]), [0.0], t_eval=t, rtol=1e-9, atol=1e-12, max_step=dt / 4).y[0]
    scale = cardiac.ecg_scale(dt)
    assert np.max(np.abs(z - ref)) / scale < 0.01


def test_windkessel_steady_state_and_exponential_diastole() -> None:
    """P' = -P / tau + Q: under periodic ejection the pressure decays exactly as exp(-t / tau)
    once the ejection has ended, and its period mean equals tau * mean(Q)."""
    t = np.arange(0.0, 20.0, 1 / 512)
    beats = np.arange(-1.0, 21.0, 1.0)[None, :]
    tau = np.array([1.3])
    p = cardiac.windkessel_ppg(t, beats, tau, ejection_s=np.array([0.3]), delay_s=np.array([0.2]))[
        0
    ]
    # diastole of the beat at t = 15: ejection over [15.2, 15.5); decay from 15.6 to 15.9
    i0, i1 = np.searchsorted(t, 15.6), np.searchsorted(t, 15.9)
    np.testing.assert_allclose(p[i1] / p[i0], np.exp(-(t[i1] - t[i0]) / tau[0]), rtol=1e-9)
    mean_q = 0.3 * (2 / np.pi) / 1.0  # half-sine of 0.3 s per 1-s beat
    period = (t >= 15.0) & (t < 16.0)
    assert p[period].mean() == pytest.approx(tau[0] * mean_q, rel=2e-3)


def test_ecg_is_resolved_at_the_fine_rate() -> None:
    """256 Hz (the default) against 1024 Hz: < 2% of the R-to-S excursion after decimation."""
    from scipy.signal import resample_poly

    beats = np.arange(-3.0, 8.5, 0.83)[None, :]
    out = []
    for k in (16, 4):
        dt = 1 / (64 * k)
        t = np.arange(-3.0, 4.0, dt)
        m = cardiac.hr_adjusted(cardiac.DEFAULT_MORPHOLOGY.rows(1), np.array([72.0]))
        z = cardiac.mcsharry_ecg(cardiac.beat_phase(t, beats), dt, m) / cardiac.ecg_scale(dt)
        out.append(resample_poly(z[:, t.size - 256 * k :], 1, k, axis=1))
    assert np.max(np.abs(out[0] - out[1])) < 0.02


def test_rr_processes_have_the_drawn_variability() -> None:
    rng = np.random.default_rng(0)
    n = 400
    rr_mean = np.full(n, 0.8)
    af = cardiac.af_beats(rng, rr_mean, np.full(n, 0.2), 0.0, 30.0)
    rr = np.diff(af, axis=1)
    rr = rr[np.isfinite(rr)]
    assert rr.mean() == pytest.approx(0.8, rel=0.02)
    assert rr.std() / rr.mean() == pytest.approx(0.2, rel=0.05)
    sinus = cardiac.sinus_beats(
        rng, rr_mean, np.full(n, 0.04), np.full(n, 1.0), np.full(n, 0.25), 0.0, 30.0
    )
    rr = np.diff(sinus, axis=1)
    rr = rr[np.isfinite(rr)]
    assert rr.mean() == pytest.approx(0.8, rel=0.02)
    assert rr.std() / rr.mean() == pytest.approx(0.04, rel=0.2)


def test_simulate_is_seeded_balanced_and_finite() -> None:
    a = simulate(np.random.default_rng(3), 3, 2)
    b = simulate(np.random.default_rng(3), 3, 2)
    np.testing.assert_array_equal(a.windows, b.windows)
    assert a.windows.shape == (12, 2, 2, 256) and a.windows.dtype == np.float32
    assert np.bincount(a.labels).tolist() == [3, 3, 3, 3]
    assert np.all(np.isfinite(a.windows))
    for name in TRANSFERABLE_FACTORS:
        assert a.factors[name].shape == (12,)
    for name in SAMPLE_FACTORS:
        assert a.factors[name].shape == (12, 2)
    c = simulate(np.random.default_rng(4), 3, 2)
    assert not np.array_equal(a.windows, c.windows)


def test_classes_are_defined_by_the_dynamics() -> None:
    rng = np.random.default_rng(1)
    cfg = PhysioConfig()
    labels = np.repeat(np.arange(4), 200)
    s = sample_systems(rng, labels, cfg)
    af, bbb, ste = labels == 1, labels == 2, labels == 3
    assert np.all(s["p_amplitude"][af] == 0) and np.all(s["p_amplitude"][~af] > 0)
    assert s["rr_cv"][af].min() >= 0.12 > s["rr_cv"][~af].max()
    assert s["qrs_width"][bbb].min() >= 1.8 and np.all(s["qrs_width"][~bbb] == 1)
    assert np.all(s["t_amplitude"][bbb] < 0) and np.all(s["t_amplitude"][~bbb] > 0)
    assert np.all(s["st_level"][ste] >= 0.3) and np.all(s["st_level"][~ste] == 0)
    # heart rates overlap: a normal and an AF recording can share a rate
    assert s["heart_rate"][af].min() < s["heart_rate"][labels == 0].max()
    target = sample_systems(np.random.default_rng(1), labels, PhysioConfig(domain="target"))
    assert target["heart_rate"].mean() == pytest.approx(s["heart_rate"].mean() + 12.0, abs=2.0)
    assert np.median(target["a"][:, 3] / s["a"][:, 3]) == pytest.approx(2.2, rel=0.05)  # deep S


def _oracle_features(windows: np.ndarray, fs: float) -> np.ndarray:
    """Hand-made estimators per window: heart rate and RR irregularity from the pulse peaks of
    the band-passed PPG (or ECG R peaks when there is no PPG), baseline-wander RMS (ECG below
    0.5 Hz), noise sd (MAD of ECG second differences), QRS width (samples above half the R
    height) and ST level (mean 80-160 ms after R) from the ECG."""
    ecg = windows[:, 0].astype(np.float64)
    b, a = butter(2, [5 / (fs / 2), 25 / (fs / 2)], btype="band")
    bp = filtfilt(b, a, ecg, axis=1)
    if windows.shape[1] > 1:
        b3, a3 = butter(2, [0.7 / (fs / 2), 6 / (fs / 2)], btype="band")
        pulse = filtfilt(b3, a3, windows[:, 1].astype(np.float64), axis=1)
    else:
        pulse = None
    b2, a2 = butter(2, 0.5 / (fs / 2))
    low = filtfilt(b2, a2, ecg, axis=1)
    d2 = np.diff(ecg, n=2, axis=1)
    feats = []
    for i in range(ecg.shape[0]):
        peaks, _ = find_peaks(bp[i], distance=int(0.25 * fs), prominence=0.25 * np.ptp(bp[i]))
        beats = peaks
        if pulse is not None:
            beats, _ = find_peaks(
                pulse[i], distance=int(0.3 * fs), prominence=0.5 * np.std(pulse[i])
            )
        rr = np.diff(beats) / fs if beats.size > 2 else np.array([1.0, 1.0])
        det = ecg[i] - low[i]
        after = [
            det[p + int(0.08 * fs) : p + int(0.16 * fs)].mean()
            for p in peaks
            if p + int(0.16 * fs) < det.size
        ]
        widths = [np.sum(det[max(p - 6, 0) : p + 6] > det[p] / 2) for p in peaks]
        feats.append(
            [
                60.0 / np.median(rr),
                np.std(rr) / np.mean(rr),
                np.log(np.sqrt(np.mean((low[i] - low[i].mean()) ** 2)) + 1e-3),
                np.log(np.median(np.abs(d2[i] - np.median(d2[i]))) / (0.6745 * np.sqrt(6)) + 1e-4),
                np.mean(widths) if widths else 0.0,
                np.mean(after) if after else 0.0,
            ]
        )
    return np.asarray(feats)


def test_known_factors_are_recoverable_by_an_oracle_and_absent_from_noise() -> None:
    """Oracle estimators on the simulated windows recover heart rate, wander and noise level
    (held-out R^2 of a ridge probe on the estimates); the same estimators on white-noise windows
    of the same shape recover nothing (R^2 ~ 0)."""
    rng = np.random.default_rng(7)
    data = simulate(rng, 24, 2)
    x, _, rec = data.flat()
    names = ["heart_rate", "log_wander", "log_noise", "rr_cv", "qrs_width", "st_level"]
    y = data.factor_matrix(names)
    feats = _oracle_features(x, data.fs)
    train = rec % 3 != 0  # split by recording
    r2 = dict(zip(names, ridge_r2(feats[train], y[train], feats[~train], y[~train])))
    assert r2["heart_rate"] > 0.8
    assert r2["log_wander"] > 0.6
    assert r2["log_noise"] > 0.6
    noise = np.random.default_rng(8).normal(size=x.shape) * x.std(axis=(0, 2), keepdims=True)
    fn = _oracle_features(noise.astype(np.float32), data.fs)
    r2_noise = ridge_r2(fn[train], y[train], fn[~train], y[~train])
    assert np.all(r2_noise < 0.1), dict(zip(names, r2_noise))


def test_clean_signals_give_exact_heart_rate_and_class_features() -> None:
    """Without nuisance, R peaks give the heart rate of sinus windows (R^2 > 0.95; in AF a 4-s
    window's median RR scatters around the mean by design); QRS width separates bundle-
    branch block, RR irregularity separates AF, the ST level separates ST elevation."""
    cfg = PhysioConfig(noise_scale=0.0, wander_scale=0.0, artefact_scale=0.0, channels=("ecg",))
    data = simulate(np.random.default_rng(9), 12, 2, cfg)
    x, lab, rec = data.flat()
    f = _oracle_features(x, data.fs)
    hr = data.factor_matrix(["heart_rate"])[:, 0]
    sinus = lab != 1
    assert np.corrcoef(f[sinus, 0], hr[sinus])[0, 1] ** 2 > 0.95
    assert f[lab == 1, 1].mean() > 3 * f[lab != 1, 1].mean()  # AF: irregular RR
    assert f[lab == 2, 4].mean() > 1.3 * f[lab != 2, 4].mean()  # BBB: wide QRS
    assert f[lab == 3, 5].mean() > f[lab != 3, 5].mean() + 0.05  # STE: raised ST segment


@pytest.mark.parametrize(
    "bad", [{"domain": "moon"}, {"channels": ("eeg",)}, {"classes": ("af",)}, {"fs": 8.0}]
)
def test_config_rejects_bad_values(bad: dict) -> None:
    with pytest.raises(ValueError, match="PhysioConfig"):
        PhysioConfig(**bad)
    with pytest.raises(TypeError, match="unknown option"):
        PhysioConfig.from_kwargs(noise=1.0)


def test_same_seed_same_data_across_processes() -> None:
    """No set/dict iteration order reaches the random stream (PYTHONHASHSEED differs)."""
    import os
    import subprocess
    import sys

    code = (
        "import numpy as np, hashlib; from icml26.envs.pulse.simulator import simulate;"
        "d = simulate(np.random.default_rng(0), 2, 1); print(hashlib.sha256(d.windows.tobytes()).hexdigest())"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(h)},
        ).stdout
        for h in (1, 2, 3)
    }
    assert len(outs) == 1
