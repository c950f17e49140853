"""GRPO and RLTT inside the PPO loop (several updates per rollout batch, as verl runs GRPO)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.agents.looplm.rl import (
    clip_fraction,
    grpo_loss,
    loop_weights,
    rltt_clipped_loss,
    rltt_loss,
)
from tests.looplm.test_looplm_rl import _policy, _rollout, _trainer

torch.set_num_threads(1)
ADV = torch.tensor([1.0, -1.0, 0.5, -0.5, 2.0, 0.0, -1.0, -1.0])


@pytest.mark.parametrize("omega", ["uniform", "progressive", "exit_pdf", "learned"])
def test_clipped_rltt_has_rltt_gradient_at_ratio_one(omega: str) -> None:
    """First PPO update: the clipped per-loop surrogate gives RLTT's gradient, gate and omega included."""
    pol = _policy()
    ids, mask, gen = _rollout(pol)
    learned = torch.tensor([0.3, -0.2, 0.1], requires_grad=True)
    grads = []
    for kind in ("plain", "clipped"):
        pol.model.zero_grad()
        learned.grad = None
        pl = pol.per_loop(ids, mask, gen)
        w = loop_weights(omega, 3, exit_pdf=pl.exit_pdf, learned=learned)
        if kind == "plain":
            loss = rltt_loss(pl.log_probs, w, ADV, gen.mask)
        else:
            loss = rltt_clipped_loss(
                pl.log_probs, pl.log_probs.detach(), w, ADV, gen.mask, clip_eps=0.2
            )
        loss.backward()
        grads.append(
            [p.grad.clone() for p in pol.model.parameters() if p.grad is not None]
            + ([learned.grad.clone()] if omega == "learned" else [])
        )
    assert len(grads[0]) == len(grads[1]) > 0
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-4)
    gate = pol.model.exit_gate.weight.grad
    assert (gate is not None and float(gate.abs().sum()) > 0) == (omega == "exit_pdf")


def test_clipped_rltt_clips_each_loop_on_its_own_ratio() -> None:
    logp = torch.tensor([[[-1.0, -2.0]]], requires_grad=True)  # (B=1, N=1, T=2)
    old = torch.tensor([[[-1.5, -2.0]]])  # loop 1: rho = e^0.5 (clipped for A > 0); loop 2: rho = 1
    mask = torch.ones(1, 1, dtype=torch.bool)
    w = torch.tensor([0.25, 0.75])
    rltt_clipped_loss(logp, old, w, torch.tensor([1.0]), mask, clip_eps=0.2).backward()
    assert logp.grad[0, 0, 0] == 0.0 and logp.grad[0, 0, 1] == pytest.approx(-0.75)
    assert clip_fraction(logp, old, mask, 0.2) == pytest.approx(0.5)
    # one loop alone with weight 1 is GRPO
    single = logp[..., :1].detach().requires_grad_(True)
    a = rltt_clipped_loss(
        single, old[..., :1], torch.tensor([1.0]), torch.tensor([-1.0]), mask, 0.2
    )
    b = grpo_loss(single[..., 0], old[..., 0], torch.tensor([-1.0]), mask, 0.2)
    assert float(a.detach()) == pytest.approx(float(b.detach()))


@pytest.mark.parametrize("algo, omega", [("grpo", "uniform"), ("rltt", "exit_pdf")])
def test_the_clip_is_active_within_one_ppo_update(algo: str, omega: str) -> None:
    """Four minibatch updates on one rollout: after the first, some ratios leave [1 - eps, 1 + eps]."""
    tr = _trainer(algo, omega, lr=3e-3, minibatches=4, clip_eps=0.2)
    s = tr.step()
    assert 0.0 < s["clip_frac"] < 1.0 and np.isfinite(s["loss"])
    one = _trainer(
        algo, omega, lr=3e-3
    ).step()  # one update per batch: the ratio is 1, nothing clips
    assert one["clip_frac"] == 0.0


def test_minibatches_cover_every_group_once_per_pass() -> None:
    tr = _trainer("grpo", "uniform", minibatches=2, updates_per_batch=2)
    seen: list[int] = []
    orig = tr.policy.per_loop

    def spy(ids, mask, gen, *a, **k):  # type: ignore[no-untyped-def]
        seen.append(int(ids.shape[0]))
        return orig(ids, mask, gen, *a, **k)

    tr.policy.per_loop = spy  # type: ignore[method-assign]
    tr.step()
    # old + 2 passes x 2 minibatches of 2 groups x 4 completions (the frozen reference has its own copy)
    assert seen == [16, 8, 8, 8, 8]
