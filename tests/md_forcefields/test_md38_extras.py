"""Issue 38 pieces: DKMP^R rank-dilated neighbours, equivariant DKMP, NVE velocity Verlet and
drift, and the per-element null baseline."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.agents.md_forcefields.agent import ConstantEnergyAgent
from icml26.agents.md_forcefields.models import (
    EquivariantDKMP,
    _rank_pairs,
    build_model,
    rank_dilated_neighbours,
)
from icml26.envs.md_forcefields.nve import energy_drift, velocity_verlet

# atoms on a line at x = 0, 1, 3, 6, 10; distance orders worked by hand (ties by index):
# 0: [1, 2, 3, 4]  1: [0, 2, 3, 4]  2: [1, 0, 3, 4] (0 and 3 both at 3)  3: [2, 4, 1, 0]  4: [3, 2, 1, 0]
LINE = np.array([[0.0, 0, 0], [1, 0, 0], [3, 0, 0], [6, 0, 0], [10, 0, 0]])


def test_rank_dilated_neighbours_hand_worked() -> None:
    # K=1, d=2: shell 0 = rank 2, shell 1 = rank 4
    assert rank_dilated_neighbours(LINE, k=1, dilation=2, shells=2) == [
        [[2], [2], [0], [4], [2]],
        [[4], [4], [4], [0], [0]],
    ]
    # K=2, d=1: shell 0 = ranks 1, 2; shell 1 = ranks 3, 4
    assert rank_dilated_neighbours(LINE, k=2, dilation=1, shells=2) == [
        [[1, 2], [0, 2], [1, 0], [2, 4], [3, 2]],
        [[3, 4], [3, 4], [3, 4], [1, 0], [1, 0]],
    ]
    # K=2, d=2: shell 0 = ranks 2, 4; shell 1 = ranks 6, 8 (beyond the 4 neighbours: empty)
    nb = rank_dilated_neighbours(LINE, k=2, dilation=2, shells=2)
    assert nb[0] == [[2, 4], [2, 4], [0, 4], [4, 0], [2, 0]]
    assert nb[1] == [[]] * 5
    with pytest.raises(ValueError, match="k, dilation, shells >= 1"):
        rank_dilated_neighbours(LINE, k=0, dilation=1, shells=1)


def _dense_rank_reference(x: np.ndarray, k: int, dilation: int, shells: int) -> list:
    """The O(N^2) definition: full distance matrix, per-atom lexsort (distance, then index)."""
    n = len(x)
    d = np.linalg.norm(x[:, None] - x[None], axis=-1)
    out: list = [[[] for _ in range(n)] for _ in range(shells)]
    for i in range(n):
        order = [j for j in np.lexsort((np.arange(n), d[i])) if j != i]  # order[r-1] = rank r
        for sh in range(shells):
            ranks = [sh * k * dilation + dilation * m for m in range(1, k + 1)]
            out[sh][i] = [int(order[r - 1]) for r in ranks if r <= len(order)]
    return out


@pytest.mark.parametrize("seed", range(6))
def test_rank_dilated_neighbours_kdtree_equals_dense(seed: int) -> None:
    g = np.random.default_rng(seed)
    n = int(g.integers(2, 160))
    clusters = [
        g.normal(size=(n, 3)) * 3.0,  # random cluster, no ties
        g.integers(-2, 3, size=(n, 3)).astype(float),  # lattice points: many exact ties, duplicates
        np.repeat(g.normal(size=(max(1, n // 4), 3)), 4, axis=0)[:n],  # groups of coincident atoms
    ]
    for x in clusters:
        for k, dil, sh in [(1, 1, 1), (2, 1, 3), (3, 2, 2), (8, 1, 4), (4, 3, 2)]:
            assert rank_dilated_neighbours(x, k, dil, sh) == _dense_rank_reference(x, k, dil, sh)


def test_rank_dilated_neighbours_lattice_ties_hand_checked() -> None:
    # 3 x 3 x 1 grid, spacing 1: the centre (index 4) has 4 neighbours at 1 (1, 3, 5, 7) and 4 at
    # sqrt 2 (0, 2, 6, 8); with K=3, d=1 shell 0 = ranks 1-3 = [1, 3, 5], shell 1 = [7, 0, 2]
    grid = np.array([[i, j, 0.0] for i in range(3) for j in range(3)])
    nb = rank_dilated_neighbours(grid, k=3, dilation=1, shells=2)
    assert nb[0][4] == [1, 3, 5] and nb[1][4] == [7, 0, 2]


def test_dkmp_r_model_uses_rank_pairs_batched() -> None:
    pos = torch.as_tensor(np.stack([LINE, LINE + 1.0]))
    (p0,) = _rank_pairs(pos, 1, 2, 1)
    want = [[0, 2], [1, 2], [2, 0], [3, 4], [4, 2]]
    assert p0.T.tolist() == want + [[i + 5, j + 5] for i, j in want]
    torch.manual_seed(0)
    m = build_model("dkmp-r", hidden=8, k=2, dilation=1, shells=2).double()
    e, f = m.energy_forces(pos, torch.tensor([6, 1, 8, 6, 1]))
    assert e.shape == (2,) and f.shape == (2, 5, 3)
    assert torch.allclose(e[0], e[1]) and torch.allclose(f[0], f[1])  # translation invariant


def _cluster(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = np.random.default_rng(seed)
    return torch.as_tensor(g.uniform(-2.5, 2.5, (1, 7, 3))), torch.tensor([6, 6, 1, 1, 8, 7, 1])


def test_equivariant_dkmp_rotation_and_conservative() -> None:
    torch.manual_seed(1)
    m = EquivariantDKMP(hidden=12, radii=(1.5, 3.0, 4.5, 9.0), n_rbf=8).double()
    for p in (
        m.parameters()
    ):  # non-trivial weights everywhere (the output head starts near zero otherwise)
        torch.nn.init.normal_(p, std=0.3)
    pos, z = _cluster(3)
    q, _ = np.linalg.qr(np.random.default_rng(4).normal(size=(3, 3)))
    q *= np.sign(np.linalg.det(q))  # proper rotation
    rot = torch.as_tensor(q)
    e, f = (t.detach() for t in m.energy_forces(pos, z))
    e2, f2 = (t.detach() for t in m.energy_forces(pos @ rot.T + 0.7, z))
    assert float(f.abs().max()) > 1e-3
    assert abs(float(e - e2)) < 1e-9 * max(1.0, abs(float(e)))
    assert torch.allclose(f2, f @ rot.T, atol=1e-8, rtol=1e-7)
    # forces = -dE/dx by central differences
    h = 1e-5
    for a, c in [(0, 0), (3, 1), (6, 2)]:
        dp = torch.zeros_like(pos)
        dp[0, a, c] = h
        fd = (-(m.energy(pos + dp, z) - m.energy(pos - dp, z)) / (2 * h)).detach()
        assert abs(float(fd[0] - f[0, a, c])) < 1e-6 * max(1.0, abs(float(f[0, a, c])))


def test_equivariant_dkmp_runs_through_the_agent() -> None:
    from icml26.agents.md_forcefields.agent import ForceFieldAgent

    ag = ForceFieldAgent("dkmp-eq", model_kwargs={"hidden": 8})
    ag.set_numbers([6, 1, 8])
    e, f = ag.predict(np.array([[0.0, 0, 0], [1.1, 0, 0], [0, 1.3, 0]]))
    assert np.isfinite(e) and f.shape == (3, 3)


def test_velocity_verlet_harmonic_energy_bound() -> None:
    # U = k/2 |x|^2 per particle. Velocity Verlet conserves exactly (up to rounding) the shadow
    # energy H~ = m v^2/2 + k x^2/2 (1 - (w h)^2/4), w^2 = k/m, so the true energy E = H~ +
    # k x^2/2 (w h)^2/4 lies in [H~, H~ / (1 - (w h)^2/4)]: |E_t - E_0| <= H~ a/(1 - a), a = (w h)^2/4.
    k, mass, h = 2.0, np.array([1.0, 3.0]), 0.05
    force = lambda x: (0.5 * k * float((x**2).sum()), -k * x)  # noqa: E731
    x0 = np.array([[1.0, 0.0, 0.5], [0.0, -0.4, 0.2]])
    v0 = np.array([[0.0, 0.3, 0.0], [0.1, 0.0, 0.0]])
    out = velocity_verlet(x0, v0, mass, force, h, 4000)
    w2 = k / mass[:, None]
    a = w2 * h**2 / 4
    shadow = (
        0.5 * mass[None, :, None] * out["velocities"] ** 2
        + 0.5 * k * out["positions"] ** 2 * (1 - a[None])
    ).sum(axis=(1, 2))
    assert np.ptp(shadow) < 1e-12
    amax = float(a.max())
    dev = np.abs(out["total"] - out["total"][0]).max()
    assert dev <= shadow[0] * amax / (1 - amax) + 1e-12
    assert dev > 0.1 * shadow[0] * float(a.min())  # the bound is of the right order, not slack
    d = energy_drift(out["total"], h, 2)
    assert abs(d["drift_per_atom_per_time"]) < 1e-4
    assert d["max_dev_per_atom"] == pytest.approx(dev / 2)


def test_energy_drift_linear_slope() -> None:
    e = 5.0 + 0.3 * np.arange(11) * 0.1
    d = energy_drift(e, 0.1, 3)
    assert d["drift_per_atom_per_time"] == pytest.approx(0.1)
    assert d["max_dev_per_atom"] == pytest.approx(0.1)


def test_null_agent_least_squares() -> None:
    class F:
        numbers = np.array([6, 1, 1])
        energies = np.array([1.0, 2.0, 3.0])

        def __len__(self) -> int:
            return 3

    ag = ConstantEnergyAgent()
    ag.learn(F())
    e, f = ag.predict(np.zeros((2, 3, 3)))
    # one composition: least squares gives the mean energy for every frame
    assert e == pytest.approx([2.0, 2.0]) and not f.any()
    assert not ag.act(np.ones((3, 3))).any()


def test_new_agents_registered() -> None:
    from icml26 import agents

    assert isinstance(agents.make("md-null"), ConstantEnergyAgent)
    assert isinstance(agents.make("md-dkmp-eq").model, EquivariantDKMP)
    r = agents.make("md-dkmp-r")
    assert (r.model.k, r.model.dilation, r.model.shells) == (8, 1, 4)


def test_velocity_verlet_accel_scale_is_a_unit_change() -> None:
    # scaling a by c and dividing KE by c = the same run as force c*U with KE unchanged, over c
    force = lambda x: (float((x**2).sum()), -2.0 * x)  # noqa: E731
    force_c = lambda x: (418.4 * float((x**2).sum()), -2.0 * 418.4 * x)  # noqa: E731
    x0, v0 = np.array([[0.1, 0.0, 0.0]]), np.array([[0.0, 2.0, 0.0]])
    a = velocity_verlet(x0, v0, np.array([12.0]), force, 1e-3, 50, accel_scale=418.4)
    b = velocity_verlet(x0, v0, np.array([12.0]), force_c, 1e-3, 50)
    assert np.allclose(a["positions"], b["positions"], rtol=1e-12, atol=1e-14)
    assert np.allclose(a["total"] * 418.4, b["total"], rtol=1e-12)
