"""Alanine-dipeptide MD data sets made locally with OpenMM Langevin dynamics, cached on disk.

* ``"unbiased"``: temperature replica exchange (parallel tempering) on a geometric ladder from
  300 K; only the 300 K replica is kept, so the frames are 300 K Boltzmann samples, and the
  exchanges carry it over the phi > 0 barrier that a plain 300 K run of a few ns almost never
  crosses.
* ``"biased"``: a plain Langevin run at the bias temperature (600 K by default).

Both are labelled with the reduced *target* energy ``U / (k_B * 300 K)``, evaluated by OpenMM on
the stored float32 coordinates. Runs use the Reference platform in vacuum (deterministic; the
fastest for 22 atoms) and the one-thread CPU platform with OBC1, ``LangevinMiddleIntegrator`` with 1 fs steps and 1/ps friction, no constraints.
Each pool is cached under ``$ICML26_CACHE/boltzmann/md/`` keyed by every parameter; generation
shows a progress bar. Presets: ``"full"`` (v1 data: one long run per pool, frames every 0.1 ps),
``"tiny"`` (tests; well under a second) and the decorrelated presets (v2 data, the default of
``icml26/BoltzmannAlanineDipeptide-v1``):

* ``"decorrelated"``: every pool is made of several *independent* runs (own seeds, own burn-in);
  the integrated autocorrelation time (IAT, :func:`integrated_autocorrelation_time`) of cos/sin of
  phi and psi and of the energy is estimated per run, and training pools keep every
  ``stride``-th frame, ``stride`` = the largest IAT over runs and observables, so ``N``
  configurations are about ``N`` independent ones. Test pools keep every frame (metrics are
  averages) with the run of each frame (``run_id``), so a metric's noise floor can compare two
  independent runs. Stored diagnostics: the phi > 0 population of each run, its running value
  over simulation time, every IAT, the stride and the exchange acceptances
  (:func:`pool_diagnostics`). About 5 CPU-minutes once; ``"decorrelated-long"`` runs 4x longer.
* ``"converged"`` (issue 40; the default of ``icml26/BoltzmannAlanineDipeptide-v2``): the same
  construction with a hotter ladder (300-947 K, five replicas) and 8 training + 4 test runs of
  7.5 ns each, so that the training pool holds >= 10^4 decorrelated configurations and the
  phi > 0 share of independent runs agrees with their own standard errors
  (:func:`phi_share_agreement`). About 2.5 CPU-hours once; every run is cached on its own
  (``alanine_runs`` makes them, in parallel if asked), so an interrupted generation resumes.
* ``"tiny-decorrelated"``: the same construction at test size.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from icml26.envs.boltzmann.datasets import BoltzmannDataset, cached_arrays, progress_bar
from icml26.protocol import derive_seed

if TYPE_CHECKING:
    from icml26.envs.boltzmann.alanine import AlanineDipeptide

__all__ = [
    "MDPreset",
    "PRESETS",
    "run_langevin",
    "alanine_pool",
    "integrated_autocorrelation_time",
    "pool_diagnostics",
    "phi_share_agreement",
    "alanine_runs",
    "pool_cached",
]


@dataclass(frozen=True)
class MDPreset:
    """Run lengths of one data preset (frames are ``stride`` steps of 1 fs apart)."""

    ladder: tuple[float, ...]  # temperatures above 300 K of the replica-exchange ladder
    frames: tuple[tuple[str, int], ...]  # (split, frames) of the unbiased pools
    biased_frames: tuple[tuple[str, int], ...]
    stride: int
    burn_in_frames: int
    timestep_fs: float = 1.0
    friction_per_ps: float = 1.0
    # v2 (decorrelated) presets: (split, independent runs); ``frames`` is then per run and
    # training pools are thinned by the IAT. Empty: v1, one run per pool, no thinning.
    runs: tuple[tuple[str, int], ...] = ()


_V2_LADDER = (400.0, 533.0, 710.0)  # 4 replicas (ratio 1.33): 25-30% exchange acceptance measured

PRESETS: dict[str, MDPreset] = {
    # 6 replicas (ratio 1.217): ~20-40% exchange acceptance for 66 degrees of freedom.
    "full": MDPreset(
        ladder=(365.0, 444.0, 540.0, 657.0, 800.0),
        frames=(("train", 30_000), ("test", 10_000)),
        biased_frames=(("train", 30_000), ("test", 5_000)),
        stride=100,
        burn_in_frames=1000,
    ),
    "tiny": MDPreset(
        ladder=(450.0,),
        frames=(("train", 256), ("test", 128)),
        biased_frames=(("train", 256), ("test", 64)),
        stride=10,
        burn_in_frames=20,
    ),  # 4 + 2 independent 600 ps replica-exchange runs (300 K kept); ~5 CPU-minutes in all
    "decorrelated": MDPreset(
        ladder=_V2_LADDER,
        frames=(("train", 6000), ("test", 6000)),
        biased_frames=(("train", 6000), ("test", 3000)),
        stride=100,
        burn_in_frames=500,
        runs=(("train", 4), ("test", 2)),
    ),
    "decorrelated-long": MDPreset(
        ladder=_V2_LADDER,
        frames=(("train", 12000), ("test", 12000)),
        biased_frames=(("train", 12000), ("test", 6000)),
        stride=100,
        burn_in_frames=500,
        runs=(("train", 8), ("test", 4)),
    ),
    # issue 40: >= 10^4 training configurations from runs whose phi > 0 shares agree; the top
    # replica at 947 K (ratio 1.33 as above) crosses the phi barrier often
    "converged": MDPreset(
        ladder=(*_V2_LADDER, 947.0),
        frames=(("train", 75_000), ("test", 75_000)),
        biased_frames=(("train", 6000), ("test", 3000)),
        stride=100,
        burn_in_frames=1000,
        runs=(("train", 8), ("test", 4)),
    ),
    "tiny-decorrelated": MDPreset(
        ladder=(450.0,),
        frames=(("train", 600), ("test", 100)),
        biased_frames=(("train", 600), ("test", 100)),
        stride=20,
        burn_in_frames=20,
        runs=(("train", 2), ("test", 2)),
    ),
}


def run_langevin(
    solvent: str,
    temperatures: tuple[float, ...],
    n_frames: int,
    stride: int,
    burn_in_frames: int,
    seed: int,
    timestep_fs: float = 1.0,
    friction_per_ps: float = 1.0,
    progress: bool = True,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Langevin MD of alanine dipeptide (replica exchange when ``len(temperatures) > 1``).

    Returns the frames of the ``temperatures[0]`` replica, ``(n_frames, 66)`` float64 nm, and
    diagnostics (exchange acceptance per neighbouring pair). Exchanges between neighbours
    (alternating even and odd pairs) are attempted after every frame with probability
    ``min(1, exp((b_i - b_j)(U_i - U_j)))``; velocities are rescaled by sqrt(T_new / T_old).
    """
    import openmm
    from openmm import unit

    from icml26.envs.boltzmann.openmm_energy import (
        KB_KJ_PER_MOL_K,
        build_system,
        default_platform,
        make_context,
    )

    system, _, pos0 = build_system(solvent)
    rng = np.random.default_rng(derive_seed(seed, "exchange"))
    contexts, integrators = [], []
    for k, t in enumerate(temperatures):
        integ = openmm.LangevinMiddleIntegrator(
            t * unit.kelvin, friction_per_ps / unit.picosecond, timestep_fs * unit.femtosecond
        )
        integ.setRandomNumberSeed(int(derive_seed(seed, "integrator", k) % 2**31))
        ctx = make_context(system, integ, default_platform(solvent))
        ctx.setPositions(pos0)
        if k == 0:
            openmm.LocalEnergyMinimizer.minimize(ctx)
            pos0 = ctx.getState(getPositions=True).getPositions(asNumpy=True)
            ctx.setPositions(pos0)
        ctx.setVelocitiesToTemperature(
            t * unit.kelvin, int(derive_seed(seed, "velocities", k) % 2**31)
        )
        contexts.append(ctx)
        integrators.append(integ)
    beta = 1.0 / (KB_KJ_PER_MOL_K * np.asarray(temperatures))
    n_pairs = len(temperatures) - 1
    tried, accepted = np.zeros(max(n_pairs, 1)), np.zeros(max(n_pairs, 1))
    frames = np.empty((n_frames, 66))
    total = burn_in_frames + n_frames
    bar = progress_bar(
        total,
        f"MD {solvent} {temperatures[0]:g} K" + (f" + {n_pairs} replicas" if n_pairs else ""),
        progress,
    )
    for f in range(total):
        for integ in integrators:
            integ.step(stride)
        if n_pairs:
            states = [
                c.getState(getPositions=True, getVelocities=True, getEnergy=True) for c in contexts
            ]
            pos = [s.getPositions(asNumpy=True)._value for s in states]
            vel = [s.getVelocities(asNumpy=True)._value for s in states]
            energy = np.array([s.getPotentialEnergy()._value for s in states])
            changed = set()
            for i in range(f % 2, n_pairs, 2):
                j = i + 1
                tried[i] += 1
                if np.log(rng.random()) < (beta[i] - beta[j]) * (energy[i] - energy[j]):
                    accepted[i] += 1
                    pos[i], pos[j] = pos[j], pos[i]
                    scale = np.sqrt(temperatures[i] / temperatures[j])
                    vel[i], vel[j] = vel[j] * scale, vel[i] / scale
                    energy[i], energy[j] = energy[j], energy[i]
                    changed.update((i, j))
            for k in changed:
                contexts[k].setPositions(pos[k])
                contexts[k].setVelocities(vel[k])
            current = pos[0]
        else:
            current = contexts[0].getState(getPositions=True).getPositions(asNumpy=True)._value
        if f >= burn_in_frames:
            frames[f - burn_in_frames] = np.asarray(current).reshape(-1)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    acceptance = (accepted / np.maximum(tried, 1)).tolist() if n_pairs else []
    return frames, {"exchange_acceptance": acceptance}


