"""Alanine-dipeptide energies per second: batched paths vs OpenMM Context per sample vs one reused Context.

    OMP_NUM_THREADS=1 .venv/bin/python perf/boltzmann.py              # about 1-2 minutes
    OMP_NUM_THREADS=1 .venv/bin/python perf/boltzmann.py --n 2000 --rounds 3

Side by side, in one run, interleaved over ``--rounds`` rounds (median throughput), on the same
configurations (frames of the "tiny" MD preset plus 0.01 nm noise), energies only, every OpenMM
path on the same platform (Reference in vacuum, the one-thread CPU platform for OBC1):

* ``new Context per sample`` (peer: what a naive script does): ``openmm.Context(system, ...)``,
  ``setPositions`` with a Quantity, ``getState``, for each configuration (fewer configurations);
* ``reused Context, naive loop`` (peer: the plain OpenMM idiom): one Context, ``setPositions``
  with a Quantity and ``getPotentialEnergy().value_in_unit(...)`` per configuration;
* ``OpenMMEnergy`` (this package, 1 worker): one reused Context, raw numpy positions in nm and no
  unit conversions per configuration;
* ``OpenMMEnergy, 2 workers``: the batch split over a spawn pool, one Context per worker (the
  pool is started before timing);
* ``AmberTorchEnergy`` (this package): the vectorized torch force field, whole batch at once, in
  float64 (and with forces by autograd);
* implicit solvent (OBC1): new Context per sample vs ``OpenMMEnergy``.

Every path is checked against the others (max |dU| printed) before timing. Prints energies/s
and ratios against the two peers. The machine is shared with other jobs: compare the ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import openmm  # noqa: E402
import torch  # noqa: E402
from openmm import unit  # noqa: E402

from icml26.envs.boltzmann.alanine import AlanineDipeptide, AmberTorchEnergy  # noqa: E402
from icml26.envs.boltzmann.openmm_energy import (  # noqa: E402
    OpenMMEnergy,
    build_system,
    default_platform,
    make_context,
)


def configurations(n: int, seed: int = 0) -> np.ndarray:
    frames = AlanineDipeptide(data_preset="tiny").pool("unbiased", "train").x.astype(np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(frames), n)
    return frames[idx] + 0.01 * rng.standard_normal((n, 66))


def new_context_per_sample(solvent: str) -> Callable[[np.ndarray], np.ndarray]:
    system, _, _ = build_system(solvent)

    def run(x: np.ndarray) -> np.ndarray:
        out = np.empty(len(x))
        for i, xi in enumerate(x):
            ctx = make_context(system, openmm.VerletIntegrator(0.001), default_platform(solvent))
            ctx.setPositions(unit.Quantity(xi.reshape(22, 3).tolist(), unit.nanometer))
            out[i] = (
                ctx.getState(getEnergy=True)
                .getPotentialEnergy()
                .value_in_unit(unit.kilojoule_per_mole)
            )
            del ctx
        return out

    return run


def reused_context_naive(solvent: str) -> Callable[[np.ndarray], np.ndarray]:
    system, _, _ = build_system(solvent)
    ctx = make_context(system, openmm.VerletIntegrator(0.001), default_platform(solvent))

    def run(x: np.ndarray) -> np.ndarray:
        out = np.empty(len(x))
        for i, xi in enumerate(x):
            ctx.setPositions(unit.Quantity(xi.reshape(22, 3).tolist(), unit.nanometer))
            out[i] = (
                ctx.getState(getEnergy=True)
                .getPotentialEnergy()
                .value_in_unit(unit.kilojoule_per_mole)
            )
        return out

    run.ctx = ctx  # type: ignore[attr-defined]  # keep the Context alive
    return run


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=2000, help="configurations per timed batch")
    ap.add_argument(
        "--n-new", type=int, default=100, help="configurations for the new-Context path"
    )
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"load average before: {os.getloadavg()}")
    x = configurations(args.n)
    ff = AmberTorchEnergy()
    omm1 = OpenMMEnergy("vacuum")
    omm2 = OpenMMEnergy("vacuum", n_workers=2)
    omm2(x[:8])  # start the pool (and its Contexts) outside the timing

    def torch_forces(z: np.ndarray) -> np.ndarray:
        t = torch.from_numpy(z).requires_grad_(True)
        e = ff(t)
        torch.autograd.grad(e.sum(), t)
        return e.detach().numpy()

    paths: dict[str, tuple[Callable[[np.ndarray], np.ndarray], int]] = {
        "new Context per sample": (new_context_per_sample("vacuum"), args.n_new),
        "reused Context, naive loop": (reused_context_naive("vacuum"), args.n),
        "OpenMMEnergy (1 worker)": (lambda z: omm1(z)[0], args.n),
        "OpenMMEnergy (2 workers)": (lambda z: omm2(z)[0], args.n),
        "AmberTorchEnergy (batched, float64)": (lambda z: ff(torch.from_numpy(z)).numpy(), args.n),
        "AmberTorchEnergy + forces (autograd)": (torch_forces, args.n),
    }
    implicit: dict[str, tuple[Callable[[np.ndarray], np.ndarray], int]] = {
        "OBC1: new Context per sample": (new_context_per_sample("obc1"), max(args.n_new // 2, 10)),
        "OBC1: reused Context, naive loop": (reused_context_naive("obc1"), args.n // 4),
        "OBC1: OpenMMEnergy (1 worker)": (lambda z: OpenMMEnergy("obc1")(z)[0], args.n // 4),
    }
    ref = omm1(x)[0]
    for name, (fn, n) in paths.items():
        err = np.abs(fn(x[:n]) - ref[:n]).max()
        print(f"check {name:40s} max |dU| vs OpenMMEnergy = {err:.2e} kJ/mol")
        assert err < 1e-3, name
    ref_i = OpenMMEnergy("obc1")(x[:20])[0]
    for name, (fn, _) in implicit.items():
        assert np.abs(fn(x[:20]) - ref_i).max() < 1e-6, name

    rates: dict[str, list[float]] = {k: [] for k in [*paths, *implicit]}
    for _ in range(args.rounds):
        for name, (fn, n) in [*paths.items(), *implicit.items()]:
            t0 = time.perf_counter()
            fn(x[:n])
            rates[name].append(n / (time.perf_counter() - t0))
    omm2.close()
    med = {k: statistics.median(v) for k, v in rates.items()}
    new, reused = med["new Context per sample"], med["reused Context, naive loop"]
    print(
        f"\nalanine dipeptide, vacuum, {args.n} configurations, median of {args.rounds} interleaved rounds"
    )
    print(f"{'path':42s} {'energies/s':>12s} {'x new Context':>14s} {'x reused Context':>17s}")
    for k in paths:
        print(f"{k:42s} {med[k]:12.0f} {med[k] / new:14.1f} {med[k] / reused:17.2f}")
    new_i, reused_i = med["OBC1: new Context per sample"], med["OBC1: reused Context, naive loop"]
    print("\nalanine dipeptide, OBC1 implicit solvent")
    for k in implicit:
        print(f"{k:42s} {med[k]:12.0f} {med[k] / new_i:14.1f} {med[k] / reused_i:17.2f}")
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
