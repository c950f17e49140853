"""GRPO, RLTT and REINFORCE for looped language models, on one shared rollout and logging path.

For a group of ``G`` completions ``y_i`` of one prompt with binary rewards ``r_i`` the advantage
is ``A_i = (r_i - mean r) / (std r + eps)`` (REINFORCE: ``r_i - mean r``). With ``L_i`` the
length of ``y_i`` and ``norm`` either per sequence (``1/G sum_i 1/L_i sum_j``, the GRPO and RLTT
papers' formula, default) or per token (``1 / sum_i L_i sum_ij``):

* GRPO: ``-norm[min(rho A, clip(rho, 1-eps, 1+eps) A)]`` with ``rho = pi_theta / pi_old`` on the
  final loop's log-probability. verl (the RLTT paper's trainer) makes several PPO updates per
  rollout batch (``updates_per_batch``); from the second one on ``rho`` leaves 1 and the clip acts
  (``rho = 1`` and no clip with one update per batch).
* RLTT: ``-norm[sum_t omega_t log P^(t)(y_ij) A_i]``, omega ``uniform`` (1/T), ``progressive``
  (``t^alpha / sum s^alpha``), ``exit_pdf`` (the model's own per-token exit distribution, not
  detached, so the gate learns too) or ``learned`` (``softmax(w / tau)``, w trained at 10x the lr).
  With several updates per batch RLTT replaces GRPO's objective and nothing else: each loop gets
  GRPO's clipped surrogate on its own ratio ``rho_t = P^(t) / P^(t)_old``, weighted by omega_t
  (:func:`rltt_clipped_loss`); its gradient at ``rho = 1`` is exactly RLTT's, gate and learned
  weights included.
* REINFORCE: ``-norm[log P^(T)(y_ij) A_i]``, one update per batch.

All three add ``beta KL`` on the final loop only, KL being the k3 estimator
``exp(ref - pi) - (ref - pi) - 1`` against the frozen initial policy, placed in the loss (default)
or, with ``kl_placement="reward"``, subtracted from the reward before the advantages (as the
released GRPO baseline does). Both arms use the same placement unless told otherwise.
Reference: RLTT (arXiv 2602.10520) and its method card ``shared/methods/looplm.md``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from icml26.agents.looplm.policy import Generation, PerLoop

ALGOS = ("grpo", "rltt", "reinforce")
OMEGAS = ("uniform", "progressive", "exit_pdf", "learned")


@dataclass
class RLConfig:
    """Hyperparameters of one RL run (defaults: the RLTT card's CPU-scale setup)."""

    algo: str = "rltt"
    """``"grpo"``, ``"rltt"`` or ``"reinforce"``"""
    omega: str = "exit_pdf"
    """RLTT's loop weights: ``uniform``, ``progressive``, ``exit_pdf`` or ``learned``"""
    progressive_alpha: float = 1.0
    """exponent of the progressive weights ``t^alpha / sum s^alpha``"""
    learned_tau: float = 1.0
    """temperature of the learned weights ``softmax(w / tau)``"""
    learned_lr_mult: float = 10.0
    """the learned weights train at this multiple of the model's learning rate (RLTT: 10)"""
    group_size: int = 8
    """completions sampled per prompt (G)"""
    prompts_per_step: int = 32
    """prompts per rollout batch (one RL step)"""
    lr: float = 3e-4
    """AdamW learning rate (constant)"""
    weight_decay: float = 0.0
    """AdamW weight decay"""
    grad_clip: float = 1.0
    """gradient-norm clip of every optimizer step"""
    beta_kl: float = 1e-3
    """weight of the k3 KL to the frozen initial policy (final loop)"""
    kl_placement: str = "loss"
    """``"loss"`` (a KL term) or ``"reward"`` (k1 KL subtracted from the reward)"""
    clip_eps: float = 0.2
    """PPO clip range of the ratio, ``[1 - eps, 1 + eps]``"""
    updates_per_batch: int = 1
    """passes (PPO epochs) over each rollout batch"""
    minibatches: int = 1
    """each pass split into this many minibatches of whole groups, one optimizer step each (verl)"""
    temperature: float = 1.0
    """sampling temperature of the rollouts (and of the log-probabilities)"""
    length_norm: str = "sequence"
    """``"sequence"`` (1/G sum_i 1/L_i sum_j, the papers') or ``"token"`` (1/sum L_i sum_ij)"""
    adv_eps: float = 1e-6
    """added to the group's reward std in the advantage"""
    max_new_tokens: int = 8
    """longest completion sampled"""

    def __post_init__(self) -> None:
        checks = {
            "algo": ALGOS,
            "omega": OMEGAS,
            "kl_placement": ("loss", "reward"),
            "length_norm": ("sequence", "token"),
        }
        for name, allowed in checks.items():
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"RLConfig.{name}: expected one of {allowed}, got {getattr(self, name)!r}"
                )
        for name in (
            "group_size",
            "prompts_per_step",
            "updates_per_batch",
            "minibatches",
            "max_new_tokens",
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"RLConfig.{name}: expected a positive int, got {v!r}")
        if self.group_size < 2:
            raise ValueError(
                f"RLConfig.group_size: group advantages need >= 2 completions, got {self.group_size}"
            )
        if self.algo == "reinforce" and self.updates_per_batch * self.minibatches != 1:
            raise ValueError(
                f"RLConfig: reinforce makes one update per batch; updates_per_batch="
                f"{self.updates_per_batch}, minibatches={self.minibatches} are for grpo and rltt"
            )
        if self.prompts_per_step % self.minibatches:
            raise ValueError(
                f"RLConfig.minibatches: {self.minibatches} does not divide prompts_per_step "
                f"{self.prompts_per_step} (minibatches hold whole groups)"
            )
        if not 0.0 < self.clip_eps < 1.0:
            raise ValueError(
                f"RLConfig.clip_eps: expected a value in (0, 1), got {self.clip_eps!r}"
            )
        if self.temperature <= 0:
            raise ValueError(
                f"RLConfig.temperature: rollouts sample, so it must be > 0, got {self.temperature}"
            )

    @property
    def ppo(self) -> bool:
        """More than one optimizer step per rollout batch: the ratio leaves 1 and the clip acts."""
        return self.updates_per_batch * self.minibatches > 1


