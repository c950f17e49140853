"""Boltzmann generators: a spline flow trained by ML, log-variance, LDR, reverse KL or variational LDR.

One class, :class:`FlowSampler`, with the objective as a hyperparameter (the registry gives each
objective its own name: ``flow-ml``, ``flow-lv``, ``flow-ldr``, ``flow-rkl``,
``flow-lv-onpolicy``, ``flow-ldr-var``):

* data-based (the env's data set with its stored energies; no energy evaluations spent):
  ``ml`` (maximum likelihood), ``lv`` (log-variance divergence with R = data, Richter et al.
  2020), ``ldr`` (NLL + lambda * dispersion of ``-u - log q`` on the same batch; LDR paper,
  arXiv 2602.03729);
* variational (energies bought from the env with ``step``): ``rkl`` (reparametrized reverse
  KL with the env's forces), ``lv_onpolicy`` (log-variance with R = q), ``ldr_var`` (reverse KL
  on each fresh batch + lambda * dispersion on batches of a replay buffer of past samples with
  their energies, with ``replay_steps`` extra buffer-only updates per evaluated batch).

Everything is seeded by ``reset(seed)``. The sampler interface used by the task's metrics:
``sample(n) -> (x, log_q)`` and ``log_prob(x) -> log_q`` (numpy, float64, physical coordinates;
alanine densities w.r.t. Cartesian volume modulo rigid motion).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from icml26.agents.boltzmann.coordinates import AlanineInternal, CoordinateMap, make_coordinate_map
from icml26.agents.boltzmann.flows import SplineFlow
from icml26.agents.boltzmann.losses import DISPERSIONS, dispersion, reverse_kl_surrogate
from icml26.protocol import Budget, derive_seed

__all__ = ["FlowConfig", "FlowSampler", "DATA_OBJECTIVES", "VARIATIONAL_OBJECTIVES"]

DATA_OBJECTIVES = ("ml", "lv", "ldr")
VARIATIONAL_OBJECTIVES = ("rkl", "lv_onpolicy", "ldr_var")


@dataclass
class FlowConfig:
    """Hyperparameters (CleanRL style: all in one place)."""

    objective: str = "ldr"
    dispersion: str = "variance"
    lam: float = 1.0  # weight of the dispersion term (ldr, ldr_var)
    n_iters: int | None = None  # updates of data-based objectives: min(n_iters, Budget.updates); None: the budget's, else 1000
    batch_size: int = 256
    lr: float = 1e-3
    lr_decay: bool = True  # cosine decay to 0 over training
    grad_clip: float = 10.0
    n_layers: int = 8
    hidden: int = 128
    depth: int = 2
    bins: int = 8
    bound: float = 5.0
    buffer_size: int = 10_000  # ldr_var replay buffer (configurations)
    replay_steps: int = 3  # ldr_var: extra buffer-only updates per evaluated batch
    sample_chunk: int = 4096

    def __post_init__(self) -> None:
        if self.objective not in DATA_OBJECTIVES + VARIATIONAL_OBJECTIVES:
            raise ValueError(
                f"FlowSampler: objective must be one of {DATA_OBJECTIVES + VARIATIONAL_OBJECTIVES}, "
                f"got {self.objective!r}"
            )
        if self.dispersion not in DISPERSIONS:
            raise ValueError(f"FlowSampler: dispersion must be one of {sorted(DISPERSIONS)}, got {self.dispersion!r}")
        for k in ("n_iters", "batch_size", "n_layers", "hidden", "depth", "bins", "buffer_size"):
            if getattr(self, k) is not None and int(getattr(self, k)) < 1:
                raise ValueError(f"FlowSampler: {k} must be >= 1, got {getattr(self, k)!r}")


class FlowSampler:
    """A Boltzmann generator (spline flow) with a selectable training objective."""

    version = "1"

    def __init__(self, **config: Any) -> None:
        self.config = FlowConfig(**config)
        self.seed = 0
        self.flow: SplineFlow | None = None
        self.cmap: CoordinateMap | None = None
        self.callback: Callable[[FlowSampler, Mapping[str, Any]], None] | None = None
        self.callback_every = 0
        self._env_batch: int | None = None
        self._gen = torch.Generator().manual_seed(0)

    # ------------------------------------------------------------------ protocol
    def reset(self, seed: int | None = None) -> None:
        self.seed = int(seed or 0)
        self._gen = torch.Generator().manual_seed(derive_seed(self.seed, "flow-sampler"))

    def bind(self, observation_space: Any, action_space: Any) -> None:
        self._env_batch = int(action_space.shape[0])

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> np.ndarray:
        """A batch of the flow's samples (configurations for the env to evaluate)."""
        n = self._env_batch or self.config.batch_size
        x, _ = self.sample(n)
        return x.astype(np.float32)

    # ------------------------------------------------------------------ sampler
    def _require_flow(self) -> tuple[SplineFlow, CoordinateMap]:
        if self.flow is None or self.cmap is None:
            raise RuntimeError("FlowSampler: call learn(env, budget) before sampling")
        return self.flow, self.cmap

    def sample(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``n`` samples in physical coordinates and their log-density (float64 numpy)."""
        flow, cmap = self._require_flow()
        xs, lqs = [], []
        with torch.no_grad():
            for i in range(0, n, self.config.sample_chunk):
                m = min(self.config.sample_chunk, n - i)
                y, lq = flow.rsample(m, self._gen)
                x, ladj = cmap.to_phys(y)
                xs.append(x.numpy())
                lqs.append((lq.double() - ladj).numpy())
        return np.concatenate(xs), np.concatenate(lqs)

    def log_prob(self, x: Any) -> np.ndarray:
        """log q of physical configurations ``(n, dim)`` (float64 numpy)."""
        flow, cmap = self._require_flow()
        xt = torch.as_tensor(np.asarray(x), dtype=torch.float64)
        out = []
        with torch.no_grad():
            for i in range(0, xt.shape[0], self.config.sample_chunk):
                y, ladj = cmap.to_flow(xt[i : i + self.config.sample_chunk])
                out.append((flow.log_prob(y.float()).double() + ladj).numpy())
        return np.concatenate(out) if out else np.zeros(0)

    # ------------------------------------------------------------------ learning
    def _build(self, info: Mapping[str, Any], x_data: np.ndarray) -> None:
        c = self.config
        cmap = make_coordinate_map(info["geometry"], int(info["dim"]), float(info.get("scale", 1.0)),
                                   int(info.get("n_particles", 0)), int(info.get("spatial_dim", 0)))
        if len(x_data) >= 2:
            cmap.fit(torch.from_numpy(x_data.astype(np.float64)))
        elif isinstance(cmap, AlanineInternal):
            from icml26.envs.boltzmann.alanine import build_system

            cmap.fit_structure(torch.from_numpy(build_system("vacuum")[2].reshape(-1)))
        with torch.random.fork_rng():
            torch.manual_seed(derive_seed(self.seed, "flow-init"))
            self.flow = SplineFlow(cmap.flow_dim, cmap.circular, c.n_layers, c.hidden, c.depth, c.bins,
                                   c.bound, seed=derive_seed(self.seed, "flow-masks"))
        self.cmap = cmap

    def learn(self, env: Any, budget: Budget | None = None) -> dict[str, Any]:
        """Start an episode (``env.reset()``), build the flow and train it with the objective."""
        c = self.config
        _, info = env.reset()
        self.bind(None, env.action_space)
        data = info["dataset"]
        self._build(info, data["x"])
        params = list(self.flow.parameters())  # type: ignore[union-attr]
        opt = torch.optim.Adam(params, lr=c.lr)
        if c.objective in DATA_OBJECTIVES:
            if len(data["x"]) == 0:
                raise ValueError(f"FlowSampler({c.objective}): needs a data set; the env has data='none'")
            cap = int(budget.updates) if budget is not None and budget.updates else None
            n_iters = min(x for x in (c.n_iters, cap, None if (c.n_iters or cap) else 1000) if x is not None)
            return self._learn_data(opt, data, n_iters)
        left = int(info["budget"]["energy_evals"])
        if left <= 0:
            raise ValueError(f"FlowSampler({c.objective}): needs an energy budget; the env has 0 evaluations")
        return self._learn_variational(env, opt, left)

    def _schedule(self, opt: torch.optim.Optimizer, total: int) -> Any:
        if not self.config.lr_decay:
            return None
        return torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(total, 1))

    def _update(self, opt: torch.optim.Optimizer, loss: torch.Tensor, stats: dict[str, Any]) -> bool:
        if not torch.isfinite(loss):
            stats["skipped_updates"] += 1
            return False
        opt.zero_grad(set_to_none=True)
        loss.backward()
        params = [p for g in opt.param_groups for p in g["params"]]
        norm = torch.nn.utils.clip_grad_norm_(params, self.config.grad_clip)
        if not torch.isfinite(norm):
            opt.zero_grad(set_to_none=True)
            stats["skipped_updates"] += 1
            return False
        opt.step()
        return True

    def _log_q_flow_coords(self, y: torch.Tensor, ladj_to_flow: torch.Tensor) -> torch.Tensor:
        """Physical log q from flow coordinates: log q_flow(y) + log|dy/dx|."""
        return self.flow.log_prob(y).double() + ladj_to_flow  # type: ignore[union-attr]

    def _learn_data(self, opt: torch.optim.Optimizer, data: Mapping[str, np.ndarray], n_iters: int) -> dict[str, Any]:
        c = self.config
        cmap = self.cmap
        assert cmap is not None
        with torch.no_grad():
            y, ladj = cmap.to_flow(torch.from_numpy(data["x"].astype(np.float64)))
        y = y.float()
        u = torch.from_numpy(np.asarray(data["energy"], dtype=np.float64))
        n = y.shape[0]
        sched = self._schedule(opt, n_iters)
        stats: dict[str, Any] = {"objective": c.objective, "iterations": n_iters, "dataset_size": n,
                                 "energy_evals": 0, "skipped_updates": 0, "curve": []}
        every = max(1, n_iters // 20)
        for it in range(n_iters):
            idx = torch.randint(0, n, (min(c.batch_size, n),), generator=self._gen)
            log_q = self._log_q_flow_coords(y[idx], ladj[idx])
            nll = -log_q.mean()
            if c.objective == "ml":
                loss, disp = nll, torch.tensor(float("nan"))
            else:
                disp = dispersion(-u[idx] - log_q, c.dispersion if c.objective == "ldr" else "variance")
                loss = disp if c.objective == "lv" else nll + c.lam * disp
            self._update(opt, loss, stats)
            if sched is not None:
                sched.step()
            if it % every == 0 or it == n_iters - 1:
                stats["curve"].append({"iteration": it, "nll": float(nll.detach()), "dispersion": float(disp.detach())})
            if self.callback is not None and self.callback_every and (it + 1) % self.callback_every == 0:
                self.callback(self, {"iteration": it + 1, "energy_evals": 0})
        return stats

    def _learn_variational(self, env: Any, opt: torch.optim.Optimizer, left: int) -> dict[str, Any]:
        c = self.config
        flow, cmap = self._require_flow()
        batch = min(c.batch_size, self._env_batch or c.batch_size)
        n_batches = math.ceil(left / batch)
        replay = c.replay_steps if c.objective == "ldr_var" else 0
        sched = self._schedule(opt, n_batches * (1 + replay))
        stats: dict[str, Any] = {"objective": c.objective, "energy_evals": 0, "iterations": 0,
                                 "skipped_updates": 0, "nonfinite_energies": 0, "curve": []}
        buf_y = torch.zeros(0, flow.dim)
        buf_l = torch.zeros(0, dtype=torch.float64)
        buf_u = torch.zeros(0, dtype=torch.float64)
        spent = 0
        every = max(1, n_batches // 20)
        for b in range(n_batches):
            n = min(batch, left - spent)
            if c.objective == "lv_onpolicy":
                with torch.no_grad():
                    y, _ = flow.rsample(n, self._gen)
                    x, ladj_phys = cmap.to_phys(y)
            else:
                y, lq_flow = flow.rsample(n, self._gen)
                x, ladj_phys = cmap.to_phys(y)
            x32 = x.detach().float().numpy()
            _, _, _, _, info = env.step(x32)
            spent += n
            u = torch.from_numpy(np.asarray(info["energies"], dtype=np.float64))
            ok = torch.isfinite(u)
            stats["nonfinite_energies"] += int((~ok).sum())
            if c.objective == "lv_onpolicy":
                log_q = self._log_q_flow_coords(y[ok], -ladj_phys[ok])
                loss = dispersion(-u[ok] - log_q, "variance")
            else:
                forces = torch.from_numpy(np.asarray(info["forces"], dtype=np.float64))
                log_q = lq_flow.double() - ladj_phys
                loss = reverse_kl_surrogate(x[ok], log_q[ok], u[ok], forces[ok])
            if c.objective == "ldr_var":
                buf_y = torch.cat([buf_y, y.detach()[ok]])[-c.buffer_size :]
                buf_l = torch.cat([buf_l, -ladj_phys.detach()[ok]])[-c.buffer_size :]
                buf_u = torch.cat([buf_u, u[ok]])[-c.buffer_size :]
                loss = loss + c.lam * self._buffer_dispersion(buf_y, buf_l, buf_u)
            self._update(opt, loss, stats)
            if sched is not None:
                sched.step()
            for _ in range(replay):
                self._update(opt, c.lam * self._buffer_dispersion(buf_y, buf_l, buf_u), stats)
                if sched is not None:
                    sched.step()
            stats["iterations"] += 1 + replay
            if b % every == 0 or b == n_batches - 1:
                stats["curve"].append({"energy_evals": spent, "loss": float(loss.detach()),
                                       "mean_energy": float(u[ok].mean()) if ok.any() else float("inf")})
            if self.callback is not None and self.callback_every and (b + 1) % self.callback_every == 0:
                self.callback(self, {"iteration": stats["iterations"], "energy_evals": spent})
        stats["energy_evals"] = spent
        return stats

    def _buffer_dispersion(self, buf_y: torch.Tensor, buf_l: torch.Tensor, buf_u: torch.Tensor) -> torch.Tensor:
        c = self.config
        if buf_y.shape[0] < 2:
            return torch.zeros((), dtype=torch.float64)
        idx = torch.randint(0, buf_y.shape[0], (min(c.batch_size, buf_y.shape[0]),), generator=self._gen)
        log_q = self._log_q_flow_coords(buf_y[idx], buf_l[idx])
        return dispersion(-buf_u[idx] - log_q, c.dispersion)

    def describe(self) -> dict[str, Any]:
        return asdict(self.config)