OBSERVABLES = ("cos_phi", "sin_phi", "cos_psi", "sin_psi", "energy")


def integrated_autocorrelation_time(a: np.ndarray, c: float = 5.0) -> float:
    """Integrated autocorrelation time ``tau = 1 + 2 sum_{k=1}^{M} rho_k`` of a 1-D series, in
    frames, with Sokal's automatic window (the smallest ``M >= c * tau``); ``n / tau`` is the
    effective number of independent samples. 1 for a constant series."""
    a = np.asarray(a, dtype=np.float64).ravel()
    n = a.size
    if n < 2:
        raise ValueError(f"integrated_autocorrelation_time: need at least 2 values, got {n}")
    a = a - a.mean()
    var = float(np.dot(a, a))
    if var == 0.0:
        return 1.0
    f = np.fft.rfft(a, 2 * n)
    rho = np.fft.irfft(f * np.conj(f))[:n] / var
    tau = 1.0 + 2.0 * np.cumsum(rho[1:])
    window = np.arange(1, n)
    ok = window >= c * tau
    m = int(np.argmax(ok)) if ok.any() else n - 2
    return float(max(tau[m], 1.0))


def _observables(x: np.ndarray, energy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """phi and the :data:`OBSERVABLES` ``(n, 5)`` of frames ``x`` with energies ``energy``."""
    import torch

    from icml26.envs.boltzmann.geometry import ramachandran

    phi, psi = (t.numpy() for t in ramachandran(torch.from_numpy(np.asarray(x, np.float64))))
    obs = np.stack([np.cos(phi), np.sin(phi), np.cos(psi), np.sin(psi), energy], 1)
    return phi, obs


def _independent_runs(
    target: AlanineDipeptide,
    temps: tuple[float, ...],
    preset: MDPreset,
    n_runs: int,
    n_frames: int,
    thin: bool,
    seed: int,
    progress: bool,
) -> dict[str, np.ndarray]:
    """``n_runs`` independent runs; frames labelled, IAT-thinned when ``thin``, with diagnostics."""
    runs = [_one_run(target, temps, preset, r, n_frames, seed, progress) for r in range(n_runs)]
    stride = int(np.ceil(max(float(r["iat"].max()) for r in runs))) if thin else 1
    return {
        "x": np.concatenate([r["x"][::stride] for r in runs]),
        "energy": np.concatenate([r["energy"][::stride] for r in runs]),
        "run_id": np.concatenate(
            [np.full(len(r["x"][::stride]), k, np.int64) for k, r in enumerate(runs)]
        ),
        "stride": np.asarray(stride, np.int64),
        "iat": np.stack([r["iat"] for r in runs]),
        "iat_phi_positive": np.array([r["iat_phi_positive"] for r in runs]),
        "phi_positive": np.array([r["phi_positive"] for r in runs]),
        "phi_positive_curve": np.stack([r["phi_positive_curve"] for r in runs]),
        "exchange_acceptance": np.stack([r["exchange_acceptance"] for r in runs]),
    }


def _run_params(
    target: AlanineDipeptide, temps: tuple[float, ...], preset: MDPreset, n_frames: int, seed: int
) -> dict[str, Any]:
    return {
        "solvent": target.solvent,
        "temperatures": tuple(temps),
        "label_temperature": target.temperature,
        "frames": int(n_frames),
        "stride": preset.stride,
        "burn_in_frames": preset.burn_in_frames,
        "timestep_fs": preset.timestep_fs,
        "friction_per_ps": preset.friction_per_ps,
        "seed": int(seed),
        "version": 1,
    }


def _one_run(
    target: AlanineDipeptide,
    temps: tuple[float, ...],
    preset: MDPreset,
    r: int,
    n_frames: int,
    seed: int,
    progress: bool,
) -> dict[str, Any]:
    """Run ``r`` of a pool (cached on its own, keyed by every parameter and its own seed):
    labelled frames, IATs, the phi > 0 indicator's share, running share and IAT."""
    run_seed = derive_seed(seed, "run", r)

    def make() -> dict[str, np.ndarray]:
        from icml26.envs.boltzmann.openmm_energy import OpenMMEnergy

        x, diag = run_langevin(
            target.solvent,
            temps,
            n_frames,
            preset.stride,
            preset.burn_in_frames,
            run_seed,
            preset.timestep_fs,
            preset.friction_per_ps,
            progress,
        )
        x32 = x.astype(np.float32)
        e, _ = OpenMMEnergy(target.solvent)(
            x32.astype(np.float64)
        )  # labels of the stored coordinates
        return {
            "x": x32,
            "energy": e / target.kt,
            "exchange_acceptance": np.asarray(diag["exchange_acceptance"], np.float64),
        }

    a = cached_arrays("md-run", _run_params(target, temps, preset, n_frames, run_seed), make)
    u = a["energy"]
    phi, obs = _observables(a["x"], u)
    pos = (phi > 0).astype(np.float64)
    checkpoints = np.linspace(n_frames / 10, n_frames, 10).astype(int)
    return {
        "x": a["x"],
        "energy": u,
        "iat": np.asarray(
            [integrated_autocorrelation_time(obs[:, k]) for k in range(obs.shape[1])]
        ),
        "iat_phi_positive": integrated_autocorrelation_time(pos),
        "phi_positive": pos.mean(),
        "phi_positive_curve": np.array([pos[:m].mean() for m in checkpoints]),
        "exchange_acceptance": a["exchange_acceptance"],
    }


def alanine_runs(
    target: AlanineDipeptide, kind: str, split: str, runs: list[int] | None = None, workers: int = 1
) -> int:
    """Make (and cache) the independent runs of a decorrelated pool, ``workers`` at a time; the
    pool itself is then assembled from the cache. Returns the number of runs made or found."""
    preset = PRESETS[target.data_preset]
    if not preset.runs:
        raise ValueError(f"alanine_runs: preset {target.data_preset!r} has no independent runs")
    params = _pool_params(target, kind, split)
    temps, n_frames = tuple(params["temperatures"]), int(params["frames"])
    seed = derive_seed(0, "aldp", target.solvent, kind, split)
    todo = list(range(int(params["runs"]))) if runs is None else list(runs)
    if workers <= 1:
        for r in todo:
            _one_run(target, temps, preset, r, n_frames, seed, True)
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as ex:
            list(
                ex.map(
                    _one_run,
                    *zip(*[(target, temps, preset, r, n_frames, seed, False) for r in todo]),
                )
            )
    return len(todo)


def pool_cached(target: AlanineDipeptide, kind: str, split: str) -> bool:
    """Whether the pool ``kind`` / ``split`` is on disk (reading it then costs no simulation)."""
    from icml26.envs.boltzmann.datasets import cache_path

    return cache_path("md", _pool_params(target, kind, split)).exists()


def phi_share_agreement(diag: dict[str, Any]) -> dict[str, Any]:
    """Between-run against within-run spread of the phi > 0 share of a decorrelated pool
    (:func:`pool_diagnostics` output): each run's own standard error ``sqrt(p (1 - p) tau / n)``
    (tau its IAT of the indicator phi > 0, n its frames), the between-run SD of the shares, and
    their ratio SD / RMS(SE) -- about 1 when every run sampled one converged distribution, above
    it when the runs disagree by more than their own statistics claim."""
    p = np.asarray(diag["phi_positive_per_run"], dtype=float)
    tau = np.maximum(np.asarray(diag["iat_phi_positive_frames"], dtype=float), 1.0)
    n = diag["ns_per_run"] * 1e3 / diag["frame_ps"]  # frames per run
    se = np.sqrt(p * (1 - p) * tau / n)
    sd = float(p.std(ddof=1)) if p.size > 1 else float("nan")
    rms = float(np.sqrt(np.mean(se**2)))
    return {
        "between_sd": sd,
        "within_se": se.tolist(),
        "rms_within_se": rms,
        "ratio": sd / rms if rms > 0 else float("inf"),
    }


def pool_diagnostics(pool: BoltzmannDataset) -> dict[str, Any]:
    """Convergence diagnostics of a decorrelated (v2) pool: the phi > 0 population per independent
    run with its mean and between-run standard error, its running value (10 checkpoints of
    simulation time), the IAT (frames of ``stride_fs``) per run and observable, the thinning
    stride, and the number of frames kept. Raises for v1 pools (one run, no diagnostics)."""
    m = pool.meta
    if "phi_positive" not in m:
        raise ValueError("pool_diagnostics: only decorrelated (v2) pools carry diagnostics")
    pos = np.asarray(m["phi_positive"], dtype=np.float64)
    return {
        "runs": int(pos.size),
        "ns_per_run": m["frames"] * m["stride"] * m["timestep_fs"] * 1e-6,
        "frame_ps": m["stride"] * m["timestep_fs"] * 1e-3,
        "phi_positive_per_run": pos.tolist(),
        "phi_positive_mean": float(pos.mean()),
        "phi_positive_se": float(pos.std(ddof=1) / np.sqrt(pos.size)) if pos.size > 1 else None,
        "phi_positive_curve": m["phi_positive_curve"],
        "iat_frames": dict(zip(OBSERVABLES, np.asarray(m["iat"]).max(0).tolist())),
        "iat_phi_positive_frames": m["iat_phi_positive"],
        "thinning_stride": int(m["thinning_stride"]),
        "frames_kept": len(pool),
        "exchange_acceptance": m["exchange_acceptance"],
    }


def _pool_params(target: AlanineDipeptide, kind: str, split: str) -> dict[str, Any]:
    """The cache key of a pool: every parameter that changes its frames."""
    preset = PRESETS[target.data_preset]
    frames = dict(preset.frames if kind == "unbiased" else preset.biased_frames)
    if split not in frames:
        raise ValueError(f"{target.name}: no {kind}/{split} pool in preset {target.data_preset!r}")
    temps = (
        (target.temperature, *preset.ladder) if kind == "unbiased" else (target.bias_temperature,)
    )
    params = {
        "solvent": target.solvent,
        "kind": kind,
        "split": split,
        "temperatures": temps,
        "label_temperature": target.temperature,
        "frames": frames[split],
        **{
            k: v
            for k, v in asdict(preset).items()
            if k not in ("ladder", "frames", "biased_frames", "runs")
        },
        "version": 1,
    }
    if preset.runs:  # v2: independent runs, training pools thinned by the IAT
        params.update(runs=dict(preset.runs)[split], thin=split == "train", version=2)
    return params


def alanine_pool(
    target: AlanineDipeptide, kind: str, split: str, progress: bool = True
) -> BoltzmannDataset:
    """The cached MD pool ``kind`` / ``split`` of ``target`` (generated on first use)."""
    preset = PRESETS[target.data_preset]
    params = _pool_params(target, kind, split)
    frames = {split: params["frames"]}
    temps = tuple(params["temperatures"])
    seed = derive_seed(0, "aldp", target.solvent, kind, split)
    if preset.runs:
        return _v2_pool(target, kind, split, params, seed, progress)

    def make() -> dict[str, np.ndarray]:
        x, diag = run_langevin(
            target.solvent,
            temps,
            frames[split],
            preset.stride,
            preset.burn_in_frames,
            seed,
            preset.timestep_fs,
            preset.friction_per_ps,
            progress,
        )
        x32 = x.astype(np.float32)
        from icml26.envs.boltzmann.openmm_energy import OpenMMEnergy

        e, _ = OpenMMEnergy(target.solvent)(
            x32.astype(np.float64)
        )  # labels of the stored coordinates
        return {
            "x": x32,
            "energy": e / target.kt,
            "exchange_acceptance": np.asarray(diag["exchange_acceptance"], dtype=np.float64),
        }

    arrays = cached_arrays("md", params, make)
    meta = {**params, "exchange_acceptance": arrays["exchange_acceptance"].tolist()}
    return BoltzmannDataset(arrays["x"], arrays["energy"], meta)


def _v2_pool(
    target: AlanineDipeptide,
    kind: str,
    split: str,
    params: dict[str, Any],
    seed: int,
    progress: bool,
) -> BoltzmannDataset:
    preset = PRESETS[target.data_preset]

    def make() -> dict[str, np.ndarray]:
        return _independent_runs(
            target,
            tuple(params["temperatures"]),
            preset,
            int(params["runs"]),
            int(params["frames"]),
            bool(params["thin"]),
            seed,
            progress,
        )

    a = cached_arrays("md", params, make)
    meta = {
        **params,
        "run_id": a["run_id"],
        "thinning_stride": int(a["stride"]),
        **{
            k: a[k].tolist()
            for k in (
                "iat",
                "iat_phi_positive",
                "phi_positive",
                "phi_positive_curve",
                "exchange_acceptance",
            )
        },
    }
    return BoltzmannDataset(a["x"], a["energy"], meta)