# ----------------------------------------------------------------------------- loss pieces


def group_advantages(rewards: Tensor, eps: float = 1e-6, normalize: bool = True) -> Tensor:
    """Per-group advantages of rewards shaped (n_groups, G): ``(r - mean) / (std + eps)`` (GRPO,
    population std as in the RLTT code) or ``r - mean`` when ``normalize`` is False."""
    centered = rewards - rewards.mean(-1, keepdim=True)
    if not normalize:
        return centered
    return centered / (rewards.std(-1, unbiased=False, keepdim=True) + eps)


def masked_mean(x: Tensor, mask: Tensor, length_norm: str = "sequence") -> Tensor:
    """Average per-token values ``x`` (B, N) over ``mask``: per sequence then over sequences
    (``"sequence"``), or over all tokens (``"token"``)."""
    m = mask.float()
    if length_norm == "sequence":
        return ((x * m).sum(-1) / m.sum(-1).clamp_min(1.0)).mean()
    if length_norm == "token":
        return (x * m).sum() / m.sum().clamp_min(1.0)
    raise ValueError(f"masked_mean: length_norm must be 'sequence' or 'token', got {length_norm!r}")


def k3_kl(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """Per-token k3 estimate of KL(pi || ref): ``exp(ref - pi) - (ref - pi) - 1`` (>= 0)."""
    d = ref_logp - logp
    return torch.exp(d) - d - 1.0


def grpo_loss(
    logp: Tensor,
    old_logp: Tensor,
    adv: Tensor,
    mask: Tensor,
    clip_eps: float | None = 0.2,
    length_norm: str = "sequence",
) -> Tensor:
    """GRPO's policy term on final-loop log-probs (B, N); ``clip_eps=None`` drops the clip."""
    rho = torch.exp(logp - old_logp)
    a = adv[:, None]
    surr = rho * a
    if clip_eps is not None:
        surr = torch.minimum(surr, torch.clamp(rho, 1 - clip_eps, 1 + clip_eps) * a)
    return -masked_mean(surr, mask, length_norm)


def rltt_loss(
    per_loop_logp: Tensor, omega: Tensor, adv: Tensor, mask: Tensor, length_norm: str = "sequence"
) -> Tensor:
    """RLTT's policy term: ``-norm[sum_t omega_t log P^(t) A]``; per-loop log-probs (B, N, T),
    omega (T,) or per token (B, N, T)."""
    w = omega if omega.dim() == 3 else omega.view(1, 1, -1)
    return -masked_mean((w * per_loop_logp).sum(-1) * adv[:, None], mask, length_norm)


def reinforce_loss(
    logp: Tensor, adv: Tensor, mask: Tensor, length_norm: str = "sequence"
) -> Tensor:
    """Plain REINFORCE on final-loop log-probs: ``-norm[log pi A]``."""
    return -masked_mean(logp * adv[:, None], mask, length_norm)


def rltt_clipped_loss(
    per_loop_logp: Tensor,
    old_per_loop_logp: Tensor,
    omega: Tensor,
    adv: Tensor,
    mask: Tensor,
    clip_eps: float = 0.2,
    length_norm: str = "sequence",
) -> Tensor:
    """RLTT inside GRPO's PPO loop: ``-norm[sum_t omega_t min(rho_t A, clip(rho_t) A)]`` with
    ``rho_t = exp(log P^(t) - log P^(t)_old)``, plus ``(omega - sg omega) sg(log P^(t)) A`` so that
    omega's own gradient (exit_pdf, learned) is RLTT's. At ``rho = 1`` value and gradient equal
    :func:`rltt_loss` up to a constant."""
    w = omega if omega.dim() == 3 else omega.view(1, 1, -1)
    rho = torch.exp(per_loop_logp - old_per_loop_logp)
    a = adv[:, None, None]
    surr = torch.minimum(rho * a, torch.clamp(rho, 1 - clip_eps, 1 + clip_eps) * a)
    per_tok = (w * surr).sum(-1) + ((w - w.detach()) * per_loop_logp.detach() * a).sum(-1)
    return -masked_mean(per_tok, mask, length_norm)


def clip_fraction(logp: Tensor, old_logp: Tensor, mask: Tensor, clip_eps: float) -> float:
    """Share of masked tokens (over every trailing column, e.g. loops) whose ratio
    ``exp(logp - old)`` lies outside ``[1 - eps, 1 + eps]``."""
    with torch.no_grad():
        out = ((logp - old_logp).exp() - 1.0).abs() > clip_eps
        m = mask.bool()
        while m.dim() < out.dim():
            m = m[..., None]
        m = m.expand_as(out)
        return float(out[m].float().mean()) if bool(m.any()) else 0.0


def loop_weights(
    kind: str,
    n_loops: int,
    *,
    exit_pdf: Tensor | None = None,
    learned: Tensor | None = None,
    alpha: float = 1.0,
    tau: float = 1.0,
    device: torch.device | str | None = None,
) -> Tensor:
    """omega over loops: (T,) for uniform/progressive/learned, (B, N, T) for exit_pdf."""
    t = torch.arange(1, n_loops + 1, dtype=torch.float32, device=device)
    if kind == "uniform":
        return torch.full((n_loops,), 1.0 / n_loops, device=device)
    if kind == "progressive":
        w = t**alpha
        return w / w.sum()
    if kind == "exit_pdf":
        if exit_pdf is None:
            raise ValueError(
                "loop_weights: omega='exit_pdf' needs a model with an exit gate (exit_pdf)"
            )
        return exit_pdf
    if kind == "learned":
        if learned is None:
            raise ValueError("loop_weights: omega='learned' needs the learned logits")
        return torch.softmax(learned / tau, dim=-1)
    raise ValueError(f"loop_weights: omega must be one of {OMEGAS}, got {kind!r}")


# ----------------------------------------------------------------------------- trainer


@dataclass
class ProblemSource:
    """Where RL problems come from: ``sample(n, rng)`` problems, their ``prompt`` text, and
    ``score(completions, problems) -> rewards``. :func:`problem_source` builds one from an env."""

    sample: Callable[[int, np.random.Generator], list[Any]]
    prompt: Callable[[Any], str]
    score: Callable[[list[str], list[Any]], np.ndarray]


def problem_source(env: Any) -> ProblemSource:
    """A :class:`ProblemSource` for ``icml26/LoopReasoning-v0`` or ``icml26/ReasoningGym-v0``."""
    u = getattr(env, "unwrapped", env)
    if hasattr(u, "sampler") and hasattr(u, "generator"):
        return ProblemSource(
            lambda n, rng: u.sampler.batch(n, rng), lambda p: p.prompt, lambda c, p: u.score(c, p)
        )
    if hasattr(u, "question") and hasattr(
        u, "dataset"
    ):  # ReasoningGymEnv: problems are entry indices
        return ProblemSource(
            lambda n, rng: u.sample_group(n, rng), u.question, lambda c, idx: u.score(c, idx)
        )
    raise TypeError(
        f"problem_source: expected a LoopReasoning-v0 or ReasoningGym-v0 env, got {type(u).__name__}"
    )


@dataclass
class Batch:
    """One rollout batch of ``B = prompts_per_step x group_size`` completions, group by group, and
    what the updates hold fixed: advantages, the reference policy's final-loop log-probs and (PPO)
    the per-loop log-probs before the first update."""

    ids: Tensor  # (B, P) left-padded prompt ids
    mask: Tensor  # (B, P)
    gen: Generation  # tokens, mask, exit loops (B, N)
    rewards: Tensor  # (B,)
    adv: Tensor  # (B,)
    ref: Tensor  # (B, N) final-loop log-probs of the frozen initial policy
    old: Tensor | None  # (B, N, T) per-loop log-probs before the update; None with one update
    seconds: float  # wall time of sampling and scoring


@dataclass
class UpdateStats:
    """Per optimizer step of one batch's update: KL, loss, gradient norm, clip fraction (PPO
    only), and token sums of the final loop's entropy and of the exit distribution."""

    kl: list[float]
    loss: list[float]
    grad_norm: list[float]
    clip_frac: list[float]
    entropy_sum: float = 0.0
    exit_pdf_sum: Tensor | None = None
    tokens: float = 0.0


PolicyTerm = Callable[
    [RLConfig, PerLoop, Tensor | None, Tensor, Tensor, Tensor | None], tuple[Tensor, float | None]
]


def _grpo_term(
    c: RLConfig, pl: PerLoop, old: Tensor | None, adv: Tensor, mask: Tensor, omega: Tensor | None
) -> tuple[Tensor, float | None]:
    """GRPO's clipped surrogate on the final loop (ratio 1 without a frozen ``old``)."""
    final = pl.log_probs[..., -1]
    if old is None:
        return grpo_loss(final, final.detach(), adv, mask, c.clip_eps, c.length_norm), None
    o = old[..., -1]
    loss = grpo_loss(final, o, adv, mask, c.clip_eps, c.length_norm)
    return loss, clip_fraction(final, o, mask, c.clip_eps)


def _rltt_term(
    c: RLConfig, pl: PerLoop, old: Tensor | None, adv: Tensor, mask: Tensor, omega: Tensor | None
) -> tuple[Tensor, float | None]:
    """RLTT: omega-weighted per-loop log-probs, or their clipped surrogates inside the PPO loop."""
    assert omega is not None
    if old is None:
        return rltt_loss(pl.log_probs, omega, adv, mask, c.length_norm), None
    loss = rltt_clipped_loss(pl.log_probs, old, omega, adv, mask, c.clip_eps, c.length_norm)
    return loss, clip_fraction(pl.log_probs, old, mask, c.clip_eps)


def _reinforce_term(
    c: RLConfig, pl: PerLoop, old: Tensor | None, adv: Tensor, mask: Tensor, omega: Tensor | None
) -> tuple[Tensor, float | None]:
    """REINFORCE on the final loop."""
    return reinforce_loss(pl.log_probs[..., -1], adv, mask, c.length_norm), None


LOSSES: dict[str, PolicyTerm] = {
    "grpo": _grpo_term,
    "rltt": _rltt_term,
    "reinforce": _reinforce_term,
}
"""The policy term of each algorithm: ``(config, per-loop outputs, frozen old per-loop log-probs or
None, advantages, mask, omega or None) -> (loss, clip fraction or None)``."""


class LoopRLTrainer:
    """One trainer for GRPO, RLTT and REINFORCE (``config.algo``) on any loop policy.

    ``step()`` is :meth:`_rollout` (sample ``prompts_per_step`` problems, ``group_size``
    completions each from the final loop at ``temperature``, score them, compute advantages and
    the frozen log-probs) then :meth:`_update` (``updates_per_batch`` passes of ``minibatches``
    optimizer steps on the ``LOSSES[algo]`` term plus the KL); it returns the step's statistics
    (reward, accuracy, KL, entropy, mean exit distribution, omega, zero-spread group fraction,
    clip fraction, seconds), KL, loss, gradient norm and entropy averaged over the step's
    optimizer steps. The policy runs on the device of its parameters.
    """

    def __init__(self, policy: Any, source: ProblemSource, config: RLConfig, seed: int = 0) -> None:
        self.policy, self.source, self.cfg = policy, source, config
        self.rng = np.random.default_rng(seed)
        self.torch_gen = torch.Generator().manual_seed(int(seed))
        self.device = next(iter(policy.parameters())).device
        self.ref = copy.deepcopy(policy)  # frozen initial policy for the KL
        for p in self.ref.parameters():
            p.requires_grad_(False)
        T = policy.n_loops
        groups: list[dict[str, Any]] = [
            {
                "params": [p for p in policy.parameters() if p.requires_grad],
                "lr": config.lr,
                "weight_decay": config.weight_decay,
            }
        ]
        self.omega_logits: Tensor | None = None
        if config.algo == "rltt" and config.omega == "learned":
            self.omega_logits = torch.zeros(T, requires_grad=True, device=self.device)
            groups.append(
                {
                    "params": [self.omega_logits],
                    "lr": config.lr * config.learned_lr_mult,
                    "weight_decay": 0.0,
                }
            )
        if config.algo == "rltt" and config.omega == "exit_pdf" and not policy.has_exit_gate:
            raise ValueError("LoopRLTrainer: omega='exit_pdf' needs a policy with an exit gate")
        self.opt = torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.999))
        self.history: list[dict[str, Any]] = []

    def omega(self) -> list[float]:
        """The current loop weights (exit_pdf: not a constant, reported per step instead)."""
        c = self.cfg
        if c.algo != "rltt" or c.omega == "exit_pdf":
            return []
        w = loop_weights(
            c.omega,
            self.policy.n_loops,
            learned=self.omega_logits,
            alpha=c.progressive_alpha,
            tau=c.learned_tau,
        )
        return [float(x) for x in w.detach()]

    def step(self) -> dict[str, Any]:
        """One RL step: a rollout batch and its update; returns the step's statistics."""
        t0, c0 = time.perf_counter(), time.process_time()
        batch = self._rollout()
        upd = self._update(batch)
        stats = self._stats(batch, upd)
        stats.update(
            seconds=time.perf_counter() - t0,
            cpu_seconds=time.process_time() - c0,
            rollout_seconds=batch.seconds,
        )
        self.history.append(stats)
        return stats

    def _rollout(self) -> Batch:
        c, pol = self.cfg, self.policy
        t0 = time.perf_counter()
        problems = self.source.sample(c.prompts_per_step, self.rng)
        prompts = [self.source.prompt(p) for p in problems]
        group_prompts = [p for p in prompts for _ in range(c.group_size)]
        group_problems = [p for p in problems for _ in range(c.group_size)]
        ids, mask = pol.encode(group_prompts)
        gen = pol.generate(
            ids, mask, c.max_new_tokens, temperature=c.temperature, generator=self.torch_gen
        )
        completions = pol.decode(gen.tokens)
        rewards = torch.as_tensor(
            self.source.score(completions, group_problems), dtype=torch.float32, device=self.device
        )
        seconds = time.perf_counter() - t0
        with torch.no_grad():
            ref = self.ref.per_loop(ids, mask, gen, c.temperature, with_exit_pdf=False)
            old = (
                pol.per_loop(ids, mask, gen, c.temperature, with_exit_pdf=False).log_probs
                if c.ppo
                else None
            )
        shaped = rewards
        if c.kl_placement == "reward" and c.beta_kl > 0:
            with torch.no_grad():
                cur = (
                    old
                    if old is not None
                    else pol.per_loop(ids, mask, gen, c.temperature, with_exit_pdf=False).log_probs
                )[..., -1]
                # k1 KL summed over the completion's tokens
                shaped = rewards - c.beta_kl * ((cur - ref.log_probs[..., -1]) * gen.mask).sum(-1)
        adv = group_advantages(
            shaped.view(-1, c.group_size), c.adv_eps, normalize=c.algo != "reinforce"
        ).view(-1)
        return Batch(ids, mask, gen, rewards, adv, ref.log_probs[..., -1], old, seconds)

    def _minibatch_rows(self) -> list[Tensor]:
        """Row indices of each minibatch of one pass: whole groups, shuffled when more than one."""
        c = self.cfg
        n_groups = c.prompts_per_step
        if c.minibatches == 1:
            return [torch.arange(n_groups * c.group_size, device=self.device)]
        order = torch.randperm(n_groups, generator=self.torch_gen)
        return [
            (chunk[:, None] * c.group_size + torch.arange(c.group_size)).reshape(-1).to(self.device)
            for chunk in order.chunk(c.minibatches)
        ]

    def _update(self, b: Batch) -> UpdateStats:
        c, pol = self.cfg, self.policy
        term = LOSSES[c.algo]
        out = UpdateStats([], [], [], [])
        params = [p for g in self.opt.param_groups for p in g["params"]]
        for _ in range(c.updates_per_batch):
            for rows in self._minibatch_rows():
                g = Generation(b.gen.tokens[rows], b.gen.mask[rows], b.gen.exit_loops[rows])
                pl = pol.per_loop(
                    b.ids[rows], b.mask[rows], g, c.temperature, with_exit_pdf=pol.has_exit_gate
                )
                w = (
                    loop_weights(
                        c.omega,
                        pol.n_loops,
                        exit_pdf=pl.exit_pdf,
                        learned=self.omega_logits,
                        alpha=c.progressive_alpha,
                        tau=c.learned_tau,
                        device=self.device,
                    )
                    if c.algo == "rltt"
                    else None
                )
                old = b.old[rows] if b.old is not None else None
                policy_term, cf = term(c, pl, old, b.adv[rows], g.mask, w)
                kl = masked_mean(k3_kl(pl.log_probs[..., -1], b.ref[rows]), g.mask, c.length_norm)
                loss = policy_term + (c.beta_kl * kl if c.kl_placement == "loss" else 0.0)
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                gnorm = torch.nn.utils.clip_grad_norm_(params, c.grad_clip)
                self.opt.step()
                with torch.no_grad():
                    m = g.mask.float()
                    out.kl.append(float(kl))
                    out.loss.append(float(loss))
                    out.grad_norm.append(float(gnorm))
                    if cf is not None:
                        out.clip_frac.append(cf)
                    out.entropy_sum += float((pl.entropies[..., -1] * m).sum())
                    out.tokens += float(m.sum())
                    if pl.exit_pdf is not None:
                        s = (pl.exit_pdf * m[..., None]).sum((0, 1))
                        out.exit_pdf_sum = s if out.exit_pdf_sum is None else out.exit_pdf_sum + s
        return out

    def _stats(self, b: Batch, u: UpdateStats) -> dict[str, Any]:
        c = self.cfg
        r = b.rewards.view(-1, c.group_size)
        n_tok = max(u.tokens, 1.0)
        stats: dict[str, Any] = {
            "reward": float(b.rewards.mean()),
            "accuracy": float((b.rewards == 1).float().mean()),
            "kl": float(np.mean(u.kl)),
            "entropy": u.entropy_sum / n_tok,
            "zero_spread_frac": float((r.max(-1).values == r.min(-1).values).float().mean()),
            "completion_len": float(b.gen.mask.float().sum(-1).mean()),
            "loss": float(np.mean(u.loss)),
            "grad_norm": float(np.mean(u.grad_norm)),
            # share of tokens whose ratio left [1 - eps, 1 + eps], mean over the updates
            "clip_frac": float(np.mean(u.clip_frac)) if u.clip_frac else 0.0,
        }
        if u.exit_pdf_sum is not None:
            stats["exit_pdf"] = [float(x) for x in u.exit_pdf_sum / n_tok]
        if self.omega():
            stats["omega"] = self.omega()
        return stats

    def train(
        self, steps: int, wall_clock_s: float | None = None, progress: bool = True, desc: str = "RL"
    ) -> list[dict[str, Any]]:
        """Run ``steps`` steps (or fewer if ``wall_clock_s`` runs out); returns their statistics."""
        from tqdm.auto import tqdm

        t0 = time.perf_counter()
        out = []
        bar = tqdm(range(int(steps)), desc=desc, disable=not progress, leave=False)
        for _ in bar:
            s = self.step()
            out.append(s)
            bar.set_postfix(reward=f"{s['reward']:.2f}", kl=f"{s['kl']:.4f}")
            if wall_clock_s is not None and time.perf_counter() - t0 > wall_clock_s:
                break
        return out

    def config_dict(self) -> dict[str, Any]:
        return asdict(self.cfg)


def summarize_history(history: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Curves (one value per step) of the scalar statistics and the mean seconds per step."""
    if not history:
        return {}
    keys = [k for k, v in history[0].items() if isinstance(v, (int, float))]
    curves = {k: [float(h[k]) for h in history] for k in keys}
    out: dict[str, Any] = {
        "curves": curves,
        "steps": len(history),
        "seconds_per_step": float(np.mean(curves["seconds"])),
        "cpu_seconds_per_step": float(np.mean(curves["cpu_seconds"])),
    }
    if "exit_pdf" in history[-1]:
        out["final_exit_pdf"] = history[-1]["exit_pdf"]
    if "omega" in history[-1]:
        out["final_omega"] = history[-1]["omega"]
    return out
