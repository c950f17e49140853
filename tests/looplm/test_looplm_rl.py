"""GRPO / RLTT / REINFORCE: loss identities, hand cases, gradients and one-step behaviour."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import icml26  # noqa: F401
from icml26.agents.looplm.model import LoopConfig, LoopedTransformer
from icml26.agents.looplm.policy import LoopedPolicy
from icml26.agents.looplm.rl import (
    LoopRLTrainer,
    RLConfig,
    group_advantages,
    grpo_loss,
    k3_kl,
    loop_weights,
    masked_mean,
    problem_source,
    rltt_loss,
)
from icml26.envs.looplm.tokenizer import CharTokenizer

torch.set_num_threads(1)
V = CharTokenizer().vocab_size


def _policy(seed: int = 0) -> LoopedPolicy:
    torch.manual_seed(seed)
    return LoopedPolicy(
        LoopedTransformer(LoopConfig(vocab_size=V, d_model=32, n_heads=4, n_layers=1, n_loops=3))
    )


def _rollout(pol: LoopedPolicy, seed: int = 0):
    env = gym.make("icml26/LoopReasoning-v0").unwrapped
    probs = env.sample_group(2, seed=seed)
    prompts = [p.prompt for p in probs for _ in range(4)]
    ids, mask = pol.encode(prompts)
    gen = pol.generate(ids, mask, 4, temperature=1.0, generator=torch.Generator().manual_seed(seed))
    return ids, mask, gen


def test_group_advantages_kl_and_aggregation_hand_cases() -> None:
    r = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    torch.testing.assert_close(
        group_advantages(r, eps=0.0 + 1e-12)[0], torch.tensor([1.0, -1.0, -1.0, 1.0])
    )
    assert bool((group_advantages(r)[1] == 0).all())  # zero spread: no signal
    torch.testing.assert_close(
        group_advantages(r, normalize=False)[0], torch.tensor([0.5, -0.5, -0.5, 0.5])
    )
    assert float(k3_kl(torch.tensor(-1.0), torch.tensor(-1.0))) == 0.0
    d = 0.3  # ref - pi
    assert float(k3_kl(torch.tensor(-1.3), torch.tensor(-1.0))) == pytest.approx(
        np.exp(d) - d - 1, rel=1e-6
    )
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
    m = torch.tensor([[1, 1, 1], [1, 0, 0]], dtype=torch.bool)
    assert float(masked_mean(x, m, "sequence")) == pytest.approx((2.0 + 4.0) / 2)
    assert float(masked_mean(x, m, "token")) == pytest.approx(10.0 / 4)


def test_loop_weights() -> None:
    torch.testing.assert_close(loop_weights("uniform", 4), torch.full((4,), 0.25))
    torch.testing.assert_close(loop_weights("progressive", 4), torch.tensor([0.1, 0.2, 0.3, 0.4]))
    torch.testing.assert_close(
        loop_weights("progressive", 3, alpha=2.0), torch.tensor([1, 4, 9]) / 14.0
    )
    torch.testing.assert_close(
        loop_weights("learned", 3, learned=torch.zeros(3)), torch.full((3,), 1 / 3)
    )
    with pytest.raises(ValueError, match="exit gate"):
        loop_weights("exit_pdf", 3)


@pytest.mark.parametrize("length_norm", ["sequence", "token"])
def test_rltt_with_all_weight_on_the_last_loop_is_grpo_without_clip(length_norm: str) -> None:
    pol = _policy()
    ids, mask, gen = _rollout(pol)
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5, 2.0, 0.0, -1.0, -1.0])
    grads = []
    values = []
    for kind in ("grpo", "rltt"):
        pol.model.zero_grad()
        pl = pol.per_loop(ids, mask, gen)
        if kind == "grpo":
            final = pl.log_probs[..., -1]
            loss = grpo_loss(
                final, final.detach(), adv, gen.mask, clip_eps=None, length_norm=length_norm
            )
        else:
            omega = torch.tensor([0.0, 0.0, 1.0])
            loss = rltt_loss(pl.log_probs, omega, adv, gen.mask, length_norm=length_norm)
        loss.backward()
        values.append(float(loss.detach()))
        grads.append([p.grad.clone() for p in pol.model.parameters() if p.grad is not None])
    assert len(grads[0]) == len(grads[1]) > 0
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, atol=1e-7, rtol=1e-5)
    assert sum(float(g.abs().sum()) for g in grads[0]) > 1e-3
    # the values differ by the policy's own log-probs: GRPO's surrogate is -norm[A] at rho = 1
    with torch.no_grad():
        final = pol.per_loop(ids, mask, gen).log_probs[..., -1]
        assert values[0] == pytest.approx(
            -float(masked_mean(adv[:, None].expand_as(final), gen.mask, length_norm)), abs=1e-6
        )
        assert values[1] == pytest.approx(
            -float(masked_mean(final * adv[:, None], gen.mask, length_norm)), abs=1e-5
        )


def test_grpo_clip_stops_the_gradient_outside_the_trust_region() -> None:
    logp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    old = torch.tensor([[-1.5, -2.0]])  # rho = e^0.5 > 1.2 on the first token, 1 on the second
    mask = torch.ones(1, 2, dtype=torch.bool)
    grpo_loss(logp, old, torch.tensor([1.0]), mask, clip_eps=0.2).backward()
    assert logp.grad[0, 0] == 0.0 and logp.grad[0, 1] == pytest.approx(-0.5)
    logp.grad = None
    grpo_loss(
        logp, old, torch.tensor([-1.0]), mask, clip_eps=0.2
    ).backward()  # A < 0: min keeps rho
    assert logp.grad[0, 0] == pytest.approx(np.exp(0.5) / 2)


def test_exit_pdf_weights_train_the_gate_and_uniform_weights_do_not() -> None:
    pol = _policy()
    ids, mask, gen = _rollout(pol)
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5, 2.0, 0.0, -1.0, -1.0])
    for kind, moves in (("exit_pdf", True), ("uniform", False)):
        pol.model.zero_grad()
        pl = pol.per_loop(ids, mask, gen)
        w = loop_weights(kind, 3, exit_pdf=pl.exit_pdf)
        rltt_loss(pl.log_probs, w, adv, gen.mask).backward()
        g = pol.model.exit_gate.weight.grad
        assert (g is not None and float(g.abs().sum()) > 0) == moves, kind


def _trainer(algo: str, omega: str = "exit_pdf", seed: int = 0, **kw) -> LoopRLTrainer:
    env = gym.make("icml26/LoopReasoning-v0")
    cfg = RLConfig(algo=algo, omega=omega, prompts_per_step=4, group_size=4, max_new_tokens=4, **kw)
    src = problem_source(env)
    # a random model never adds correctly; reward an even-length answer so groups have spread
    src = type(src)(
        src.sample, src.prompt, lambda c, p: np.array([float(len(x) % 2 == 0) for x in c])
    )
    return LoopRLTrainer(_policy(seed), src, cfg, seed=seed)


@pytest.mark.parametrize(
    "algo, omega",
    [
        ("grpo", "exit_pdf"),
        ("rltt", "uniform"),
        ("rltt", "progressive"),
        ("rltt", "exit_pdf"),
        ("rltt", "learned"),
        ("reinforce", "exit_pdf"),
    ],
)
def test_every_trainer_steps_deterministically(algo: str, omega: str) -> None:
    a, b = _trainer(algo, omega), _trainer(algo, omega)
    sa, sb = a.step(), b.step()
    for k in ("reward", "kl", "entropy", "loss", "zero_spread_frac"):
        assert sa[k] == sb[k] and np.isfinite(sa[k]), k
    assert sum(sa["exit_pdf"]) == pytest.approx(1.0, abs=1e-5)
    s2 = a.step()
    assert s2["kl"] > 0.0  # the policy moved away from the frozen reference
    if omega == "learned" and algo == "rltt":
        assert a.opt.param_groups[1]["lr"] == pytest.approx(10 * a.opt.param_groups[0]["lr"])
        assert s2["omega"] != pytest.approx([1 / 3] * 3)


def _likelihood_change(algo: str) -> tuple[torch.Tensor, torch.Tensor]:
    """One step on a fixed rollout with fixed rewards: (log-prob change per completion, rewards)."""
    tr = _trainer(algo, "uniform", lr=1e-2, beta_kl=0.0)
    pol = tr.policy
    ids, mask, gen = _rollout(pol, seed=1)
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0])  # any labelling works
    tr.source = type(tr.source)(
        lambda n, rng: [None] * n, lambda p: "", lambda c, p: rewards.numpy()
    )
    pol.encode = lambda prompts: (ids, mask)  # type: ignore[method-assign]
    pol.generate = lambda *a, **k: gen  # type: ignore[method-assign]
    tr.cfg.prompts_per_step = 2
    with torch.no_grad():
        before = pol.per_loop(ids, mask, gen).log_probs.sum(1)  # (B, T)
    tr.step()
    with torch.no_grad():
        after = pol.per_loop(ids, mask, gen).log_probs.sum(1)
    return after - before, rewards


@pytest.mark.parametrize("algo", ["grpo", "rltt"])
def test_one_step_raises_the_likelihood_of_rewarded_completions(algo: str) -> None:
    delta, rewards = _likelihood_change(algo)
    pos, neg = rewards == 1, rewards == 0
    assert float(delta[pos, -1].mean()) > float(delta[neg, -1].mean()) + 1e-3


def test_rl_config_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="algo"):
        RLConfig(algo="ppo")
    with pytest.raises(ValueError, match="omega"):
        RLConfig(omega="last")
    with pytest.raises(ValueError, match="one update per batch"):
        RLConfig(algo="reinforce", updates_per_batch=2)
    with pytest.raises(ValueError, match="one update per batch"):
        RLConfig(algo="reinforce", minibatches=2, prompts_per_step=4)
    with pytest.raises(ValueError, match="does not divide"):
        RLConfig(algo="grpo", minibatches=3, prompts_per_step=4)
    with pytest.raises(ValueError, match="clip_eps"):
        RLConfig(clip_eps=0.0)
    assert RLConfig(algo="rltt", updates_per_batch=2, minibatches=4).minibatches == 4
    with pytest.raises(ValueError, match=">= 2 completions"):
        RLConfig(group_size=1)
    assert RLConfig(algo="grpo", updates_per_batch=3).updates_per_batch == 3


def test_grpo_with_several_updates_and_kl_in_the_reward_runs() -> None:
    tr = _trainer("grpo", updates_per_batch=2, kl_placement="reward")
    s = tr.step()
    s = tr.step()
    assert np.isfinite(s["loss"]) and s["kl"] > 0
