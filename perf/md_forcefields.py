"""Time and peak memory per energy+force evaluation against atom count, in one run: DKMP (the
paper's dilated shells, C = 8 A and, at matched cutoff, C = 5 A), the SchNet-style cutoff MPNN
(5 A) and PaiNN-style (5 A), all untrained (cost does not depend on the weights), float32,
one thread, neighbour search included; and OpenMM's CPU platform (the classical force field
itself) on the same structures. Systems: TIP3P water boxes of growing edge (~100 to ~10k
atoms), T4 lysozyme L99A in vacuum (2,621) and DHFR/JAC in explicit water (23,558). Each
(method, system) runs in a fresh subprocess so that its peak RSS is its own. Reports the fitted
log-log slope (scaling exponent) of time and of memory against N.

    OMP_NUM_THREADS=1 nice -n 10 python perf/md_forcefields.py            # ~5-10 min on 2 cores
    python perf/md_forcefields.py --quick                                  # up to ~3k atoms
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

SYSTEMS: list[tuple[str, dict[str, Any]]] = [
    ("waterbox", {"box_edge": 10.0}),
    ("waterbox", {"box_edge": 15.0}),
    ("waterbox", {"box_edge": 22.0}),
    ("t4l", {}),
    ("waterbox", {"box_edge": 32.0}),
    ("waterbox", {"box_edge": 46.0}),
    ("dhfr", {}),
]
METHODS: dict[str, dict[str, Any]] = {
    # max_n: above it the run is skipped (its edge tensors would need several GiB on this machine)
    "DKMP C=8 (shells 2/4/6/8 A)": {
        "model": "dkmp",
        "kwargs": {"radii": (2.0, 4.0, 6.0, 8.0)},
        "max_n": 12000,
    },
    "DKMP C=5 (shells 1.25/2.5/3.75/5 A)": {
        "model": "dkmp",
        "kwargs": {"radii": (1.25, 2.5, 3.75, 5.0)},
    },
    "SchNet-style 4 x 5 A": {"model": "schnet", "kwargs": {}},
    "PaiNN-style 3 x 5 A": {"model": "painn", "kwargs": {}, "max_n": 4000},
    "OpenMM CPU (classical FF)": {"model": "openmm", "kwargs": {}},
}


def _hwm_mib() -> float:
    """Peak RSS of this process image (VmHWM; ru_maxrss would carry the parent's peak over exec)."""
    with open("/proc/self/status") as f:
        line = next(x for x in f if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def prepare(system: str, kw: dict[str, Any], folder: Path) -> tuple[Path, int]:
    """Build one system once (openmmtools) and store positions, numbers and the serialized
    OpenMM System, so that workers import only torch or openmm."""
    import openmm

    from icml26.envs.md_forcefields.systems import load_system

    mol = load_system(system, **kw)
    base = folder / f"{system}-{'-'.join(f'{k}{v}' for k, v in kw.items()) or 'default'}"
    np.savez(f"{base}.npz", positions=mol.positions, numbers=mol.numbers)
    Path(f"{base}.xml").write_text(openmm.XmlSerializer.serialize(mol.system))
    return base, mol.n_atoms


def worker(method: str, base: str, reps: int) -> dict[str, Any]:
    """One measurement in this process: median seconds per call and peak RSS growth (MiB)."""
    with np.load(base + ".npz") as f:
        positions, numbers = f["positions"], f["numbers"]
    spec = METHODS[method]
    if spec["model"] == "openmm":
        import openmm

        system = openmm.XmlSerializer.deserialize(Path(base + ".xml").read_text())
        ctx = openmm.Context(
            system,
            openmm.VerletIntegrator(0.001),
            openmm.Platform.getPlatformByName("CPU"),
            {"Threads": "1"},
        )
        ctx.setPositions(positions * 0.1)

        def call() -> None:
            ctx.getState(getEnergy=True, getForces=True)
    else:
        import torch

        from icml26.agents.md_forcefields.models import build_model

        torch.set_num_threads(1)
        torch.manual_seed(0)
        model = build_model(spec["model"], **spec["kwargs"]).float()
        pos = torch.as_tensor(positions, dtype=torch.float32)[None]
        z = torch.as_tensor(numbers)

        def call() -> None:
            model.energy_forces(pos, z)

    base_rss = _rss_mib()
    t = time.perf_counter()
    call()  # warm-up (also the only timing when a call is slow)
    times = [time.perf_counter() - t]
    if times[0] < 2.0:
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            call()
            times.append(time.perf_counter() - t)
    peak = _hwm_mib()
    return {
        "n": int(len(numbers)),
        "s": float(np.median(times)),
        "mem_mib": max(peak - base_rss, 0.0),
    }


def fit(ns: list[int], ys: list[float]) -> float:
    """Least-squares slope of log y on log N (nan with fewer than 3 points)."""
    if len(ns) < 3:
        return float("nan")
    return float(np.polyfit(np.log(ns), np.log(np.maximum(ys, 1e-12)), 1)[0])


def run(quick: bool, timeout: float, reps: int, max_systems: int = 0) -> dict[str, Any]:
    systems = SYSTEMS[:4] if quick else SYSTEMS
    systems = systems[:max_systems] if max_systems > 0 else systems
    out: dict[str, Any] = {"rows": []}
    tmp = Path(tempfile.mkdtemp(prefix="perf_md_"))
    for name, kw in systems:
        base, n_atoms = prepare(name, kw, tmp)
        for method, spec in METHODS.items():
            if n_atoms > spec.get("max_n", 10**9):
                row = {
                    "error": f"skipped: N > max_n = {spec['max_n']}",
                    "method": method,
                    "system": name,
                }
                out["rows"].append(row)
                continue
            cmd = [sys.executable, __file__, "--worker", method, str(base), str(reps)]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
                row = (
                    json.loads(p.stdout.strip().splitlines()[-1])
                    if p.returncode == 0
                    else {"error": p.stderr[-300:]}
                )
            except subprocess.TimeoutExpired:
                row = {"error": f"timeout > {timeout:g} s"}
            row.update({"method": method, "system": name, **{f"arg_{k}": v for k, v in kw.items()}})
            out["rows"].append(row)
            print(json.dumps(row), flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    out["exponents"] = {}
    for method in METHODS:
        ok = [r for r in out["rows"] if r["method"] == method and "s" in r]
        out["exponents"][method] = {
            "time": fit([r["n"] for r in ok], [r["s"] for r in ok]),
            "memory": fit([r["n"] for r in ok], [r["mem_mib"] + 1.0 for r in ok]),
            "points": len(ok),
        }
    return out


def table(out: dict[str, Any]) -> str:
    ns = sorted(
        {(r["system"], r.get("arg_box_edge"), r.get("n")) for r in out["rows"] if "n" in r},
        key=lambda t: t[2],
    )
    lines = [
        "| method | "
        + " | ".join(f"{s} N={n}" for s, _, n in ns)
        + " | time exponent | memory exponent |"
    ]
    lines.append("|---|" + "---|" * (len(ns) + 2))
    for method in METHODS:
        cells = []
        for s, e, _n in ns:
            r = next(
                (
                    r
                    for r in out["rows"]
                    if r["method"] == method and r["system"] == s and r.get("arg_box_edge") == e
                ),
                None,
            )
            cells.append(
                "-"
                if r is None
                else (f"{r['s'] * 1000:.3g} ms / {r['mem_mib']:.0f} MiB" if "s" in r else "failed")
            )
        ex = out["exponents"][method]
        lines.append(
            f"| {method} | " + " | ".join(cells) + f" | {ex['time']:.2f} | {ex['memory']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        print(json.dumps(worker(argv[1], argv[2], int(argv[3]))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--timeout", type=float, default=240.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    out = run(args.quick, args.timeout, args.reps)
    print(table(out))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
