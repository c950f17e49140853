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

from icml26.agents.looplm.policy import Generation

ALGOS = ("grpo", "rltt", "reinforce")
OMEGAS = ("uniform", "progressive", "exit_pdf", "learned")


@dataclass
class RLConfig:
    """Hyperparameters of one RL run (defaults: the RLTT card's CPU-scale setup)."""

    algo: str = "rltt"
    omega: str = "exit_pdf"
    progressive_alpha: float = 1.0
    learned_tau: float = 1.0
    learned_lr_mult: float = 10.0  # learned omega at 10x the model's learning rate (RLTT)
    group_size: int = 8
    prompts_per_step: int = 32
    lr: float = 3e-4
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    beta_kl: float = 1e-3
    kl_placement: str = "loss"
    clip_eps: float = 0.2
    updates_per_batch: int = 1  # passes (PPO epochs) over each rollout batch
    minibatches: int = 1  # each pass split into this many minibatches of whole groups (verl)
    temperature: float = 1.0
    length_norm: str = "sequence"
    adv_eps: float = 1e-6
    max_new_tokens: int = 8

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


# ----------------------------------------------------------------------------- loss pieces


def group_advantages(rewards: Tensor, eps: float = 1e-6, normalize: bool = True) -> Tensor:
    """Per-group advantages of rewards shaped (n_groups, G): ``(r - mean) / (std + eps)`` (GRPO,
    population std as in the RLTT code) or ``r - mean`` when ``normalize`` is False."""
    centered = rewards - rewards.mean(-1, keepdim=True)
    if not normalize:
        return centered
    return centered / (rewards.std(-1, unbiased=False, keepdim=True) + eps)


def aggregate(x: Tensor, mask: Tensor, length_norm: str = "sequence") -> Tensor:
    """Average per-token values ``x`` (B, N) over ``mask``: per sequence then over sequences
    (``"sequence"``), or over all tokens (``"token"``)."""
    m = mask.float()
    if length_norm == "sequence":
        return ((x * m).sum(-1) / m.sum(-1).clamp_min(1.0)).mean()
    if length_norm == "token":
        return (x * m).sum() / m.sum().clamp_min(1.0)
    raise ValueError(f"aggregate: length_norm must be 'sequence' or 'token', got {length_norm!r}")


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
    return -aggregate(surr, mask, length_norm)


def rltt_loss(
    per_loop_logp: Tensor, omega: Tensor, adv: Tensor, mask: Tensor, length_norm: str = "sequence"
) -> Tensor:
    """RLTT's policy term: ``-norm[sum_t omega_t log P^(t) A]``; per-loop log-probs (B, N, T),
    omega (T,) or per token (B, N, T)."""
    w = omega if omega.dim() == 3 else omega.view(1, 1, -1)
    return -aggregate((w * per_loop_logp).sum(-1) * adv[:, None], mask, length_norm)


def reinforce_loss(
    logp: Tensor, adv: Tensor, mask: Tensor, length_norm: str = "sequence"
) -> Tensor:
    """Plain REINFORCE on final-loop log-probs: ``-norm[log pi A]``."""
    return -aggregate(logp * adv[:, None], mask, length_norm)


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
    return -aggregate(per_tok, mask, length_norm)


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
) -> Tensor:
    """omega over loops: (T,) for uniform/progressive/learned, (B, N, T) for exit_pdf."""
    t = torch.arange(1, n_loops + 1, dtype=torch.float32)
    if kind == "uniform":
        return torch.full((n_loops,), 1.0 / n_loops)
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


