"""The weather budget ladder (issue 37): EMFormer, its ablations, the release's loss setting and
the ResNet on ``weather/qg-turbulent`` v2 at 1x, 2x, 4x and 8x the task's update budget, 10
seeds each, plus the deterministic baselines, as one resumable command.

    python experiments/weather_ladder.py plan                         # trials, jobs, cost
    python experiments/weather_ladder.py run --workers 2              # CPU: one trial per job
    python experiments/weather_ladder.py run --device cuda --workers 16 --deadline 540 \\
        --store $OUT                                                  # GPU: seeds side by side
    python experiments/weather_ladder.py digest                       # the data's checksums
    python experiments/weather_ladder.py run --era5 /data/wb2_64x32.zarr \
        --train 1979-01-01,2015-12-31T18 --val 2016-01-01,2016-12-31T18 \
        --test 2018-01-01,2018-12-31T18                               # the same on your ERA5

Why a script and not an ``icml26 study``: on a GPU the seeds of one configuration train side by
side (``run_trials_jointly``: one vmap over the stacked networks, equal to training them one at
a time up to float rounding), which is one job for many trials, and the GPU image has neither
SQLAlchemy (the results store) nor gymnasium; gymnasium travels as a plain folder
(``vendor``). Every trial still goes through the task's own ``run_trial`` code path
(``icml26.benchmarks.tasks.weather``: same env, data, budget, initializations and scoring).

The store is a folder of JSON-lines files, one per budget scale (or one ``.jsonl`` file), one
line per trial: ``{"key", "budget_scale", "result"}`` with the ``TrialResult`` as the harness
stores it (its key plus ``|x<scale>``). A re-run skips every FINISHED trial. ``--deadline`` (seconds since start) stops the run cleanly: jobs in flight are
killed, finished ones are kept. Each result records a digest of the ``icml26`` sources it ran
(``extra["source_digest"]``; the GPU copy of the tree has no git) and of the generated data.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # spawned workers import this file as __mp_main__
    sys.path.insert(0, str(ROOT))
TASK = "weather/qg-turbulent"
VERSION = 2
STORE = ROOT / "results" / "weather" / "ladder"  # a folder: one JSON-lines file per budget scale
SCALES = (1, 2, 4, 8)
SEEDS = tuple(range(10))
RELEASE_THETA0 = -math.pi / 2  # the released code's initial balance angle (w = 0, stationary)

# name -> (registered agent, kwargs); every learned arm spends the (scaled) task budget
ARMS: dict[str, tuple[str, dict[str, Any]]] = {
    "emformer": ("emformer", {}),
    "emformer-no-multiscale": ("emformer", {"multiscale": False}),
    "emformer-no-finetune": ("emformer", {"finetune_lengths": []}),
    "emformer-fixed-loss": ("emformer", {"loss": "fixed"}),
    "emformer-release-theta0": ("emformer", {"theta0": RELEASE_THETA0}),
    "resnet": ("weather-resnet", {}),
}
# arms that train side by side in one job on a GPU (same network and schedule)
GROUPS = (
    ("emformer", "emformer-fixed-loss", "emformer-release-theta0"),
    ("emformer-no-multiscale",),
    ("emformer-no-finetune",),
    ("resnet",),
)
QUAD: dict[str, Any] = {"quadratic": 16, "n_eofs": (16, 32, 64, 128, 256)}
BASELINES: dict[str, tuple[str, dict[str, Any]]] = {
    "persistence": ("weather-persistence", {}),
    "climatology": ("weather-climatology", {}),
    "damped-persistence": ("weather-damped-persistence", {}),
    "ridge": ("weather-ridge", {}),
    "linear-direct": ("weather-linear-direct", {}),
    "quadratic-direct": ("weather-quadratic-direct", QUAD),
    "quadratic-iterated": ("weather-quadratic-iterated", {}),
}
# CPU seconds of one 1x trial measured here (EMFormer ~0.1 s per one-step update on one core);
# the plan scales them by the rung
CPU_S_1X = {"emformer": 330.0, "resnet": 90.0, "baseline": 240.0}


def arm_kwargs(arm: str, device: str) -> tuple[str, dict[str, Any]]:
    """The registered agent and kwargs of a learned arm or a baseline on ``device``."""
    if arm in BASELINES:
        return BASELINES[arm]
    reg, kw = ARMS[arm]
    kw = {**kw, "progress": False}
    if device != "cpu":
        kw["device"] = device
    return reg, kw


def _task(task_id: str = TASK, version: int = VERSION, era5: dict[str, Any] | None = None) -> Any:
    """The registered task (or, with ``era5``, the ERA5 task on a user's data: ``{"path",
    "train", "test", "val"}``); with ``$WEATHER_LADDER_SMOKE`` = "updates,episodes" a smaller
    copy of it (another definition hash, so its trials never mix with the real ones)."""
    import dataclasses

    from icml26 import benchmarks

    if era5:
        from icml26.benchmarks.tasks.weather import era5_task

        periods = {k: tuple(era5[k]) for k in ("train", "test", "val") if era5.get(k)}
        task = era5_task(
            era5["path"],
            train_period=periods["train"],
            test_period=periods["test"],
            val_period=periods.get("val"),
        )
    else:
        task = benchmarks.get_task(task_id, version)
    smoke = os.environ.get("WEATHER_LADDER_SMOKE")
    if smoke:
        updates, episodes = (int(x) for x in smoke.split(","))
        task = dataclasses.replace(
            task, budget=task.budget.replace(updates=updates), eval_episodes=episodes
        )
    return task


def trial_key(task: Any, agent: str, kwargs: dict[str, Any], seed: int, scale: float) -> str:
    """The harness's key of the trial (``TrialSpec(...).key``, ``|x<scale>`` when scaled)."""
    from icml26.protocol import trial_key as key

    return key(task.id, task.version, agent, kwargs, seed, task.definition_hash, scale)


