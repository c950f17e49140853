"""Phi: ScenePilot's online-learned AV-risk predictor (``safebench/gym_carla/envs/av_safe.py``).

An MLP 6 -> 128 -> 128 -> 1 with a sigmoid, trained by TD(0) on the dense signal
``r = collision + (gamma inv_d' - inv_d)`` with target ``clip(r + (1 - done) gamma V_target(s'), 0, 1)``
and a weighted binary cross-entropy (weight 50 where ``clip(target + k inv_d, 0, 1) > 0.85``).
Risk is ``clip(V_target(s) + k inv_d, 0, 1)``. Training starts after the first collision, with one
Adam step per transition (batch 1; the release's module-global ``av_safe.update`` is called once
per step by every scene). The predictor is *ready* (and its risk replaces the TTC fallback):

* when the mean loss over the last ``window`` (1000) updates drops below ``eps_loss`` (0.01), the
  release's in-run convergence test (``av_safe.py``); the target network is then used as it is;
* after ``max_updates`` updates, the release's ``--train_avsafe_steps`` cap (5000 per route in
  ``scripts/start_training_avsafe_ppo.sh``). The release then stops, saves the *online* network as
  the checkpoint and trains ScenePilot with it frozen (``rlconfig.yaml`` ``av_safe.training: false``
  loads it into both networks); :meth:`RiskPredictor.freeze` does the same in-run;
* when a trained predictor is loaded for inference.

The convergence test alone is slow to pass: V_target in safe states decays by about ``1 - tau
(1 - gamma) = 0.9995`` per 100 updates (the target moves by tau = 1% every 100), and the BCE
cannot fall below its soft targets' entropy before that decay is done (10^5-10^6 updates).

Inference and training run in NumPy (float32, torch's Linear/BCE/Adam arithmetic written out:
an env never imports torch, which alone takes over a second); ``_torch`` gives torch modules and
an Adam optimizer holding the same state, to check against the release's torch code.
"""

from __future__ import annotations

import collections
import copy
import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["RiskPredictor", "HorizonPhiLearner", "make_phi", "PHI_MAX_UPDATES"]

PHI_MAX_UPDATES = 5000  # phi="online": freeze after this many updates (train_avsafe_steps)
N_FEATURES = 6
_HP = ("eps_loss", "gamma", "hidden", "k_inv_d", "lr", "pos_threshold", "pos_weight", "tau",
       "update_gap", "window")  # fmt: skip
_LEARNER_KEYS = ("horizon_steps", "batch_size", "samples_per_update", "buffer_size",
                 "min_updates", "max_updates")  # fmt: skip
_BETAS, _ADAM_EPS = (0.9, 0.999), 1e-8  # torch.optim.Adam's defaults, as the release uses them


class _Net:
    """The MLP's online or target parameters in one float32 buffer (views W1, b1, W2, b2, W3, b3)."""

    def __init__(self, arrays: list[np.ndarray]) -> None:
        flat = np.concatenate([np.ravel(a) for a in arrays]).astype(np.float32)
        self.__setstate__(([np.shape(a) for a in arrays], flat))

    @staticmethod
    def split(flat: np.ndarray, shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
        """Views of ``flat`` in ``shapes``."""
        ends = np.cumsum([int(np.prod(s)) for s in shapes])
        return [flat[e - int(np.prod(s)) : e].reshape(s) for s, e in zip(shapes, ends)]

    def __getstate__(self) -> tuple[list[tuple[int, ...]], np.ndarray]:
        return self.shapes, self.flat

    def __setstate__(self, state: tuple[list[tuple[int, ...]], np.ndarray]) -> None:
        self.shapes, self.flat = state
        self.views = self.split(self.flat, self.shapes)
        self._work: dict[int, np.ndarray] = {}

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, ...]:
        """(h1, h2, p): both hidden activations and the sigmoid output (N,)."""
        w1, b1, w2, b2, w3, b3 = self.views
        # in place, in buffers kept per batch size: NumPy's elision of large temporaries
        # (x @ w + b) and fresh 0.5 MB arrays cost more than the product for N = 1024 rows
        work = self._work.get(len(x))
        if work is None:
            work = self._work[len(x)] = np.empty((2, len(x), w1.shape[0]), np.float32)
        h1 = np.matmul(x, w1.T, out=work[0])
        h1 += b1
        np.maximum(h1, 0.0, out=h1)
        h2 = np.matmul(h1, w2.T, out=work[1])
        h2 += b2
        np.maximum(h2, 0.0, out=h2)
        z = h2 @ w3.T
        z += b3
        return h1, h2, 1.0 / (1.0 + np.exp(-z[:, 0]))


