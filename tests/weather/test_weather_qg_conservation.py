"""The two-layer QG solver conserves energy and each layer's enstrophy without forcing."""

from __future__ import annotations

import numpy as np

from icml26.envs.weather.qg import TwoLayerQG


def _invariants(m: TwoLayerQG) -> tuple[float, float, float]:
    """Total energy -1/2 sum_i delta_i <psi_i q_i> (equal layers: delta_i = 1/2) and the two
    layers' enstrophies <q_i^2> / 2, from grid fields."""
    shape = (m.ny, m.nx)
    q = np.fft.irfft2(m.qh, s=shape)
    psi = np.fft.irfft2(m.invert(m.qh), s=shape)
    energy = -0.25 * float((psi * q).mean(axis=(1, 2)).sum())
    z1, z2 = (0.5 * (q**2).mean(axis=(1, 2))).tolist()
    return energy, z1, z2


def test_unforced_qg_conserves_energy_and_layer_enstrophy_over_a_day() -> None:
    # No mean shear, no beta, no drag, no filter: only the Jacobian acts, which conserves
    # energy and each layer's enstrophy. Large scales only (|k|, |l| <= 2) at 5 m/s, so the day's
    # cascade stays far from the unfiltered grid's truncation (at 15 m/s it reaches it within the
    # day and aliasing breaks the invariants, which the production filter takes care of).
    m = TwoLayerQG(u1=0.0, u2=0.0, beta=0.0, rek=0.0)
    rng = np.random.default_rng(0)
    kk = np.abs(np.fft.fftfreq(m.ny, 1 / m.ny))[:, None]
    low = (kk <= 2) & (np.arange(m.nx // 2 + 1)[None, :] <= 2)
    ph = np.fft.rfft2(rng.normal(size=(2, m.ny, m.nx))) * low  # a real field's transform
    m.qh = m.pv_from_streamfunction(ph)
    u, v = m.velocities()
    m.qh *= 5.0 / np.sqrt((u**2 + v**2).mean())  # rms wind 5 m/s
    q0 = np.fft.irfft2(m.qh, s=(m.ny, m.nx))
    before = _invariants(m)
    for _ in range(40):  # one day of 2160 s steps
        m.step(nonlinear=True, filtered=False)
    after = _invariants(m)
    q1 = np.fft.irfft2(m.qh, s=(m.ny, m.nx))
    # the flow did evolve (nonlinearly: every linear term is switched off) ...
    assert np.linalg.norm(q1 - q0) > 0.1 * np.linalg.norm(q0)
    # ... and kept its invariants
    np.testing.assert_allclose(after, before, rtol=1e-5)