# ---------------------------------------------------------------------------- jobs
def jobs(
    device: str,
    scales: tuple[float, ...] = SCALES,
    seeds: tuple[int, ...] = SEEDS,
    arms: tuple[str, ...] | None = None,
    baselines: bool = True,
    task_id: str = TASK,
    version: int = VERSION,
    joint: bool | None = None,
    era5: dict[str, Any] | None = None,
    baseline_seeds: tuple[int, ...] = (0,),
) -> list[dict[str, Any]]:
    """The run's jobs, top rung first. On a GPU (or with ``joint``) a job trains every seed of a
    group of arms at one scale side by side; on the CPU a job is one trial. The deterministic
    baselines run once per seed of ``baseline_seeds`` (seed 0 is enough for the page; a
    leaderboard bundle needs every seed of the task)."""
    joint = device != "cpu" if joint is None else joint
    wanted = set(ARMS if arms is None else arms)
    out: list[dict[str, Any]] = []
    if baselines:
        for b in BASELINES:
            if arms is None or b in wanted:
                out.append({"arms": [b], "scale": 1, "seeds": list(baseline_seeds), "joint": False})
    for s in scales:
        if not joint:
            out += [
                {"arms": [a], "scale": s, "seeds": [seed], "joint": False}
                for seed in seeds
                for a in ARMS
                if a in wanted
            ]
        else:
            for group in GROUPS:
                names = [a for a in group if a in wanted]
                if names:
                    out.append({"arms": names, "scale": s, "seeds": list(seeds), "joint": True})
    for j in out:
        j["task"], j["version"], j["device"] = task_id, version, device
        if era5:
            j["era5"] = era5
        j["cost_cpu_s"] = _cost(j)
    # the top rungs first (the plateau test reads the last step), within a rung the longest
    # job first; the baselines (CPU, minutes) last
    return sorted(out, key=lambda j: (j["arms"][0] in BASELINES, -j["scale"], -j["cost_cpu_s"]))


