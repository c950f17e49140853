"""Phi's pretraining phase (the release's first phase, ``--train_avsafe_steps``), then frozen.

The release trains the AV-risk predictor Phi first, with its own budget, saves it and trains the
ScenePilot adversary with it frozen (``rlconfig.yaml`` ``av_safe.training: false``). Here the
first phase is supervised on the quantity the v1 reward needs: the label of a state is 1 when the
ego collides within the next ``horizon_steps`` steps (20 steps of 0.1 s = 2 s) of the same episode.

* :func:`collect_phi_dataset` rolls out batches of scenes of the kinematic world with random,
  held-constant random and scripted adversaries and records the 6 Phi features of every
  non-terminal state, its label and its episode id.
* :func:`train_phi` fits the release's MLP (6 -> 128 -> 128 -> 1, sigmoid) by class-weighted BCE
  on whole training episodes, stops when the loss on held-out validation episodes has not improved
  for ``patience`` epochs (convergence), and returns a frozen
  :class:`~icml26.envs.driving.risk.RiskPredictor` (``k_inv_d = 0``: its risk is the predicted
  probability itself) plus a report with the AUROC on held-out *test* episodes.
* :func:`auroc` is the Mann-Whitney AUROC with ties (tested against scikit-learn).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["PhiDataset", "collect_phi_dataset", "train_phi", "auroc", "HORIZON_STEPS"]

HORIZON_STEPS = 20  # 2 s at DT = 0.1 s: "collision within the next 2 s"
ADVERSARY_MIXES = ("random", "hold", "scripted")


@dataclass
class PhiDataset:
    """Features (M, 6), labels (M,) in {0, 1}, episode ids (M,) and scenario ids (M,)."""

    x: np.ndarray
    y: np.ndarray
    episode: np.ndarray
    scenario: np.ndarray
    episodes: int
    collisions: int

    def subset(self, mask: np.ndarray) -> PhiDataset:
        ep = self.episode[mask]
        return PhiDataset(
            self.x[mask], self.y[mask], ep, self.scenario[mask], len(np.unique(ep)), -1
        )


def auroc(y: Sequence[float] | np.ndarray, score: Sequence[float] | np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney U / (n_pos n_neg), ties count one half)."""
    from scipy.stats import rankdata

    y = np.asarray(y, dtype=float).reshape(-1)
    s = np.asarray(score, dtype=float).reshape(-1)
    if y.shape != s.shape:
        raise ValueError(
            f"auroc: y and score must have the same length, got {y.shape} and {s.shape}"
        )
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("auroc: y must hold only 0 and 1")
    n_pos, n_neg = int(y.sum()), int((1 - y).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"auroc: needs both classes, got {n_pos} positives and {n_neg} negatives")
    ranks = rankdata(s)
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _adversary_actions(
    kinds: np.ndarray,
    hold: np.ndarray,
    obs: np.ndarray,
    scn: np.ndarray,
    trig: np.ndarray,
    rng: Any,
) -> np.ndarray:
    from icml26.envs.driving.scenarios import scripted_adversary_action

    act = rng.uniform(-1.0, 1.0, size=(len(kinds), 1))
    act[kinds == 1] = hold[kinds == 1]
    for i in np.flatnonzero(kinds == 2):
        a, trig[i] = scripted_adversary_action(obs[i], int(scn[i]), bool(trig[i]))
        act[i] = a
    return act


def collect_phi_dataset(
    scenarios: Sequence[int],
    planner: str = "idm",
    episodes: int = 200,
    seed: int = 0,
    horizon_steps: int = HORIZON_STEPS,
    batch: int = 50,
    max_steps: int = 300,
    world_factory: Any = None,
) -> PhiDataset:
    """Roll out ``episodes`` episodes (scenarios drawn uniformly from ``scenarios``) and label states.

    Each episode's adversary is drawn from {i.i.d. uniform random, one random action held for the
    whole episode, SafeBench's scripted behaviour}. State t (after reset or after step t) is
    labelled 1 when the episode ends in an ego collision at a step in (t, t + horizon_steps].
    ``world_factory(n, scenarios)`` builds the world (default: the v0 kinematic world).
    """
    from icml26.envs.driving.feasibility import FeasibilityParams
    from icml26.envs.driving.sim import KinematicWorld

    if episodes < 1 or batch < 2:
        raise ValueError(
            f"collect_phi_dataset: episodes >= 1 and batch >= 2, got {episodes}, {batch}"
        )
    scen = tuple(int(s) for s in scenarios)
    rng = np.random.default_rng(seed)
    xs, ys, eps, scs = [], [], [], []
    n_coll, done_eps = 0, 0
    while done_eps < episodes:
        n = max(2, min(batch, episodes - done_eps))
        if world_factory is None:
            w = KinematicWorld(n, scen, "speed", planner, FeasibilityParams(), None, max_steps)
        else:
            w = world_factory(n, scen)
        w.fast = False
        w.reset(np.arange(n), rng)
        kinds = rng.integers(0, len(ADVERSARY_MIXES), size=n)
        hold = rng.uniform(-1.0, 1.0, size=(n, 1))
        trig = np.zeros(n, bool)
        feats = [w.feat_prev.copy()]
        active = np.ones(n, bool)
        end_t = np.full(n, -1)
        coll = np.zeros(n, bool)
        for t in range(1, max_steps + 1):
            act = _adversary_actions(kinds, hold, w.observation(), w.scn, trig, rng)
            res = w.step(act, active=active)
            coll |= res.collision & active
            ended = (res.terminated | res.truncated) & active
            end_t[ended] = t
            active &= ~ended
            feats.append(w.feat_prev.copy())
            if not active.any():
                break
        end_t[end_t < 0] = len(feats) - 1
        F = np.stack(feats)  # (T + 1, n, 6)
        for i in range(min(n, episodes - done_eps)):
            T = int(end_t[i])  # states 0..T-1 are non-terminal
            steps_left = T - np.arange(T)
            lab = (coll[i] & (steps_left <= horizon_steps)).astype(np.float32)
            xs.append(F[:T, i])
            ys.append(lab)
            eps.append(np.full(T, done_eps + i))
            scs.append(np.full(T, int(w.scn[i])))
            n_coll += int(coll[i])
        done_eps += min(n, episodes - done_eps)
    return PhiDataset(
        np.concatenate(xs).astype(np.float32),
        np.concatenate(ys),
        np.concatenate(eps),
        np.concatenate(scs),
        episodes,
        n_coll,
    )


