"""Boltzmann generators: a spline flow trained by ML, log-variance, LDR, reverse KL or variational LDR.

One class, :class:`FlowSampler`, with the objective as a hyperparameter (the registry gives each
objective its own name: ``flow-ml``, ``flow-lv``, ``flow-ldr``, ``flow-rkl``,
``flow-lv-onpolicy``, ``flow-ldr-var``, ``flow-ml-rkl``, ``flow-ml-reweighted``, ``flow-fab``):

* data-based (the env's data set with its stored energies; no energy evaluations spent):
  ``ml`` (maximum likelihood), ``lv`` (log-variance divergence with R = data, Richter et al.
  2020), ``ldr`` (NLL + lambda * dispersion of ``-u - log q`` on the same batch; LDR paper,
  arXiv 2602.03729), ``ml_reweighted`` (self-normalized importance-weighted NLL whose weights
  ``p / p_bias`` undo the known bias of ``"biased"`` data, see
  :func:`~icml26.agents.boltzmann.losses.bias_log_weights`; plain ML on unbiased data);
* hybrid: ``ml_rkl`` (NLL on data + lambda * reverse KL on model samples whose energies and
  forces are bought from the env, Noé et al. 2019; updates continue as plain ML once the
  energy budget is spent);
* variational (energies bought from the env with ``step``): ``rkl`` (reparametrized reverse
  KL with the env's forces), ``lv_onpolicy`` (log-variance with R = q), ``ldr_var`` (reverse KL
  on each fresh batch + lambda * dispersion on batches of a replay buffer of past samples with
  their energies, with ``replay_steps`` extra buffer-only updates per evaluated batch), ``fab``
  (FAB, Midgley et al. 2023: AIS from q towards p^2 / q with ``ais_levels`` MALA levels; by
  default without its replay buffer, one update per AIS batch by the self-normalized
  AIS-weighted NLL, each costing ``batch * (ais_levels + 1)`` evaluations; ``fab_buffer=True``
  adds the paper's prioritized replay buffer, ``fab_replay_steps`` updates per AIS batch, see
  :mod:`.fab_buffer`; real coordinates only, see :mod:`.ais`).

Objectives that train on data (all but the purely variational ones) hold out a seeded
``val_fraction`` of the data set, evaluate the validation objective every ``eval_every`` updates
(the training objective's data terms on the held-out set: NLL, dispersion, NLL + lambda *
dispersion, reweighted NLL; NLL for ``ml_rkl``), keep the best parameters and stop after
``patience`` evaluations without improvement; the returned flow is the best one and the stats
report ``best_iteration``. ``val_fraction=0`` trains on everything for the full update budget.

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
from icml26.agents.boltzmann.losses import (
    DISPERSIONS,
    bias_log_weights,
    dispersion,
    reverse_kl_surrogate,
    reweighted_nll,
)
from icml26.protocol import Budget, derive_seed

__all__ = ["FlowConfig", "FlowSampler", "DATA_OBJECTIVES", "VARIATIONAL_OBJECTIVES"]

DATA_OBJECTIVES = ("ml", "lv", "ldr", "ml_reweighted", "ml_rkl")
VARIATIONAL_OBJECTIVES = ("rkl", "lv_onpolicy", "ldr_var", "fab")


@dataclass
class FlowConfig:
    """Hyperparameters (CleanRL style: all in one place)."""

    objective: str = "ldr"
    dispersion: str = "variance"
    lam: float = 1.0  # weight of the dispersion term (ldr, ldr_var) or of the reverse KL (ml_rkl)
    n_iters: int | None = (
        None  # updates of data-based objectives: min(n_iters, Budget.updates); None: the budget's, else 1000
    )
    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 0.0  # L2 penalty of Adam (a regularization knob tuned like lr)
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
    val_fraction: float = 0.1  # held-out share of the data for early stopping (0: none)
    eval_every: int = 25  # updates between validation evaluations
    patience: int = 10  # evaluations without improvement before stopping
    rkl_batch: int = 128  # ml_rkl: model samples (energy evaluations) per update
    ais_levels: int = 8  # fab: AIS levels (one MALA step each)
    ais_step: float = 0.05  # fab: initial MALA step size (flow coordinates), adapted per level
    alpha: float = 2.0  # fab: AIS target q^(1 - alpha) p^alpha
    # fab's prioritized replay buffer (off: the original behaviour, one update per AIS batch).
    # Paper (fab-torch, Many-Well-32): batch 2048, buffer 512,000 (250 batches), minimum 65,536
    # (32 batches), 8 replay batches per AIS batch, weight adjustment unclipped there (the
    # trainer's default clip is 10). Here the sizes are in the same batches of ``batch_size``
    # where the budget allows: 250 batches, a minimum of 8 (a 128k budget buys ~55 AIS batches).
    fab_buffer: bool = False
    fab_buffer_batches: int = 250  # maximum buffer length, in batches
    fab_buffer_min_batches: int = (
        8  # AIS batches stored before the first update (>= fab_replay_steps)
    )
    fab_replay_steps: int = 8  # gradient steps on buffer batches per AIS batch
    fab_w_clip: float | None = 10.0  # upper clip of w_adjust = q_old / q_new (None: no clip)

    def __post_init__(self) -> None:
        if self.objective not in DATA_OBJECTIVES + VARIATIONAL_OBJECTIVES:
            raise ValueError(
                f"FlowSampler: objective must be one of {DATA_OBJECTIVES + VARIATIONAL_OBJECTIVES}, "
                f"got {self.objective!r}"
            )
        if self.dispersion not in DISPERSIONS:
            raise ValueError(
                f"FlowSampler: dispersion must be one of {sorted(DISPERSIONS)}, got {self.dispersion!r}"
            )
        if not float(self.weight_decay) >= 0:
            raise ValueError(f"FlowSampler: weight_decay must be >= 0, got {self.weight_decay!r}")
        if self.fab_w_clip is not None and not float(self.fab_w_clip) > 0:
            raise ValueError(
                f"FlowSampler: fab_w_clip must be > 0 or None, got {self.fab_w_clip!r}"
            )
        if int(self.fab_buffer_min_batches) < int(self.fab_replay_steps):
            raise ValueError(
                "FlowSampler: fab_buffer_min_batches must be >= fab_replay_steps (replay batches "
                f"are drawn without replacement), got {self.fab_buffer_min_batches!r} < "
                f"{self.fab_replay_steps!r}"
            )
        for k in ("alpha", "ais_step"):
            if not float(getattr(self, k)) > 0:
                raise ValueError(f"FlowSampler: {k} must be > 0, got {getattr(self, k)!r}")
        if not 0.0 <= float(self.val_fraction) < 1.0:
            raise ValueError(
                f"FlowSampler: val_fraction must be in [0, 1), got {self.val_fraction!r}"
            )
        for k in (
            "n_iters",
            "batch_size",
            "n_layers",
            "hidden",
            "depth",
            "bins",
            "buffer_size",
            "eval_every",
            "patience",
            "rkl_batch",
            "ais_levels",
            "fab_buffer_batches",
            "fab_buffer_min_batches",
            "fab_replay_steps",
        ):
            if getattr(self, k) is not None and int(getattr(self, k)) < 1:
                raise ValueError(f"FlowSampler: {k} must be >= 1, got {getattr(self, k)!r}")


class FlowSampler:
    """A Boltzmann generator (spline flow) with a selectable training objective."""

    version = (
        "2"  # 2: validation split + early stopping for data objectives; ml_rkl, ml_reweighted, fab
    )

    def __init__(self, **config: Any) -> None:
        self.config = FlowConfig(**config)
        self.seed = 0
        self.flow: SplineFlow | None = None
        self.cmap: CoordinateMap | None = None
        self.callback: Callable[[FlowSampler, Mapping[str, Any]], None] | None = None
        self.callback_every = 0
        self._env_batch: int | None = None
        self._gen = torch.Generator().manual_seed(0)
        self.val_x: np.ndarray | None = None  # the held-out configurations of the last learn()
        self.val_log_w: np.ndarray | None = None  # their log-weights (ml_reweighted)

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
        cmap = make_coordinate_map(
            info["geometry"],
            int(info["dim"]),
            float(info.get("scale", 1.0)),
            int(info.get("n_particles", 0)),
            int(info.get("spatial_dim", 0)),
        )
        if len(x_data) >= 2:
            cmap.fit(torch.from_numpy(x_data.astype(np.float64)))
        elif isinstance(cmap, AlanineInternal):
            from icml26.envs.boltzmann.alanine import build_system

            cmap.fit_structure(torch.from_numpy(build_system("vacuum")[2].reshape(-1)))
        with torch.random.fork_rng():
            torch.manual_seed(derive_seed(self.seed, "flow-init"))
            self.flow = SplineFlow(
                cmap.flow_dim,
                cmap.circular,
                c.n_layers,
                c.hidden,
                c.depth,
                c.bins,
                c.bound,
                seed=derive_seed(self.seed, "flow-masks"),
            )
        self.cmap = cmap

    def learn(self, env: Any, budget: Budget | None = None) -> dict[str, Any]:
        """Start an episode (``env.reset()``), build the flow and train it with the objective."""
        c = self.config
        _, info = env.reset()
        self.bind(None, env.action_space)
        data = {
            "x": np.asarray(info["dataset"]["x"]),
            "energy": np.asarray(info["dataset"]["energy"]),
        }
        self._build(info, data["x"])
        params = list(self.flow.parameters())  # type: ignore[union-attr]
        opt = torch.optim.Adam(params, lr=c.lr, weight_decay=c.weight_decay)
        if c.objective in DATA_OBJECTIVES:
            if len(data["x"]) == 0:
                raise ValueError(
                    f"FlowSampler({c.objective}): needs a data set; the env has data='none'"
                )
            cap = int(budget.updates) if budget is not None and budget.updates else None
            n_iters = min(
                x for x in (c.n_iters, cap, None if (c.n_iters or cap) else 1000) if x is not None
            )
            log_w = None
            if c.objective == "ml_reweighted":
                target = getattr(getattr(env, "unwrapped", env), "target", None)
                log_w = bias_log_weights(
                    target,
                    torch.from_numpy(data["x"].astype(np.float64)),
                    torch.from_numpy(data["energy"]),
                    str(info.get("data", "unbiased")),
                )
            if c.objective == "ml_rkl" and int(info["budget"]["energy_evals"]) <= 0:
                raise ValueError(
                    "FlowSampler(ml_rkl): needs an energy budget for the reverse-KL term; "
                    "the env has 0 evaluations"
                )
            return self._learn_data(
                opt,
                data,
                n_iters,
                env=env,
                log_w=log_w,
                energy_left=int(info["budget"]["energy_evals"]),
            )
        left = int(info["budget"]["energy_evals"])
        if left <= 0:
            raise ValueError(
                f"FlowSampler({c.objective}): needs an energy budget; the env has 0 evaluations"
            )
        if c.objective == "fab":
            return self._learn_fab(env, opt, left)
        return self._learn_variational(env, opt, left)

    def _schedule(self, opt: torch.optim.Optimizer, total: int) -> Any:
        if not self.config.lr_decay:
            return None
        return torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(total, 1))

    def _update(
        self, opt: torch.optim.Optimizer, loss: torch.Tensor, stats: dict[str, Any]
    ) -> bool:
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

    def _split(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Seeded (train, validation) index split of ``n`` data points."""
        f = float(self.config.val_fraction)
        if f == 0.0:
            return np.arange(n), np.arange(0)
        n_val = int(round(f * n))
        if n_val < 2 or n - n_val < 2:
            raise ValueError(
                f"FlowSampler: val_fraction={f} of {n} data points leaves {n_val} for validation "
                f"and {n - n_val} for training; both need >= 2 (use more data or val_fraction=0)"
            )
        perm = np.random.default_rng(derive_seed(self.seed, "val-split")).permutation(n)
        return np.sort(perm[n_val:]), np.sort(perm[:n_val])

    def _data_loss(
        self, log_q: torch.Tensor, u: torch.Tensor, log_w: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(loss, nll, dispersion)`` of the objective's data terms on one batch."""
        c = self.config
        nan = torch.tensor(float("nan"))
        nll = -log_q.mean()
        if c.objective in ("ml", "ml_rkl"):
            return nll, nll, nan
        if c.objective == "ml_reweighted":
            assert log_w is not None
            return reweighted_nll(log_q, log_w), nll, nan
        disp = dispersion(-u - log_q, c.dispersion if c.objective == "ldr" else "variance")
        return (disp if c.objective == "lv" else nll + c.lam * disp), nll, disp

    def _val_loss(
        self, y: torch.Tensor, ladj: torch.Tensor, u: torch.Tensor, log_w: torch.Tensor | None
    ) -> float:
        with torch.no_grad():
            chunk = self.config.sample_chunk
            log_q = torch.cat(
                [
                    self._log_q_flow_coords(y[i : i + chunk], ladj[i : i + chunk])
                    for i in range(0, y.shape[0], chunk)
                ]
            )
            return float(self._data_loss(log_q, u, log_w)[0])

    def _learn_data(
        self,
        opt: torch.optim.Optimizer,
        data: Mapping[str, np.ndarray],
        n_iters: int,
        env: Any = None,
        log_w: torch.Tensor | None = None,
        energy_left: int = 0,
    ) -> dict[str, Any]:
        c = self.config
        flow, cmap = self._require_flow()
        with torch.no_grad():
            y_all, ladj_all = cmap.to_flow(torch.from_numpy(data["x"].astype(np.float64)))
        y_all = y_all.float()
        u_all = torch.from_numpy(np.asarray(data["energy"], dtype=np.float64))
        tr, va = self._split(y_all.shape[0])
        tr_t, va_t = torch.from_numpy(tr), torch.from_numpy(va)
        y, ladj, u = y_all[tr_t], ladj_all[tr_t], u_all[tr_t]
        w = None if log_w is None else log_w[tr_t]
        y_v, ladj_v, u_v = y_all[va_t], ladj_all[va_t], u_all[va_t]
        w_v = None if log_w is None else log_w[va_t]
        self.val_x = np.asarray(data["x"])[va]
        self.val_log_w = None if w_v is None else w_v.numpy()
        n = y.shape[0]
        sched = self._schedule(opt, n_iters)
        stats: dict[str, Any] = {
            "objective": c.objective,
            "iterations": n_iters,
            "dataset_size": int(y_all.shape[0]),
            "train_size": n,
            "val_size": int(len(va)),
            "energy_evals": 0,
            "skipped_updates": 0,
            "curve": [],
            "val_curve": [],
        }
        if log_w is not None:
            wn = torch.softmax(log_w, 0)
            stats["weights_ess"] = float(
                1.0 / (wn**2).sum() / len(wn)
            )  # Kish ESS / n of the data weights
        validate = len(va) > 0
        best, best_it, bad = math.inf, 0, 0
        best_state = {k: v.detach().clone() for k, v in flow.state_dict().items()}
        if validate:
            best = self._val_loss(y_v, ladj_v, u_v, w_v)
            stats["val_curve"].append({"iteration": 0, "val_loss": best})
        left = energy_left if c.objective == "ml_rkl" else 0
        every = max(1, n_iters // 20)
        done = 0
        for it in range(n_iters):
            idx = torch.randint(0, n, (min(c.batch_size, n),), generator=self._gen)
            log_q = self._log_q_flow_coords(y[idx], ladj[idx])
            loss, nll, disp = self._data_loss(log_q, u[idx], None if w is None else w[idx])
            if left > 0:
                m = min(c.rkl_batch, self._env_batch or c.rkl_batch, left)
                loss = loss + c.lam * self._rkl_term(env, m, stats)
                left -= m
            self._update(opt, loss, stats)
            if sched is not None:
                sched.step()
            done = it + 1
            if it % every == 0 or it == n_iters - 1:
                stats["curve"].append(
                    {
                        "iteration": it,
                        "nll": float(nll.detach()),
                        "dispersion": float(disp.detach()),
                        "loss": float(loss.detach()),
                    }
                )
            if (
                self.callback is not None
                and self.callback_every
                and (it + 1) % self.callback_every == 0
            ):
                self.callback(self, {"iteration": it + 1, "energy_evals": stats["energy_evals"]})
            if validate and (done % c.eval_every == 0 or done == n_iters):
                v = self._val_loss(y_v, ladj_v, u_v, w_v)
                stats["val_curve"].append({"iteration": done, "val_loss": v})
                if v < best:
                    best, best_it, bad = v, done, 0
                    best_state = {k: t.detach().clone() for k, t in flow.state_dict().items()}
                else:
                    bad += 1
                    if bad >= c.patience:
                        break
        stats["iterations"] = done
        stats["stopped_early"] = bool(validate and done < n_iters)
        if validate:
            flow.load_state_dict(best_state)
            stats["best_iteration"], stats["val_loss_best"] = best_it, best
        else:
            stats["best_iteration"] = done
        return stats

    def _rkl_term(self, env: Any, m: int, stats: dict[str, Any]) -> torch.Tensor:
        """Reverse-KL surrogate on ``m`` fresh model samples, energies and forces bought from ``env``."""
        flow, cmap = self._require_flow()
        yq, lq_flow = flow.rsample(m, self._gen)
        x, ladj_phys = cmap.to_phys(yq)
        _, _, _, _, info = env.step(x.detach().float().numpy())
        stats["energy_evals"] += m
        uq = torch.from_numpy(np.asarray(info["energies"], dtype=np.float64))
        ok = torch.isfinite(uq)
        stats["nonfinite_energies"] = stats.get("nonfinite_energies", 0) + int((~ok).sum())
        if not bool(ok.any()):
            return torch.zeros((), dtype=torch.float64)
        forces = torch.from_numpy(np.asarray(info["forces"], dtype=np.float64))
        log_q = lq_flow.double() - ladj_phys
        return reverse_kl_surrogate(x[ok], log_q[ok], uq[ok], forces[ok])

    def _learn_variational(self, env: Any, opt: torch.optim.Optimizer, left: int) -> dict[str, Any]:
        c = self.config
        flow, cmap = self._require_flow()
        batch = min(c.batch_size, self._env_batch or c.batch_size)
        n_batches = math.ceil(left / batch)
        replay = c.replay_steps if c.objective == "ldr_var" else 0
        sched = self._schedule(opt, n_batches * (1 + replay))
        stats: dict[str, Any] = {
            "objective": c.objective,
            "energy_evals": 0,
            "iterations": 0,
            "skipped_updates": 0,
            "nonfinite_energies": 0,
            "curve": [],
        }
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
                stats["curve"].append(
                    {
                        "energy_evals": spent,
                        "loss": float(loss.detach()),
                        "mean_energy": float(u[ok].mean()) if ok.any() else float("inf"),
                    }
                )
            if (
                self.callback is not None
                and self.callback_every
                and (b + 1) % self.callback_every == 0
            ):
                self.callback(self, {"iteration": stats["iterations"], "energy_evals": spent})
        stats["energy_evals"] = spent
        return stats

    def _fab_setup(self, env: Any, stats: dict[str, Any]) -> tuple[Callable, Callable, int]:
        """FAB's ``log_q`` and ``energy`` callables for :func:`.ais` and the env's batch size."""
        flow, cmap = self._require_flow()
        if any(cmap.circular):
            raise ValueError(
                "FlowSampler(fab): AIS with MALA is implemented for real coordinates only, "
                "not for flows with circular (torsion) coordinates"
            )
        env_batch = self._env_batch or self.config.batch_size

        def log_q(y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            y = y.detach().float().requires_grad_(True)
            lq = flow.log_prob(y)
            (g,) = torch.autograd.grad(lq.sum(), y)
            return lq.detach().double(), g.double()

        def energy(y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            """Energy of the flow-coordinate density, ``u(x(y)) - log|dx/dy|``, and its force."""
            us, fs = [], []
            for i in range(0, y.shape[0], env_batch):
                yb = y[i : i + env_batch].detach().requires_grad_(True)
                x, ladj = cmap.to_phys(yb)
                _, _, _, _, info = env.step(x.detach().float().numpy())
                stats["energy_evals"] += int(yb.shape[0])
                u = torch.from_numpy(np.asarray(info["energies"], dtype=np.float64))
                ok = torch.isfinite(u)
                stats["nonfinite_energies"] += int((~ok).sum())
                f = torch.nan_to_num(
                    torch.from_numpy(np.asarray(info["forces"], dtype=np.float64)),
                    nan=0.0,
                    posinf=0.0,
                    neginf=0.0,
                )
                (g,) = torch.autograd.grad(
                    (x * f).sum() + ladj.sum(), yb
                )  # grad of -u(x(y)) + log|dx/dy|
                us.append(u - ladj.detach())
                fs.append(g)
            return torch.cat(us), torch.cat(fs)

        return log_q, energy, env_batch

    def _fab_stats(self) -> dict[str, Any]:
        return {
            "objective": self.config.objective,
            "energy_evals": 0,
            "iterations": 0,
            "skipped_updates": 0,
            "nonfinite_energies": 0,
            "curve": [],
        }

    def _learn_fab(self, env: Any, opt: torch.optim.Optimizer, left: int) -> dict[str, Any]:
        from icml26.agents.boltzmann.ais import ais

        c = self.config
        if c.fab_buffer:
            return self._learn_fab_buffer(env, opt, left)
        flow, _ = self._require_flow()
        stats = self._fab_stats()
        log_q, energy, env_batch = self._fab_setup(env, stats)
        per_chain = c.ais_levels + 1
        n_updates = max(1, left // (min(c.batch_size, env_batch) * per_chain))
        sched = self._schedule(opt, n_updates)
        steps = torch.full((c.ais_levels,), float(c.ais_step), dtype=torch.float64)

        every = max(1, n_updates // 20)
        for it in range(n_updates):
            m = min(c.batch_size, env_batch, (left - stats["energy_evals"]) // per_chain)
            if m < 2:
                break
            with torch.no_grad():
                y0, _ = flow.rsample(m, self._gen)
            res = ais(y0.double(), log_q, energy, c.ais_levels, steps, self._gen, alpha=c.alpha)
            steps = res.step_sizes
            ok = torch.isfinite(res.log_w)
            if not bool(ok.any()):
                stats["skipped_updates"] += 1
                continue
            log_q_ais = flow.log_prob(res.x[ok].float()).double()
            loss = reweighted_nll(log_q_ais, res.log_w[ok])
            self._update(opt, loss, stats)
            if sched is not None:
                sched.step()
            stats["iterations"] += 1
            if it % every == 0 or it == n_updates - 1:
                wn = torch.softmax(res.log_w[ok], 0)
                stats["curve"].append(
                    {
                        "energy_evals": stats["energy_evals"],
                        "loss": float(loss.detach()),
                        "ais_ess": float(1.0 / (wn**2).sum() / m),
                        "accept": res.accept[-1],
                    }
                )
            self._fab_callback(it, stats)
        stats["ais_step_sizes"] = [float(v) for v in steps]
        return stats

    def _fab_callback(self, it: int, stats: dict[str, Any]) -> None:
        if (
            self.callback is not None
            and self.callback_every
            and (it + 1) % self.callback_every == 0
        ):
            self.callback(
                self, {"iteration": stats["iterations"], "energy_evals": stats["energy_evals"]}
            )

    def _learn_fab_buffer(self, env: Any, opt: torch.optim.Optimizer, left: int) -> dict[str, Any]:
        """FAB with its prioritized replay buffer (see :mod:`.fab_buffer`).

        Each AIS batch of ``m`` chains (``m * (ais_levels + 1)`` evaluations) is added to the
        buffer; once it holds ``fab_buffer_min_batches`` batches, every AIS batch is followed by
        ``fab_replay_steps`` gradient steps on batches drawn from the buffer with probability
        ``∝ w``. ``iterations`` counts gradient steps; the callback fires per AIS batch.
        """
        from icml26.agents.boltzmann.ais import ais
        from icml26.agents.boltzmann.fab_buffer import PrioritizedBuffer, buffer_loss

        c = self.config
        flow, _ = self._require_flow()
        stats = self._fab_stats()
        stats["ais_batches"] = 0
        log_q, energy, env_batch = self._fab_setup(env, stats)
        per_chain = c.ais_levels + 1
        m0 = min(c.batch_size, env_batch)
        n_ais = max(1, left // (m0 * per_chain))
        n_updates = max(1, (n_ais - c.fab_buffer_min_batches + 1) * c.fab_replay_steps)
        sched = self._schedule(opt, n_updates)
        steps = torch.full((c.ais_levels,), float(c.ais_step), dtype=torch.float64)
        buf = PrioritizedBuffer(c.fab_buffer_batches * m0)
        every = max(1, n_ais // 20)
        for it in range(n_ais):
            m = min(m0, (left - stats["energy_evals"]) // per_chain)
            if m < 2:
                break
            with torch.no_grad():
                y0, _ = flow.rsample(m, self._gen)
            res = ais(y0.double(), log_q, energy, c.ais_levels, steps, self._gen, alpha=c.alpha)
            steps = res.step_sizes
            stats["ais_batches"] += 1
            with torch.no_grad():
                buf.add(res.x, res.log_w, flow.log_prob(res.x.float()).double())
            losses, w_adj = [], []
            if len(buf) >= c.fab_buffer_min_batches * m0:
                idx_all = buf.sample_indices(c.fab_replay_steps * m0, self._gen)
                for idx in idx_all.split(m0):
                    lq = flow.log_prob(buf.x[idx].float()).double()  # type: ignore[index]
                    loss, w = buffer_loss(lq, buf.log_q_old[idx], c.fab_w_clip)
                    buf.adjust(idx, lq)
                    self._update(opt, loss, stats)
                    if sched is not None:
                        sched.step()
                    stats["iterations"] += 1
                    losses.append(float(loss.detach()))
                    w_adj.append(float(w.mean()))
            if losses and (it % every == 0 or it == n_ais - 1):
                ok = torch.isfinite(res.log_w)
                wn = torch.softmax(res.log_w[ok], 0)
                stats["curve"].append(
                    {
                        "energy_evals": stats["energy_evals"],
                        "loss": float(np.mean(losses)),
                        "w_adjust_mean": float(np.mean(w_adj)),
                        "ais_ess": float(1.0 / (wn**2).sum() / m),
                        "accept": res.accept[-1],
                    }
                )
            self._fab_callback(it, stats)
        stats["ais_step_sizes"] = [float(v) for v in steps]
        stats["buffer_length"] = len(buf)
        return stats

    def _buffer_dispersion(
        self, buf_y: torch.Tensor, buf_l: torch.Tensor, buf_u: torch.Tensor
    ) -> torch.Tensor:
        c = self.config
        if buf_y.shape[0] < 2:
            return torch.zeros((), dtype=torch.float64)
        idx = torch.randint(
            0, buf_y.shape[0], (min(c.batch_size, buf_y.shape[0]),), generator=self._gen
        )
        log_q = self._log_q_flow_coords(buf_y[idx], buf_l[idx])
        return dispersion(-buf_u[idx] - log_q, c.dispersion)

    def describe(self) -> dict[str, Any]:
        return asdict(self.config)