def _cost(job: dict[str, Any]) -> float:
    per = 0.0
    for a in job["arms"]:
        kind = "baseline" if a in BASELINES else ("resnet" if a == "resnet" else "emformer")
        per += CPU_S_1X[kind] * (1 if kind == "baseline" else job["scale"])
    return per * len(job["seeds"])


def _trials_of(job: dict[str, Any]) -> list[tuple[str, int, str]]:
    """(arm, seed, key) of every trial of a job."""
    task = _task(job["task"], job["version"], job.get("era5"))
    out = []
    for a in job["arms"]:
        reg, kw = arm_kwargs(a, job["device"])
        scale = 1 if a in BASELINES else job["scale"]
        out += [(a, s, trial_key(task, reg, kw, s, scale)) for s in job["seeds"]]
    return out


# ---------------------------------------------------------------------------- worker
def source_digest() -> str:
    """sha256 of the icml26 package's Python sources (path and content, sorted)."""
    h = hashlib.sha256()
    for p in sorted((ROOT / "icml26").rglob("*.py")):
        h.update(str(p.relative_to(ROOT)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def run_job(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Run one job here; every trial becomes a store line (FAILED ones with the traceback)."""
    import datetime as dt
    import traceback

    import torch

    from icml26 import agents
    from icml26.benchmarks.tasks import weather as wt
    from icml26.benchmarks.trial import git_commit, package_versions, seed_everything
    from icml26.protocol import TrialResult

    torch.set_num_threads(1)
    base = _task(job["task"], job["version"], job.get("era5"))
    members = [(a, s) for a in job["arms"] for s in job["seeds"]]
    scale = 1 if job["arms"][0] in BASELINES else job["scale"]
    task = base.scaled(scale)
    started = dt.datetime.now(dt.UTC).isoformat()
    t0 = time.perf_counter()
    made: list[tuple[str, dict[str, Any], Any]] = []
    outcomes: list[Any] = []
    err = None
    try:
        seed_everything(members[0][1])
        for a, _ in members:
            reg, kw = arm_kwargs(a, job["device"])
            made.append((reg, kw, agents.make(reg, **kw)))
        if job["joint"]:
            outcomes = wt.run_trials_jointly(task, [m[2] for m in made], [s for _, s in members])
        else:
            for (_, _, agent), (_, s) in zip(made, members, strict=True):
                seed_everything(s)
                outcomes.append(wt.run_trial(task, agent, s))
    except Exception:
        err = traceback.format_exc()
    wall = (time.perf_counter() - t0) / max(1, len(members))
    commit = os.environ.get("ICML26_COMMIT") or git_commit()
    lines = []
    for i, (a, s) in enumerate(members):
        reg, kw = arm_kwargs(a, job["device"])
        version = agents.agent_version(made[i][2]) if i < len(made) else "?"
        common = {
            "task_id": base.id,
            "task_version": base.version,
            "agent_name": reg,
            "agent_version": version,
            "seed": s,
            "wall_time_s": wall,
            "packages": package_versions(),
            "git_commit": commit,
            "agent_kwargs": kw,
            "started_at": started,
            "task_hash": base.definition_hash,
            "budget_scale": scale,
        }
        if err is None:
            o = outcomes[i]
            extra = {
                **o.extra,
                "arm": a,
                "budget": task.budget.to_dict(),
                "source_digest": source_digest(),
                "job_seconds": time.perf_counter() - t0,
                "joint": job["joint"],
            }
            r = TrialResult(
                status="FINISHED",
                metrics={k: float(v) for k, v in o.metrics.items()},
                scores=[float(x) for x in o.scores],
                extra=extra,
                **common,
            )
        else:
            r = TrialResult(status="FAILED", traceback=err, extra={"arm": a}, **common)
        lines.append(
            {
                "key": trial_key(base, reg, kw, s, scale),
                "budget_scale": scale,
                "result": r.to_dict(),
            }
        )
    return lines


# ---------------------------------------------------------------------------- store
def _files(store: Path) -> list[Path]:
    """The store's files: ``store`` itself if it is a file, else its ``*.jsonl`` and
    ``*.jsonl.gz`` files (a gzipped export read back in: the plain files win, read last)."""
    if store.is_file():
        return [store]
    if not store.is_dir():
        return []
    return sorted(store.glob("*.jsonl.gz")) + sorted(store.glob("*.jsonl"))


def _text(path: Path) -> str:
    import gzip

    return gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()


def load_store(store: Path) -> dict[str, dict[str, Any]]:
    """key -> line; a later line for the same key wins (a FINISHED re-run replaces a FAILED)."""
    out: dict[str, dict[str, Any]] = {}
    for path in _files(store):
        for raw in _text(path).splitlines():
            if raw.strip():
                line = json.loads(raw)
                if line["key"] not in out or line["result"]["status"] == "FINISHED":
                    out[line["key"]] = line
    return out


def export_gz(store: Path | list[Path], target: Path) -> None:
    """Every line of ``store`` (or of several stores, a later one winning a shared key) in one
    gzipped JSON-lines file (written atomically): the one file a GPU machine sends back,
    however many rungs finished, and the page's raw archive."""
    import gzip

    from icml26._paths import atomic_write

    merged: dict[str, dict[str, Any]] = {}
    for st in [store] if isinstance(store, Path) else store:
        merged.update(load_store(st))
    lines = [json.dumps(v, sort_keys=True) for v in merged.values()]
    data = gzip.compress(("\n".join(lines) + "\n").encode(), compresslevel=6)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, lambda tmp: tmp.write_bytes(data))


def _append(store: Path, lines: list[dict[str, Any]]) -> None:
    """Append to ``store`` (a ``.jsonl`` file), or in a folder to ``ladder_x<scale>.jsonl``
    (files stay small enough to copy back from a GPU machine)."""
    if store.suffix == ".jsonl":
        path = store
    else:
        store.mkdir(parents=True, exist_ok=True)
        path = store / f"ladder_x{lines[0]['budget_scale']:g}.jsonl"
    with path.open("a") as f:
        for line in lines:
            f.write(json.dumps(line, sort_keys=True, allow_nan=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


# ---------------------------------------------------------------------------- data
def data_digests(
    task_id: str = TASK, version: int = VERSION, era5: dict[str, Any] | None = None
) -> dict[str, str]:
    """Generate (or load) the task's data and return sha256 digests of the train, test and
    validation arrays (float32, the env's channel order)."""
    import gymnasium as gym
    import numpy as np

    import icml26  # noqa: F401  (registers the env)

    task = _task(task_id, version, era5)
    env = gym.make(task.env_id, **task.env_kwargs)
    u: Any = env.unwrapped
    out = {}
    for split in ("train", "test", "val"):
        if split == "val" and getattr(u, "val_period", None) is None:
            continue
        arr = np.ascontiguousarray(u.dataset(split).array, dtype=np.float32)
        out[split] = hashlib.sha256(arr.tobytes()).hexdigest()[:16]
    return out


def _prepare(task_id: str, version: int, era5: dict[str, Any] | None = None) -> dict[str, str]:
    """Generate the main and the validation data in parallel processes (the disk cache then
    serves every job), and return the data digests."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    task = _task(task_id, version, era5)
    kw = dict(task.env_kwargs)
    procs = []
    if kw.get("val_source_kwargs"):
        p = ctx.Process(target=_generate_val, args=(kw,))
        p.start()
        procs.append(p)
    digests = data_digests(task_id, version, era5)
    for p in procs:
        p.join()
    return digests


def _generate_val(env_kwargs: dict[str, Any]) -> None:
    from icml26.envs.weather.sources import open_source

    src = env_kwargs.get("source", "synthetic")
    kw = {**env_kwargs.get("source_kwargs", {}), **env_kwargs["val_source_kwargs"]}
    open_source(src, *env_kwargs["val_period"], progress=False, **kw)


def graph_self_check(device: str) -> dict[str, Any]:
    """Train two tiny EMFormer members side by side for a few one-step and rollout updates with
    and without CUDA graphs; if the captured steps fail or disagree, switch graphs off for the
    whole run (``$ICML26_WEATHER_CUDA_GRAPHS=0``, inherited by the workers)."""
    import numpy as np
    import pandas as pd
    import torch
    import xarray as xr

    from icml26.agents.weather.neural import CUDA_GRAPHS_ENV, EMFormerForecaster, fit_jointly
    from icml26.envs.weather.env import WeatherDataset
    from icml26.protocol import Budget

    rng = np.random.default_rng(0)
    arr = (rng.normal(size=(300, 4, 8)).cumsum(axis=0) * 0.1).astype(np.float32)
    t = pd.date_range("2001-01-01", periods=300, freq="6h")
    ds = xr.Dataset(
        {"2m_temperature": (("time", "latitude", "longitude"), arr)},
        coords={"time": t, "latitude": np.linspace(-60, 60, 4), "longitude": np.arange(8) * 45.0},
    )
    data = WeatherDataset(ds, ("t2m",))
    kw = {"dim": 8, "heads": 2, "depth": (1, 1, 1), "batch_size": 4, "progress": False}
    kw.update(device=device, val_points=0, finetune_lengths=(2,), finetune_share=0.5)

    def fit(flag: str) -> tuple[list[Any], list[dict[str, Any]]]:
        os.environ[CUDA_GRAPHS_ENV] = flag
        agents = [EMFormerForecaster(**kw), EMFormerForecaster(**kw, loss="fixed")]
        for a in agents:
            a.reset(0)
        return agents, fit_jointly(agents, data, Budget(updates=16))

    out: dict[str, Any] = {"graphs": False}
    try:
        eager, _ = fit("0")
        graphed, stats = fit("1")
        diff = max(
            float((pa - pb).abs().max() / (pa.abs().max() + 1e-12))
            for a, b in zip(eager, graphed, strict=True)
            for pa, pb in zip(a.model.parameters(), b.model.parameters(), strict=True)
        )
        out.update(max_rel_diff=diff, graphed_stages=stats[0].get("cuda_graph_stages"))
        out["graphs"] = diff < 1e-3 and stats[0].get("cuda_graph_stages") == 2
    except Exception as e:  # any failure: train eagerly
        out["error"] = repr(e)[:500]
        torch.cuda.synchronize()
    os.environ[CUDA_GRAPHS_ENV] = "1" if out["graphs"] else "0"
    return out


# ---------------------------------------------------------------------------- commands
def _also(spec: str) -> tuple[str, int, tuple[str, ...]]:
    """``TASK@VERSION:arm,arm`` -> (task id, version, arms)."""
    head, _, arms = spec.partition(":")
    task_id, _, version = head.partition("@")
    return task_id, int(version or 0), tuple(arms.split(",")) if arms else tuple(ARMS)


def _jobs_of(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The run's jobs: the main task's (longest first), then each ``--also`` task's (its
    learned arms at the same scales and seeds, no baselines), which start only as workers
    free up."""
    out = jobs(
        args.device,
        args.scales,
        args.seeds,
        args.arms,
        not args.no_baselines,
        args.task,
        args.version,
        args.joint,
        _era5(args),
        args.baseline_seeds,
    )
    for spec in getattr(args, "also", None) or []:
        task_id, version, arms = _also(spec)
        out += jobs(args.device, args.scales, args.seeds, arms, False, task_id, version, args.joint)
    return out


def _unfinished(js: list[dict[str, Any]], done: set[str]) -> list[dict[str, Any]]:
    """The jobs with a trial not in ``done``, each cut down to the seeds with a trial left
    (joint training of a subset is training those seeds alone: fit_jointly equals
    one-at-a-time training)."""
    todo = []
    for j in js:
        left = sorted({s for _, s, k in _trials_of(j) if k not in done})
        if left:
            todo.append({**j, "seeds": left})
    return todo


def cmd_plan(args: argparse.Namespace) -> None:
    js = _jobs_of(args)
    done = {k for k, v in load_store(args.store).items() if v["result"]["status"] == "FINISHED"}
    n_trials = sum(len(_trials_of(j)) for j in js)
    todo = _unfinished(js, done)
    cpu = sum(_cost(j) for j in todo)
    print(f"{len(js)} jobs, {n_trials} trials; {len(todo)} jobs not finished in {args.store}")
    print(f"CPU estimate of the unfinished jobs: {cpu / 3600:.1f} core-hours")
    for j in js:
        print(f"  x{j['scale']:<3} {'+'.join(j['arms']):60s} seeds {len(j['seeds'])}")


def cmd_run(args: argparse.Namespace) -> None:
    import multiprocessing as mp

    t_start = time.monotonic()
    st = args.store
    (st.parent if st.suffix == ".jsonl" else st).mkdir(parents=True, exist_ok=True)
    device = args.device
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise SystemExit(f"--device {device}: torch sees no CUDA device")
        print(f"[ladder] {torch.cuda.get_device_name(0)}, torch {torch.__version__}", flush=True)
        check = graph_self_check(device)
        print(f"[ladder] CUDA-graph self-check: {check}", flush=True)
    js = _jobs_of(args)
    if device.startswith("cuda") and not check["graphs"]:  # eager: the top rungs cannot finish
        js = [j for j in js if j["scale"] <= args.max_eager_scale or not j["joint"]]
    done = {k for k, v in load_store(args.store).items() if v["result"]["status"] == "FINISHED"}
    todo = _unfinished(js, done)
    print(f"[ladder] {len(todo)} of {len(js)} jobs to run; source {source_digest()}", flush=True)
    summary: dict[str, Any] = {"device": device, "source_digest": source_digest(), "jobs": []}
    if device.startswith("cuda"):
        summary["cuda_graph_check"] = check
    summary["data"] = _prepare(args.task, args.version, _era5(args))
    for spec in args.also or []:
        task_id, version, _ = _also(spec)
        summary[f"data {task_id}@v{version}"] = _prepare(task_id, version)
    summary["data_s"] = time.monotonic() - t_start
    print(f"[ladder] data ready in {summary['data_s']:.0f} s: {summary['data']}", flush=True)
    ctx = mp.get_context("spawn")
    pool = ctx.Pool(args.workers, maxtasksperchild=1)
    pending = {}
    for j in todo:
        pending[id(j)] = (j, pool.apply_async(run_job, (j,)), time.monotonic())
    deadline = None if args.deadline is None else t_start + args.deadline
    try:
        while pending:
            if deadline is not None and time.monotonic() > deadline:
                print(f"[ladder] deadline: {len(pending)} jobs unfinished", flush=True)
                break
            for k in list(pending):
                j, res, t_sub = pending[k]
                if not res.ready():
                    continue
                del pending[k]
                try:
                    lines = res.get()
                except Exception as e:  # the worker died: record nothing, say so
                    print(f"[ladder] job {j['arms']} x{j['scale']} crashed: {e!r}", flush=True)
                    continue
                _append(args.store, lines)
                if args.export_gz:
                    export_gz(args.store, args.export_gz)
                ok = sum(line["result"]["status"] == "FINISHED" for line in lines)
                el = time.monotonic() - t_start
                print(
                    f"[ladder] {el:6.0f}s  x{j['scale']} {'+'.join(j['arms'])}: "
                    f"{ok}/{len(lines)} finished",
                    flush=True,
                )
                summary["jobs"].append(
                    {"arms": j["arms"], "scale": j["scale"], "finished": ok, "at_s": el}
                )
            time.sleep(1.0)
    finally:
        pool.terminate()
        pool.join()
        summary["unfinished"] = [
            {"arms": j["arms"], "scale": j["scale"]} for j, _, _ in pending.values()
        ]
        summary["wall_s"] = time.monotonic() - t_start
        st = args.store
        where = st.with_suffix(".summary.json") if st.suffix == ".jsonl" else st / "summary.json"
        if args.export_gz:
            export_gz(st, args.export_gz)
            where = args.export_gz.with_name("weather_summary.json")
        where.write_text(json.dumps(summary, indent=1))
        print(f"[ladder] wrote {args.store} ({summary['wall_s']:.0f} s)", flush=True)


def _era5(args: argparse.Namespace) -> dict[str, Any] | None:
    if not getattr(args, "era5", None):
        return None
    return {
        "path": str(Path(args.era5).resolve()),
        "train": args.train.split(","),
        "test": args.test.split(","),
        "val": args.val.split(",") if args.val else None,
    }


def cmd_digest(args: argparse.Namespace) -> None:
    print(json.dumps({"source": source_digest(), "data": data_digests()}, indent=1))
    sys.stdout.flush()


def cmd_vendor(args: argparse.Namespace) -> None:
    """Copy the pure-Python packages the GPU image lacks (gymnasium and its one dependency)
    into ``args.dest`` for the device's PYTHONPATH."""
    import importlib
    import shutil

    args.dest.mkdir(parents=True, exist_ok=True)
    for name in ("gymnasium", "farama_notifications"):
        src = Path(importlib.import_module(name).__file__).parent  # type: ignore[arg-type]
        shutil.copytree(
            src, args.dest / name, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
        )
    print(f"vendored gymnasium and farama_notifications into {args.dest}")


def cmd_bundles(args: argparse.Namespace) -> None:
    """Reference bundles for the headline task: the store's CPU trials at scale 1 on the task's
    leaderboard seeds, one bundle per arm in ``args.arms`` (a configuration that already has a
    shipped bundle keeps its other tasks' trials), built with icml26.leaderboards.reference.
    Then verify them: ``python -m icml26.leaderboards.reference verify FILES``."""
    import tempfile

    from icml26.benchmarks.store import ResultsStore
    from icml26.leaderboards import reference
    from icml26.protocol import TrialResult, config_hash

    task = _task()
    new = []
    for line in load_store(args.store).values():
        r = line["result"]
        if (
            line["budget_scale"] == 1
            and r["status"] == "FINISHED"
            and r["task_hash"] == task.definition_hash
            and r["seed"] in task.seeds
            and r["extra"].get("arm") in args.arms
            and "device" not in r["agent_kwargs"]
        ):
            new.append(TrialResult.from_dict(r))
    configs = {(t.agent_name, config_hash(t.agent_kwargs)) for t in new}
    old = []
    for b in reference.manifest()["bundles"]:
        bundle = json.loads((reference.REFERENCE_DIR / b["file"]).read_text())
        agent = bundle["agent"]
        if (agent["name"], config_hash(agent["kwargs"])) in configs:
            old += [TrialResult.from_dict(t) for t in bundle["results"] if t["task_id"] != task.id]
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "reference.db"
        with ResultsStore(db) as st:
            for t in old + new:
                st.put(t)
        from icml26.provenance import provenance

        prov = provenance(allow_dirty=True)
        prov = {k: prov[k] for k in ("commit", "dirty", "command", "date")}
        for path in reference.build(db, prov=prov):
            print(f"wrote {path}")


def cmd_import(args: argparse.Namespace) -> None:
    """Copy the ladder store into a harness results store (SQLite/PostgreSQL): ``icml26
    results`` and the studies layer then read the trials like any others (same keys)."""
    from icml26.benchmarks.store import ResultsStore
    from icml26.protocol import TrialResult

    n = 0
    with ResultsStore(args.db) as st:
        for line in load_store(args.store).values():
            st.put(TrialResult.from_dict(line["result"]))
            n += 1
    print(f"imported {n} trials into {args.db}")


def _ints(s: str) -> tuple[int, ...]:
    out: list[int] = []
    for part in s.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b) + 1)) if b else [int(a)]
    return tuple(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("plan", "run"):
        p = sub.add_parser(name)
        p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
        p.add_argument(
            "--scales", type=lambda s: tuple(float(x) for x in s.split(",")), default=SCALES
        )
        p.add_argument("--seeds", type=_ints, default=SEEDS, help="e.g. 0-9 or 0,1,2")
        p.add_argument("--arms", type=lambda s: tuple(s.split(",")), default=None)
        p.add_argument("--no-baselines", action="store_true")
        p.add_argument(
            "--baseline-seeds",
            type=_ints,
            default=(0,),
            help="seeds of the deterministic baselines (default 0; a bundle needs the task's)",
        )
        p.add_argument("--store", type=Path, default=STORE)
        p.add_argument("--task", default=TASK)
        p.add_argument(
            "--also",
            action="append",
            default=None,
            help="another task's ladder after the main one's, TASK@VERSION[:arm,arm] "
            "(e.g. weather/lorenz96-slow@0:emformer,resnet)",
        )
        p.add_argument(
            "--era5",
            default=None,
            help="a WeatherBench 2 / ERA5 zarr store or netCDF file: run the ladder on it "
            "(task weather/era5, built by icml26.benchmarks.tasks.weather.era5_task)",
        )
        p.add_argument("--train", default="1979-01-01,2015-12-31T18", help="with --era5")
        p.add_argument("--test", default="2018-01-01,2018-12-31T18", help="with --era5")
        p.add_argument("--val", default="2016-01-01,2016-12-31T18", help="with --era5; '' none")
        p.add_argument(
            "--joint",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="seeds side by side (default: on a GPU only)",
        )
        p.add_argument("--version", type=int, default=VERSION)
        if name == "run":
            p.add_argument("--workers", type=int, default=1)
            p.add_argument("--deadline", type=float, default=None, help="seconds from start")
            p.add_argument(
                "--export-gz",
                type=Path,
                default=None,
                help="after each job, write the whole store to this one .jsonl.gz file",
            )
            p.add_argument(
                "--max-eager-scale",
                type=float,
                default=4,
                help="on a GPU without CUDA graphs, skip the rungs above this scale",
            )
    sub.add_parser("digest")
    im = sub.add_parser("import", help="copy the ladder store into a harness results store")
    im.add_argument("--store", type=Path, default=STORE)
    im.add_argument("--db", default="results/icml26.db")
    bd = sub.add_parser("bundles", help="reference bundles of the headline task's arms")
    bd.add_argument("--store", type=Path, default=STORE)
    bd.add_argument(
        "--arms",
        type=lambda s: tuple(s.split(",")),
        default=("emformer", "resnet", *BASELINES),
    )
    ar = sub.add_parser(
        "archive", help="every store's trials in one .jsonl.gz (the page's raw archive)"
    )
    ar.add_argument("--store", type=Path, nargs="+", default=[STORE, STORE.parent / "ladder_gpu"])
    ar.add_argument(
        "--out", type=Path, default=ROOT / "docs" / "results" / "raw" / "weather.jsonl.gz"
    )
    v = sub.add_parser("vendor")
    v.add_argument("dest", type=Path)
    args = ap.parse_args(argv)
    if getattr(args, "scales", None):
        args.scales = tuple(int(x) if float(x).is_integer() else x for x in args.scales)
    cmds = {"plan": cmd_plan, "run": cmd_run, "digest": cmd_digest, "vendor": cmd_vendor}
    cmds["bundles"] = cmd_bundles
    cmds["import"] = cmd_import
    cmds["archive"] = lambda a: (export_gz(a.store, a.out), print(f"wrote {a.out}"))
    cmds[args.cmd](args)


if __name__ == "__main__":
    main()