def train_phi(
    train: PhiDataset,
    test: PhiDataset | None = None,
    seed: int = 0,
    val_frac: float = 0.2,
    max_epochs: int = 200,
    patience: int = 10,
    lr: float = 1e-3,
    batch_size: int = 512,
    hidden: int = 128,
) -> tuple[Any, dict[str, Any]]:
    """Fit Phi on ``train`` (validation split by episode), freeze it, report held-out AUROC.

    Returns ``(predictor, report)``: a frozen RiskPredictor (training=False, k_inv_d=0) and a dict
    with the epochs run, whether early stopping fired (``converged``), losses and AUROCs
    (validation; ``test`` episodes when given).
    """
    import torch
    from torch import nn

    from icml26.envs.driving.risk import RiskPredictor

    if not 0.0 < val_frac < 1.0:
        raise ValueError(f"train_phi: val_frac must be in (0, 1), got {val_frac}")
    rng = np.random.default_rng(seed)
    ids = np.unique(train.episode)
    rng.shuffle(ids)
    n_val = max(1, int(round(val_frac * len(ids))))
    val_mask = np.isin(train.episode, ids[:n_val])
    tr, va = train.subset(~val_mask), train.subset(val_mask)
    torch.manual_seed(seed)
    net = nn.Sequential(
        nn.Linear(6, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
    )
    pos = max(float(tr.y.mean()), 1e-6)
    pos_weight = torch.tensor([(1.0 - pos) / pos])  # balance the two classes
    loss_fn = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    X, Y = torch.as_tensor(tr.x), torch.as_tensor(tr.y)
    Xv, Yv = torch.as_tensor(va.x), torch.as_tensor(va.y)
    best, best_state, since, epochs = float("inf"), None, 0, 0
    losses: list[float] = []
    g = torch.Generator().manual_seed(seed)
    for epoch in range(1, max_epochs + 1):
        epochs = epoch
        perm = torch.randperm(len(X), generator=g)
        for s in range(0, len(X), batch_size):
            idx = perm[s : s + batch_size]
            loss = loss_fn(net(X[idx])[:, 0], Y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            vl = float(loss_fn(net(Xv)[:, 0], Yv))
        losses.append(vl)
        if vl < best - 1e-5:
            best, since = vl, 0
            best_state = [p.detach().clone() for p in net.parameters()]
        else:
            since += 1
            if since >= patience:
                break
    assert best_state is not None
    phi = RiskPredictor(training=False, seed=seed, hidden=hidden, k_inv_d=0.0)
    weights = [p.numpy().astype(np.float32) for p in best_state]
    phi._online = [w.copy() for w in weights]
    phi._target = [w.copy() for w in weights]
    report: dict[str, Any] = {
        "train_states": len(tr.y),
        "train_episodes": tr.episodes,
        "val_episodes": va.episodes,
        "positive_share": float(train.y.mean()),
        "epochs": epochs,
        "converged": since >= patience,
        "best_val_loss": best,
        "val_loss_curve": losses,
        "auroc_val": _safe_auroc(va.y, phi.value(va.x)),
    }
    if test is not None:
        report["test_states"] = len(test.y)
        report["test_episodes"] = test.episodes
        report["test_collisions"] = test.collisions
        report["auroc_test"] = _safe_auroc(test.y, phi.value(test.x))
    return phi, report


def _safe_auroc(y: np.ndarray, s: np.ndarray) -> float:
    return auroc(y, s) if 0 < float(np.sum(y)) < len(y) else float("nan")