class LoopRLTrainer:
    """One trainer for GRPO, RLTT and REINFORCE (``config.algo``) on any loop policy.

    ``step()`` samples ``prompts_per_step`` problems, ``group_size`` completions each from the final
    loop at ``temperature``, scores them, computes per-loop log-probs in one forward pass and
    makes ``updates_per_batch`` optimizer steps; it returns the step's statistics (reward,
    accuracy, KL, entropy, mean exit distribution, omega, zero-spread group fraction, seconds).
    """

    def __init__(self, policy: Any, source: ProblemSource, config: RLConfig, seed: int = 0) -> None:
        self.policy, self.source, self.cfg = policy, source, config
        self.rng = np.random.default_rng(seed)
        self.torch_gen = torch.Generator().manual_seed(int(seed))
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
            self.omega_logits = torch.zeros(T, requires_grad=True)
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
        c, pol = self.cfg, self.policy
        t0, c0 = time.perf_counter(), time.process_time()
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
            self.source.score(completions, group_problems), dtype=torch.float32
        )
        t_roll = time.perf_counter() - t0

        need_pdf = pol.has_exit_gate
        with torch.no_grad():
            ref = self.ref.per_loop(ids, mask, gen, c.temperature, with_exit_pdf=False).log_probs[
                ..., -1
            ]
            old_pl = (
                pol.per_loop(ids, mask, gen, c.temperature, with_exit_pdf=False).log_probs
                if c.updates_per_batch * c.minibatches > 1
                else None
            )
            old = old_pl[..., -1] if old_pl is not None else None
        shaped = rewards
        if c.kl_placement == "reward" and c.beta_kl > 0:
            with torch.no_grad():
                cur = (
                    old
                    if old is not None
                    else pol.per_loop(ids, mask, gen, c.temperature, with_exit_pdf=False).log_probs[
                        ..., -1
                    ]
                )
                shaped = rewards - c.beta_kl * ((cur - ref) * gen.mask).sum(
                    -1
                )  # k1 summed over tokens
        adv = group_advantages(
            shaped.view(-1, c.group_size), c.adv_eps, normalize=c.algo != "reinforce"
        ).view(-1)

        clip_fracs: list[float] = []
        n_groups = c.prompts_per_step
        whole = torch.arange(n_groups * c.group_size)
        for _ in range(c.updates_per_batch):
            order = (
                torch.randperm(n_groups, generator=self.torch_gen)
                if c.minibatches > 1
                else torch.arange(n_groups)
            )
            for chunk in order.chunk(c.minibatches):
                rows = (
                    (chunk[:, None] * c.group_size + torch.arange(c.group_size)).reshape(-1)
                    if c.minibatches > 1
                    else whole
                )
                g_mb = Generation(gen.tokens[rows], gen.mask[rows], gen.exit_loops[rows])
                m_mb, a_mb, ref_mb = g_mb.mask, adv[rows], ref[rows]
                pl = pol.per_loop(
                    ids[rows], mask[rows], g_mb, c.temperature, with_exit_pdf=need_pdf
                )
                final = pl.log_probs[..., -1]
                if c.algo == "grpo":
                    o = old[rows] if old is not None else final.detach()
                    policy_term = grpo_loss(final, o, a_mb, m_mb, c.clip_eps, c.length_norm)
                    if old is not None:
                        clip_fracs.append(clip_fraction(final, o, m_mb, c.clip_eps))
                elif c.algo == "reinforce":
                    policy_term = reinforce_loss(final, a_mb, m_mb, c.length_norm)
                else:
                    w = loop_weights(
                        c.omega,
                        pol.n_loops,
                        exit_pdf=pl.exit_pdf,
                        learned=self.omega_logits,
                        alpha=c.progressive_alpha,
                        tau=c.learned_tau,
                    )
                    if old_pl is None:
                        policy_term = rltt_loss(pl.log_probs, w, a_mb, m_mb, c.length_norm)
                    else:
                        policy_term = rltt_clipped_loss(
                            pl.log_probs, old_pl[rows], w, a_mb, m_mb, c.clip_eps, c.length_norm
                        )
                        clip_fracs.append(
                            clip_fraction(pl.log_probs, old_pl[rows], m_mb, c.clip_eps)
                        )
                kl = aggregate(k3_kl(final, ref_mb), m_mb, c.length_norm)
                loss = policy_term + (c.beta_kl * kl if c.kl_placement == "loss" else 0.0)
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                params = [p for g in self.opt.param_groups for p in g["params"]]
                gnorm = torch.nn.utils.clip_grad_norm_(params, c.grad_clip)
                self.opt.step()

        with torch.no_grad():
            r = rewards.view(-1, c.group_size)
            m = gen.mask.float()
            mb = m_mb.float()  # entropy and exit distribution: the last (mini)batch updated
            stats: dict[str, Any] = {
                "reward": float(rewards.mean()),
                "accuracy": float((rewards == 1).float().mean()),
                "kl": float(kl.detach()),
                "entropy": float((pl.entropies[..., -1] * mb).sum() / mb.sum().clamp_min(1)),
                "zero_spread_frac": float((r.max(-1).values == r.min(-1).values).float().mean()),
                "completion_len": float(m.sum(-1).mean()),
                "loss": float(loss.detach()),
                "grad_norm": float(gnorm),
                "seconds": time.perf_counter() - t0,
                "cpu_seconds": time.process_time() - c0,
                "rollout_seconds": t_roll,
                # share of tokens whose ratio left [1 - eps, 1 + eps], mean over the updates
                "clip_frac": float(np.mean(clip_fracs)) if clip_fracs else 0.0,
            }
            if pl.exit_pdf is not None:
                stats["exit_pdf"] = [
                    float(x)
                    for x in (pl.exit_pdf * mb[..., None]).sum((0, 1)).detach()
                    / mb.sum().clamp_min(1)
                ]
        if self.omega():
            stats["omega"] = self.omega()
        self.history.append(stats)
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