class RiskPredictor:
    """Phi with the release's hyperparameters (``rlconfig.yaml`` ``av_safe``).

    Args:
        training: learn online (``update``); False = inference only (``ready`` is True).
        seed: initial weights (torch.nn.Linear's default init, U(+-1/sqrt(fan_in))).
        lr, gamma, update_gap, tau, k_inv_d, eps_loss, window, pos_weight, pos_threshold, hidden:
            as in the release (1e-3, 0.95, 100, 0.01, 1, 1e-2, 1000, 50, 0.85, 128).
        max_updates: freeze (ready, risk from the online weights) after this many updates; the
            release's ``train_avsafe_steps`` (5000 per route). ``None``: only the convergence test.
    """

    def __init__(self, training: bool = True, seed: int = 0, lr: float = 1e-3, gamma: float = 0.95,
                 update_gap: int = 100, tau: float = 0.01, k_inv_d: float = 1.0,
                 eps_loss: float = 1e-2, window: int = 1000, pos_weight: float = 50.0,
                 pos_threshold: float = 0.85, hidden: int = 128,
                 max_updates: int | None = None) -> None:  # fmt: skip
        cap = max_updates
        if cap is not None and (not isinstance(cap, (int, np.integer)) or cap < 1):
            msg = f"RiskPredictor: max_updates must be a positive int or None, got {cap!r}"
            raise ValueError(msg)
        self.training = bool(training)
        self.max_updates = None if max_updates is None else int(max_updates)
        self.frozen_at: int | None = None  # update count at which max_updates froze the predictor
        self.lr, self.gamma, self.update_gap = float(lr), float(gamma), int(update_gap)
        self.tau = float(tau)
        self.k_inv_d, self.eps_loss, self.window = float(k_inv_d), float(eps_loss), int(window)
        self.pos_weight, self.pos_threshold = float(pos_weight), float(pos_threshold)
        self.hidden = int(hidden)
        rng = np.random.default_rng(seed)
        arrays = []
        for fan_in, fan_out in ((N_FEATURES, hidden), (hidden, hidden), (hidden, 1)):
            bound = 1.0 / np.sqrt(fan_in)
            arrays += [rng.uniform(-bound, bound, size=(fan_out, fan_in)).astype(np.float32),
                       rng.uniform(-bound, bound, size=fan_out).astype(np.float32)]  # fmt: skip
        self._on, self._tg = _Net(arrays), _Net(arrays)
        self._adam = np.zeros((2, self._on.flat.size), np.float32)  # Adam's 1st, 2nd moments
        self._adam_steps = 0
        self.started = False  # training begins after the first collision
        self.converged = not self.training
        self.n_updates = 0
        self._losses: collections.deque[float] = collections.deque(maxlen=self.window)
        self._loss_sum = 0.0  # running sum of _losses

    # the online and target networks' [W1, b1, W2, b2, W3, b3] (assigning a list copies it in)
    _online = property(lambda s: s._on.views, lambda s, a: setattr(s, "_on", _Net(a)))
    _target = property(lambda s: s._tg.views, lambda s, a: setattr(s, "_tg", _Net(a)))

    def _sync_from_torch(self) -> None:
        """Nothing to do: the NumPy arrays are the predictor (kept for torch-era callers)."""

    @property
    def _torch(self) -> dict[str, Any]:
        """torch modules (online, target) and an Adam optimizer holding this predictor's state (a
        copy, for checks against the release's torch code)."""
        import torch

        def net(params: list[np.ndarray]) -> Any:
            m = torch.nn.Sequential(torch.nn.Linear(N_FEATURES, self.hidden), torch.nn.ReLU(),
                                    torch.nn.Linear(self.hidden, self.hidden), torch.nn.ReLU(),
                                    torch.nn.Linear(self.hidden, 1), torch.nn.Sigmoid())  # fmt: skip
            with torch.no_grad():
                for t, a in zip(m.parameters(), params):
                    t.copy_(torch.from_numpy(np.array(a)))
            return m

        online, target = net(self._online), net(self._target)
        opt = torch.optim.Adam(online.parameters(), lr=self.lr)
        if self._adam_steps:
            m, v = (_Net.split(a.copy(), self._on.shapes) for a in self._adam)
            for p, mi, vi in zip(online.parameters(), m, v):
                opt.state[p] = {"step": torch.tensor(float(self._adam_steps)),
                                "exp_avg": torch.from_numpy(mi),
                                "exp_avg_sq": torch.from_numpy(vi)}  # fmt: skip
        return {"torch": torch, "online": online, "target": target, "opt": opt}

    @property
    def ready(self) -> bool:
        """True once trained (converged) or loaded for inference: its risk replaces the TTC fallback."""
        return self.converged

    def value(self, feats: np.ndarray, target: bool = True) -> np.ndarray:
        """V(s) of the target (default) or online network, shape (N,)."""
        return (self._tg if target else self._on).forward(np.asarray(feats, np.float32))[2]

    def risk(self, feats: np.ndarray) -> np.ndarray:
        """Phi(s) = clip(V_target(s) + k inv_d, 0, 1) for a batch of 6-feature rows."""
        feats = np.asarray(feats, np.float32)
        return np.clip(self.value(feats) + self.k_inv_d * feats[:, -2], 0.0, 1.0)

    @property
    def learning(self) -> bool:
        """True while the env trains it (``phi_model="td"``): online and not yet ready."""
        return self.training and not self.ready

    def observe_step(self, before, after, ttc_risk, collision, terminated, ended, on):  # type: ignore[no-untyped-def]
        """One env step of ``phi_model="td"`` (the release): the step's risk (Phi of the new state
        once ready, else the TTC proxy), then one TD(0) transition per scene ``on`` (None: all)
        from the first collision on. Returns (risk (N,), whether Phi gave it)."""
        used = self.ready
        risk = self.risk(after) if used else ttc_risk
        if self.learning:
            self.started = self.started or bool(collision.any())
            if self.started:
                rows = slice(None) if on is None else on
                r_td = collision.astype(np.float32) + self.gamma * after[:, -2] - before[:, -2]
                done = terminated[rows].astype(np.float32)
                self.update(before[rows], after[rows], r_td[rows], done)
        return risk, used

    def observe_step_one(self, before, after, ttc_risk, collision, terminated, ended):  # type: ignore[no-untyped-def]
        """:meth:`observe_step` for one scene (the single env): rows (6,), Python scalars."""
        used = self.ready
        risk = float(self.risk(after[None])[0]) if used else ttc_risk
        if self.learning:
            self.started = self.started or bool(collision)
            if self.started:
                r_td = np.float32(collision) + self.gamma * after[-2] - before[-2]
                self.update(before[None], after[None], np.float32([r_td]), np.float32([terminated]))
        return risk, used

    def _step(self, x: np.ndarray, tgt: np.ndarray, weight: np.ndarray | None) -> float:
        """One Adam step on the (weighted) BCE of the online network's output against ``tgt``, as
        torch computes it (Linear, Sigmoid, binary_cross_entropy with mean reduction, Adam)."""
        net, n = self._on, len(x)
        h1, h2, p = net.forward(x)
        w1, _, w2, _, w3, _ = net.views
        log_p, log_q = np.maximum(np.log(p), -100.0), np.maximum(np.log1p(-p), -100.0)
        terms = -(tgt * log_p + (1.0 - tgt) * log_q)
        if weight is not None:
            terms = weight * terms
        # binary_cross_entropy's backward, then the sigmoid's
        dp = (p - tgt) / np.maximum((1.0 - p) * p, np.float32(1e-12)) / np.float32(n)
        dz = (dp if weight is None else weight * dp) * ((1.0 - p) * p)
        g3 = dz[:, None]
        grad, (g_w1, g_b1, g_w2, g_b2, g_w3, g_b3), d2, d1, tmp = self._workspace(n)
        np.multiply(g3, w3, out=d2)  # an outer product (K = 1): the same products as a matmul
        d2 *= h2 > 0
        np.matmul(d2, w2, out=d1)
        d1 *= h1 > 0
        outer = np.multiply if n == 1 else np.matmul  # one row: the same products, 4x faster
        outer(d1.T, x, out=g_w1)
        np.sum(d1, axis=0, out=g_b1)
        outer(d2.T, h1, out=g_w2)
        np.sum(d2, axis=0, out=g_b2)
        outer(g3.T, h2, out=g_w3)
        np.sum(g3, axis=0, out=g_b3)
        self._adam_steps += 1
        t, (b1, b2) = self._adam_steps, _BETAS
        m, v = self._adam
        np.subtract(grad, m, out=tmp)  # torch: exp_avg.lerp_(grad, 1 - beta1)
        tmp *= np.float32(1.0 - b1)
        m += tmp
        v *= np.float32(b2)
        np.multiply(np.float32(1.0 - b2), grad, out=tmp)
        tmp *= grad
        v += tmp
        np.sqrt(v, out=tmp)  # denom = sqrt(v) / sqrt(1 - b2^t) + eps; step = lr/(1 - b1^t) m/denom
        tmp /= np.float32(math.sqrt(1.0 - b2**t))
        tmp += np.float32(_ADAM_EPS)
        np.divide(np.multiply(np.float32(self.lr / (1.0 - b1**t)), m, out=grad), tmp, out=grad)
        net.flat -= grad
        return float(terms.mean(dtype=np.float32))

    def _workspace(self, n: int) -> tuple[Any, ...]:
        """Buffers of one Adam step on ``n`` rows: the flat gradient and its per-layer views, the
        two hidden layers' gradients and a flat scratch array (reused: no fresh 0.1 MB arrays)."""
        ws = self.__dict__.setdefault("_ws", {})
        if n not in ws:
            grad = np.empty_like(self._on.flat)
            hid = (n, self.hidden)
            ws[n] = (grad, _Net.split(grad, self._on.shapes), np.empty(hid, np.float32),
                     np.empty(hid, np.float32), np.empty_like(grad))  # fmt: skip
        return ws[n]

    def td_targets(self, s: np.ndarray, s_next: np.ndarray, r: np.ndarray,
                   done: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """(target, weight) of the TD(0) BCE loss for a batch of transitions."""
        tgt = np.clip(r + (1.0 - done) * self.gamma * self.value(s_next), 0.0, 1.0)
        tgt_risk = np.clip(tgt + self.k_inv_d * np.asarray(s, np.float32)[:, -2], 0.0, 1.0)
        w = np.where(tgt_risk > self.pos_threshold, self.pos_weight, 1.0)
        return tgt.astype(np.float32), w.astype(np.float32)

    def td_loss(self, s: np.ndarray, s_next: np.ndarray, r: np.ndarray, done: np.ndarray) -> float:
        """The weighted BCE TD loss of the online network on a batch (no update)."""
        tgt, w = self.td_targets(s, s_next, r, done)
        pred = np.clip(self.value(s, target=False), 1e-7, 1 - 1e-7)
        return float(np.mean(-w * (tgt * np.log(pred) + (1 - tgt) * np.log(1 - pred))))

    def update(self, s: np.ndarray, s_next: np.ndarray, r: np.ndarray,
               done: np.ndarray) -> float | None:  # fmt: skip
        """TD(0) Adam steps, one per transition (row) in order, as the release's ``av_safe.update``.

        Each row is a batch of one: its target uses the target network as it stands (it moves by
        tau every ``update_gap`` updates), the convergence test runs after every update, and the
        predictor stops learning once ready. Returns the mean loss of the rows used (None if none).
        """
        if not self.training or self.converged:
            return None
        s, s_next = (np.asarray(a, np.float32).reshape(-1, N_FEATURES) for a in (s, s_next))
        r, done = np.asarray(r, np.float32).reshape(-1), np.asarray(done, np.float32).reshape(-1)
        if not (len(s) == len(s_next) == len(r) == len(done)):
            raise ValueError(f"RiskPredictor.update: s, s_next, r, done need the same number of "
                             f"rows, got {len(s)}, {len(s_next)}, {len(r)}, {len(done)}")  # fmt: skip
        v_next = self.value(s_next).astype(np.float64)  # exact until the next soft update
        stale_from = self.update_gap - self.n_updates % self.update_gap  # rows from here: moved
        losses = []
        for i in range(len(s)):
            if i >= stale_from and (i - stale_from) % self.update_gap == 0:
                v_next[i:] = self.value(s_next[i:])
            tgt = float(r[i]) + (1.0 - float(done[i])) * self.gamma * float(v_next[i])
            tgt = min(max(tgt, 0.0), 1.0)
            tgt_risk = min(max(tgt + self.k_inv_d * float(s[i, -2]), 0.0), 1.0)
            w = self.pos_weight if tgt_risk > self.pos_threshold else 1.0
            value = self._step(s[i : i + 1], np.float32([tgt]), np.float32([w]))
            self.n_updates += 1
            losses.append(value)
            if len(self._losses) == self.window:
                self._loss_sum -= self._losses[0]
            self._losses.append(value)
            self._loss_sum += value
            if self.n_updates % self.window == 0:  # re-sum exactly now and then (no drift)
                self._loss_sum = math.fsum(self._losses)
            if len(self._losses) == self.window and self._loss_sum / self.window < self.eps_loss:
                self.converged = True  # the release's test comes before the soft update
            if self.n_updates % self.update_gap == 0:
                self._tg.flat *= np.float32(1 - self.tau)
                self._tg.flat += np.float32(self.tau) * self._on.flat
            if self.converged:
                break
            if self.max_updates is not None and self.n_updates >= self.max_updates:
                self.freeze()
                break
        return float(np.mean(losses)) if losses else None

    def freeze(self) -> None:
        """Stop learning and use the online network for the risk (target := online): what the release
        does between its AV-safe training run (which saves ``_net``) and ScenePilot's training (which
        loads that checkpoint into both networks with ``training: false``)."""
        self._tg = _Net(self._online)
        self.frozen_at = self.n_updates
        self.converged = True

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_ws"}  # buffers of views: rebuilt

    def state_dict(self) -> dict[str, Any]:
        return {"online": [a.copy() for a in self._online], "target": [a.copy() for a in self._target],
                "started": self.started, "converged": self.converged, "n_updates": self.n_updates,
                "losses": list(self._losses), "training": self.training, "frozen_at": self.frozen_at,
                "max_updates": self.max_updates, "hparams": {k: getattr(self, k) for k in _HP}}  # fmt: skip

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the predictor to an ``.npz`` file (weights, counters, hyperparameters)."""
        cap = -1 if self.max_updates is None else self.max_updates
        arrays = {f"online_{i}": a for i, a in enumerate(self._online)}
        arrays.update({f"target_{i}": a for i, a in enumerate(self._target)})
        meta = np.array([self.started, self.converged, self.n_updates, cap], dtype=np.int64)
        hp = np.array([getattr(self, k) for k in _HP], dtype=np.float64)
        np.savez(path, meta=meta, hparams=hp, **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str], training: bool = False) -> RiskPredictor:
        """Load a saved predictor; ``training=False`` freezes it (ready, risk = Phi)."""
        with np.load(path) as z:
            hp = dict(zip(_HP, z["hparams"].tolist()))
            for k in ("hidden", "update_gap", "window"):
                hp[k] = int(hp[k])
            obj = cls(training=training, **hp)
            obj._on, obj._tg = (_Net([z[f"{k}_{i}"] for i in range(6)]) for k in ("online", "target"))  # fmt: skip
            started, converged, n = (int(v) for v in z["meta"][:3])
            cap = int(z["meta"][3]) if len(z["meta"]) > 3 else -1
        obj.started, obj.n_updates = bool(started), n
        obj.max_updates = None if cap < 0 else cap
        obj.converged = True if not training else bool(converged)
        return obj


# ---------------------------------------------------------------------------- ScenePilot-v1's Phi


class HorizonPhiLearner:
    """Online Phi of ScenePilot-v1: ``P(ego collision within the next H steps | s)``, learned from
    labels instead of TD, in batches.

    A state ``s_t`` (the 6 features before step t+1) is labelled 1 when the ego collides at one
    of the steps ``t+1 .. t+H`` of the same episode, and 0 when the H steps pass (or the episode
    ends) without one; labels are therefore known H steps late, so each scene keeps its last H
    states. Labelled states go to a replay buffer; every ``samples_per_update`` new labels one
    Adam step (BCE, minibatch ``batch_size``) trains the predictor's online network, starting at
    the first collision (as the release's Phi). The predictor is *ready* after ``min_updates``
    steps (the env's risk is the TTC proxy before) and frozen after ``max_updates`` (the release's
    ``train_avsafe_steps``). One learner serves all N scenes of a vector env.

    Args:
        n: number of scenes; predictor: the network (a :class:`RiskPredictor` with ``k_inv_d = 0``,
        so its risk is the probability itself); horizon_steps: H (20 = 2 s); the rest as named.
    """

    def __init__(self, n: int, predictor: RiskPredictor, horizon_steps: int = 20, batch_size: int = 256,
                 samples_per_update: int = 128, buffer_size: int = 200_000, min_updates: int = 500,
                 max_updates: int | None = 5000, seed: int = 0) -> None:  # fmt: skip
        for name, v in (("n", n), ("horizon_steps", horizon_steps), ("batch_size", batch_size),
                        ("samples_per_update", samples_per_update), ("buffer_size", buffer_size)):  # fmt: skip
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"HorizonPhiLearner: {name} must be a positive int, got {v!r}")
        self.n, self.h = int(n), int(horizon_steps)
        self.net = predictor
        self.batch_size, self.samples_per_update = int(batch_size), int(samples_per_update)
        self.min_updates = int(min_updates)
        self.max_updates = None if max_updates is None else int(max_updates)
        self.learning = bool(predictor.training) and not predictor.ready
        self._rng = np.random.default_rng(seed)
        self._buf = np.zeros((self.n, self.h, N_FEATURES), np.float32)
        self._start, self._count = np.zeros(self.n, np.int64), np.zeros(self.n, np.int64)
        self._X = np.zeros((int(buffer_size), N_FEATURES), np.float32)
        self._Y = np.zeros(int(buffer_size), np.float32)
        self._size = self._pos = self._pending = 0
        self.n_updates = self.n_labelled = self.n_positive = 0
        self.last_loss: float | None = None
        self._win: list[np.ndarray] = []  # one scene (n = 1): its unlabelled states, oldest first

    @property
    def ready(self) -> bool:
        """True when the risk comes from the predictor (trained enough, frozen or loaded)."""
        return not self.learning or self.n_updates >= self.min_updates

    def risk(self, feats: np.ndarray) -> np.ndarray:
        """Predicted collision probability (plus the predictor's ``k_inv_d`` term) per row."""
        f = np.asarray(feats, np.float32)
        v = self.net.value(f, target=not self.learning)  # the sigmoid is in (0, 1]: no clip needed
        return v if self.net.k_inv_d == 0.0 else np.clip(v + self.net.k_inv_d * f[:, -2], 0.0, 1.0)

    def observe_step(self, before, after, ttc_risk, collision, terminated, ended, on):  # type: ignore[no-untyped-def]
        """One env step of ``phi_model="horizon"``: label and learn (scenes ``on``; None: all),
        then the step's risk (the predicted probability once ready, else the TTC proxy)."""
        if self.learning:
            self.observe(before, collision, ended, np.ones(self.n, bool) if on is None else on)
        used = self.ready
        return (self.risk(after) if used else ttc_risk), used

    def observe_step_one(self, before, after, ttc_risk, collision, terminated, ended):  # type: ignore[no-untyped-def]
        """:meth:`observe_step` for one scene (the single env): rows (6,), Python scalars."""
        if self.learning:
            self._observe_one(before, collision, ended)
        used = self.ready
        return (float(self.risk(after[None])[0]) if used else ttc_risk), used

    def reset_rows(self, idx: np.ndarray) -> None:
        """Forget the pending (unlabelled) states of scenes ``idx`` (a reset without an episode end)."""
        self._count[idx] = 0
        self._win.clear()

    def _observe_one(self, feat: np.ndarray, collided: bool, ended: bool) -> None:
        """:meth:`observe` of a one-scene learner, on a Python list of its pending states."""
        win = self._win
        win.append(feat.copy())
        if collided or ended:
            self._add(np.stack(win), 1.0 if collided else 0.0)
            win.clear()
        elif len(win) >= self.h:
            self._add(win.pop(0)[None], 0.0)
        if not self.n_positive:
            self._pending = min(self._pending, self.samples_per_update)
        elif self._pending >= self.samples_per_update:
            self._train()

    def observe(self, feats: np.ndarray, collided: np.ndarray, ended: np.ndarray,
                active: np.ndarray) -> None:  # fmt: skip
        """Record ``feats`` (N, 6), the states before this step, and this step's outcome per scene."""
        if not self.learning:
            return
        rows = np.flatnonzero(active)
        pos = (self._start[rows] + self._count[rows]) % self.h
        self._buf[rows, pos] = feats[rows]
        self._count[rows] += 1
        done = active & (collided | ended)
        for i in np.flatnonzero(done):  # the whole window is labelled at once
            c = int(self._count[i])
            k = (self._start[i] + np.arange(c)) % self.h
            self._add(self._buf[i, k], 1.0 if collided[i] else 0.0)
            self._count[i], self._start[i] = 0, 0
        full = np.flatnonzero(active & ~done & (self._count >= self.h))
        if len(full):  # their oldest state saw H steps without a collision
            self._add(self._buf[full, self._start[full]], 0.0)
            self._start[full] = (self._start[full] + 1) % self.h
            self._count[full] -= 1
        if not self.n_positive:  # training starts at the first collision (as the release's)
            self._pending = min(self._pending, self.samples_per_update)
        elif self._pending >= self.samples_per_update:
            self._train()

    def _add(self, x: np.ndarray, label: float) -> None:
        m, cap = len(x), len(self._X)
        if m == 1:
            self._X[self._pos], self._Y[self._pos] = x[0], label
        else:  # a slice unless the ring wraps
            k = (
                slice(self._pos, self._pos + m)
                if self._pos + m <= cap
                else (self._pos + np.arange(m)) % cap
            )
            self._X[k], self._Y[k] = x, label
        self._pos = int((self._pos + m) % cap)
        self._size = min(self._size + m, cap)
        self._pending += m
        self.n_labelled += m
        self.n_positive += int(m * label)

    def _train(self) -> None:
        while self._pending >= self.samples_per_update and self.learning:
            self._pending -= self.samples_per_update
            k = self._rng.integers(0, self._size, size=min(self.batch_size, self._size))
            self.last_loss = self.net._step(self._X[k], self._Y[k], None)
            self.n_updates += 1
            self.net.n_updates += 1
            if self.max_updates is not None and self.n_updates >= self.max_updates:
                self.freeze()
        self._pending = min(self._pending, self.samples_per_update - 1)

    def freeze(self) -> None:
        """Stop learning; the predictor's risk then comes from its (frozen) weights."""
        self.net.freeze()
        self.learning = False

    def frozen_copy(self) -> RiskPredictor:
        """A frozen copy of the predictor as it stands (for saving or for a later phase)."""
        p = copy.deepcopy(self.net)
        p.freeze()
        p.training = False
        return p


def make_phi(phi: Any, model: str, n: int,
             seed: int = 0) -> RiskPredictor | HorizonPhiLearner | None:  # fmt: skip
    """The env's risk predictor: ``"ttc"``/None (none: the TTC proxy), ``"online"`` (learned in
    the env), ``"frozen:<path>"`` or a path (loaded, frozen), a :class:`RiskPredictor` (frozen ones
    are used as they are, trainable ones are trained), a dict of its (and, for ``model="horizon"``,
    :class:`HorizonPhiLearner`'s) arguments, or a learner. ``model``: ``"td"`` (the release's
    TD(0) Phi, one Adam step per transition, frozen after 5,000) or ``"horizon"`` (collision within
    2 s, batches; shared by ``n`` scenes)."""
    horizon = model == "horizon"
    if phi is None or (isinstance(phi, str) and phi == "ttc"):
        return None
    if isinstance(phi, HorizonPhiLearner) and horizon:
        if phi.n != n:
            raise ValueError(f"phi: the learner serves {phi.n} scenes, this env has {n}")
        return phi
    defaults = {"training": True, "seed": seed,
                **({"k_inv_d": 0.0} if horizon else {"max_updates": PHI_MAX_UPDATES})}  # fmt: skip
    extra: dict[str, Any] = {}
    try:
        if isinstance(phi, str) and phi == "online":
            net = RiskPredictor(**defaults)
        elif isinstance(phi, RiskPredictor):
            net = phi
        elif isinstance(phi, Mapping):
            kw = dict(phi)
            extra = {k: kw.pop(k) for k in _LEARNER_KEYS if horizon and k in kw}
            net = RiskPredictor(**{**defaults, **kw})
        elif isinstance(phi, (str, os.PathLike)):
            frozen = isinstance(phi, str) and phi.startswith("frozen:")
            net = RiskPredictor.load(phi[len("frozen:") :] if frozen else phi, training=False)
        else:
            raise TypeError("phi: expected 'online', 'ttc', 'frozen:<path>', a path, a RiskPredictor, "
                            f"a dict or a HorizonPhiLearner, got {phi!r}")  # fmt: skip
        return HorizonPhiLearner(n, net, seed=seed, **extra) if horizon else net
    except TypeError as e:
        if str(e).startswith("phi:"):
            raise
        msg = f"phi: a dict must hold HorizonPhiLearner/RiskPredictor arguments ({e})"
        raise TypeError(msg) from None
