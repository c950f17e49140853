"""The looplm agents: a small looped transformer, warm-started with the Ouro loss, then trained
with RLTT, GRPO or REINFORCE on ``icml26/LoopReasoning-v0``, all on the common agent protocol."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml26.agents.looplm.evaluation import DEFAULT_THRESHOLDS, evaluate_policy, loop_accuracy
from icml26.agents.looplm.model import LoopConfig, LoopedTransformer
from icml26.agents.looplm.policy import DECODE_MODES, LoopedPolicy
from icml26.agents.looplm.rl import LoopRLTrainer, RLConfig, problem_source, summarize_history
from icml26.agents.looplm.sft import WarmStartConfig, cached_warm_start
from icml26.envs.looplm.env import ANSWER_SLACK
from icml26.envs.looplm.tokenizer import CharTokenizer
from icml26.protocol import Budget, derive_seed

_RL_FIELDS = {f.name for f in fields(RLConfig)}


class LoopLMAgent:
    """Looped-LM agent: ``learn`` = cached Ouro warm start + RL; ``act`` = greedy decoding.

    Args:
        algo: ``"rltt"``, ``"grpo"``, ``"reinforce"`` or ``"sft"`` (warm start only).
        omega: RLTT's loop weights (``uniform``, ``progressive``, ``exit_pdf``, ``learned``).
        d_model, n_heads, n_layers, n_loops, max_len: the model (card: 64, 4, 2, 4). ``n_layers``
            None takes the budget's ``extra["n_layers"]`` (a task may fix the blocks per loop), else 2.
        warm_start_steps, rl_steps: caps on the budget's ``extra["warm_start_steps"]`` and
            ``extra["rl_steps"]`` (the smaller wins; None = the budget's). The budget's
            ``extra["prompts_per_step"]`` and ``extra["group_size"]`` set the RL batch unless given
            here as keywords.
        warm_start_batch, warm_start_lr, beta_entropy: the supervised warm start.
        decode, decode_loop, threshold: how ``act`` decodes (``fixed`` at ``decode_loop``, default
            the last loop; ``threshold``; ``mix``).
        checkpoint: a file written by :meth:`save` to start from instead of a warm start.
        num_threads: torch intra-op threads set by ``learn`` and ``evaluate`` (default 1: the
            model is so small that more threads only add overhead; None leaves torch's setting).
        device: where RL and evaluation run (``"cpu"``, ``"cuda"``, ...); the warm start is
            trained (or loaded) on the CPU and moved there. Results on a GPU differ numerically
            from the CPU's: compare arms run on one device.
        Any other keyword is an :class:`~icml26.agents.looplm.rl.RLConfig` field (``lr``,
        ``beta_kl``, ``group_size``, ``prompts_per_step``, ``kl_placement``, ``clip_eps``,
        ``updates_per_batch``, ``minibatches``, ``length_norm``, ``progressive_alpha``, ...).
        The budget's ``extra`` may also set ``lr``, ``updates_per_batch`` and ``minibatches``
        (keywords given here win); REINFORCE always makes one update per batch. The budget's
        ``extra["inject_input"]`` turns on the model's input injection (default off).

    The budget's ``extra["warm_start_seed"]``, when present, seeds the warm start instead of the
    trial seed, so every arm and every seed of a task starts from one cached checkpoint (the
    calibrated warm start of the task); the trial seed then drives only the RL sampling.

    The budget's ``extra["ladder"]`` (fractions of ``rl_steps``, e.g. ``[0.125, 0.25, 0.5]``)
    makes ``learn`` keep a copy of the weights after those RL steps and ``evaluate`` score each
    copy too: with a constant learning rate the weights after s steps do not depend on the total,
    so this is the budget ladder of the trial at no extra RL cost.

    Version 2: ``warm_start_seed``, ``minibatches``, the budget's RL keys and ``n_layers``.
    Version 3: ``device``, the budget's ``beta_kl``, the RL budget ladder; the step statistics
    average over the step's optimizer steps (training unchanged).
    """

    version = "3"

    def __init__(
        self,
        algo: str = "rltt",
        omega: str = "exit_pdf",
        *,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int | None = None,
        n_loops: int = 4,
        max_len: int = 96,
        warm_start_steps: int | None = None,
        rl_steps: int | None = None,
        warm_start_batch: int = 64,
        warm_start_lr: float = 3e-3,
        beta_entropy: float = 0.05,
        decode: str = "fixed",
        decode_loop: int | None = None,
        threshold: float = 0.5,
        checkpoint: str | None = None,
        progress: bool = True,
        num_threads: int | None = 1,
        eval_thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
        device: str = "cpu",
        **rl_kwargs: Any,
    ) -> None:
        if algo not in ("rltt", "grpo", "reinforce", "sft"):
            raise ValueError(
                f"LoopLMAgent: algo must be rltt, grpo, reinforce or sft, got {algo!r}"
            )
        unknown = set(rl_kwargs) - _RL_FIELDS
        if unknown:
            raise TypeError(
                f"LoopLMAgent: unknown keyword(s) {sorted(unknown)}; RLConfig has {sorted(_RL_FIELDS)}"
            )
        if decode not in DECODE_MODES:
            raise ValueError(f"LoopLMAgent: decode must be one of {DECODE_MODES}, got {decode!r}")
        self.algo, self.omega = algo, omega
        self.rl_kwargs = dict(rl_kwargs)
        if algo != "sft":
            RLConfig(
                algo=algo, omega=omega, **self.rl_kwargs
            )  # validate now, not after the warm start
        self.model_cfg = dict(
            d_model=d_model, n_heads=n_heads, n_layers=n_layers, n_loops=n_loops, max_len=max_len
        )
        self.warm_caps = (warm_start_steps, rl_steps)
        self.warm_cfg = WarmStartConfig(
            batch_size=warm_start_batch, lr=warm_start_lr, beta_entropy=beta_entropy
        )
        self.decode, self.decode_loop, self.threshold = decode, decode_loop, threshold
        self.progress, self.eval_thresholds = progress, tuple(eval_thresholds)
        self.num_threads = num_threads
        self.device = torch.device(device)
        self.tokenizer = CharTokenizer()
        self.policy: LoopedPolicy | None = None
        if checkpoint is not None:
            self.policy = LoopedPolicy(
                LoopedTransformer.load(checkpoint).to(self.device), self.tokenizer
            )
        self.snapshots: dict[int, dict[str, torch.Tensor]] = {}
        self.seed = 0
        self.max_new_tokens = 8

    # ------------------------------------------------------------------ protocol
    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = int(seed)

    def bind(self, observation_space: Any, action_space: Any) -> None:
        # the longest gold answer, one spare character and EOS
        self.max_new_tokens = int(action_space.max_length) - ANSWER_SLACK + 2

    def learn(self, env: Any, budget: Budget) -> dict[str, Any]:
        """Warm start (cached; skipped with a ``checkpoint``), then ``rl_steps`` RL steps."""
        self._set_threads()
        u = env.unwrapped
        self.max_new_tokens = u.max_answer_len + 2
        warm_steps = _cap(budget.extra.get("warm_start_steps", 400), self.warm_caps[0])
        ws_seed = budget.extra.get("warm_start_seed")
        ws_seed = derive_seed(self.seed, "warm_start") if ws_seed is None else int(ws_seed)
        rl_steps = _cap(budget.extra.get("rl_steps", budget.updates or 0), self.warm_caps[1])
        stats: dict[str, Any] = {"warm_start_steps": warm_steps, "rl_steps": rl_steps}
        if self.policy is None:
            layers = self.model_cfg["n_layers"] or int(budget.extra.get("n_layers", 2))
            cfg = LoopConfig(
                vocab_size=self.tokenizer.vocab_size,
                **{**self.model_cfg, "n_layers": layers},
                inject_input=bool(budget.extra.get("inject_input", False)),
            )
            wcfg = WarmStartConfig(**{**asdict(self.warm_cfg), "steps": warm_steps})
            task_key = {
                "task": u.task_name,
                **u.generator.config(),
                "test_fraction": u.sampler.test_fraction,
            }
            model, wstats = cached_warm_start(
                cfg, u.sampler, wcfg, ws_seed, task_key, progress=self.progress
            )
            self.policy = LoopedPolicy(model.to(self.device), self.tokenizer)
            stats["warm_start"] = {k: v for k, v in wstats.items() if k != "ce_final_curve"}
        if self.algo == "sft" or rl_steps == 0:
            return stats
        # the task's sample budget (prompts x group size per step) unless the agent was told otherwise
        keys = ("prompts_per_step", "group_size") + (
            () if self.algo == "reinforce" else ("updates_per_batch", "minibatches")
        )
        sample_budget: dict[str, Any] = {k: int(budget.extra[k]) for k in keys if k in budget.extra}
        for k in ("lr", "beta_kl"):
            if k in budget.extra:
                sample_budget[k] = float(budget.extra[k])
        rl_cfg = RLConfig(
            algo=self.algo,
            omega=self.omega,
            **{"max_new_tokens": self.max_new_tokens, **sample_budget, **self.rl_kwargs},
        )
        trainer = LoopRLTrainer(
            self.policy, problem_source(env), rl_cfg, seed=derive_seed(self.seed, "rl")
        )
        ladder = sorted(
            {int(round(f * rl_steps)) for f in budget.extra.get("ladder", ())} - {0, rl_steps}
        )
        self.snapshots = {}
        hist: list[dict[str, Any]] = []
        desc = f"{self.algo}" + (f"[{self.omega}]" if self.algo == "rltt" else "")
        t0 = time.perf_counter()
        for stop in [*ladder, rl_steps]:
            left = (
                None
                if budget.wall_clock_s is None
                else budget.wall_clock_s - (time.perf_counter() - t0)
            )
            hist += trainer.train(
                stop - len(hist), wall_clock_s=left, progress=self.progress, desc=desc
            )
            if len(hist) < stop:  # out of wall-clock time
                break
            if stop < rl_steps:
                self.snapshots[stop] = {
                    k: v.detach().cpu().clone() for k, v in self.policy.model.state_dict().items()
                }
        stats.update(summarize_history(hist))
        return stats

    def act(self, observation: Mapping[str, Any], info: Mapping[str, Any] | None = None) -> str:
        """Greedy answer text for one observation of ``LoopReasoning-v0``."""
        pol = self._require_policy()
        tokens = np.asarray(observation["tokens"])
        n = int(observation["length"])
        ids = torch.as_tensor(tokens[:n], dtype=torch.long, device=pol.device)[None]
        gen = pol.generate(
            ids, torch.ones_like(ids, dtype=torch.bool), self.max_new_tokens, **self._decode_kw()
        )
        return pol.decode(gen.tokens)[0]

    # ------------------------------------------------------------------ batched evaluation
    def evaluate(
        self, env: Any, problems: Sequence[Any], seed: int = 0, k: int = 8
    ) -> dict[str, Any]:
        """Every family metric on ``problems`` of ``env`` (``LoopReasoning-v0``), batched; pass@k
        from ``k`` samples."""
        self._set_threads()
        u = env.unwrapped
        src = problem_source(u)
        pol = self._require_policy()
        out = evaluate_policy(
            pol,
            problems,
            src.prompt,
            src.score,
            u.max_answer_len + 2,
            thresholds=self.eval_thresholds,
            k=k,
            seed=seed,
        )
        if self.snapshots:
            final = {k: v.detach().clone() for k, v in pol.model.state_dict().items()}
            ladder = []
            for step, state in sorted(self.snapshots.items()):
                pol.model.load_state_dict(state)
                ladder.append(
                    {"rl_steps": step}
                    | loop_accuracy(pol, problems, src.prompt, src.score, u.max_answer_len + 2)
                )
            pol.model.load_state_dict(final)
            out["ladder"] = ladder
        return out

    def save(self, path: str | Path) -> None:
        self._require_policy().model.save(path)

    def _set_threads(self) -> None:
        if self.num_threads is not None:
            torch.set_num_threads(int(self.num_threads))

    def _decode_kw(self) -> dict[str, Any]:
        if self.decode == "fixed":
            return {"loop": self.decode_loop}
        if self.decode == "threshold":
            return {"mode": "threshold", "threshold": self.threshold}
        return {"mode": "mix"}

    def _require_policy(self) -> LoopedPolicy:
        if self.policy is None:
            raise RuntimeError(
                "LoopLMAgent: no model yet; call learn(env, budget) or pass checkpoint="
            )
        return self.policy


def _cap(budget_value: Any, cap: int | None) -> int:
    v = int(budget_value or 0)
    return v if cap is None else min(v, int(cap))
