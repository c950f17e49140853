"""Hom-PGD+ as the paper runs it: one conditional INN trained per problem family, then used on
every instance of the family without further training (the training cost is amortized).

``learn(family, budget)`` trains a :class:`~icml26.agents.constrained_opt.maps.CondINNMap` on
instances drawn from a :class:`~icml26.envs.constrained_opt.problems.Family` for
``budget.updates`` steps; ``solve(problem)`` binds the map to the instance's parameters
(``problem.condition``) and runs Hom-PGD+ on it (``act`` does the same through the env).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from icml26.agents.constrained_opt.agent import ConstrainedOptAgent
from icml26.agents.constrained_opt.maps import CondINNMap
from icml26.agents.constrained_opt.solvers import RULES, SolverGen, hom_pgd_plus


class AmortizedHomPGDAgent(ConstrainedOptAgent):
    """Hom-PGD+ with a conditional INN learned once per family.

    Args:
        iters: Hom-PGD+ iterations per instance.
        rule: the step rule (:data:`~icml26.agents.constrained_opt.solvers.RULES`; default the
            release's adaptive rule).
        layers, hidden, embed: the conditional INN's coupling layers, their width and the width
            of the instance embedding.
        batch_instances, batch_latent, lr: training batches (instances x latent points) and
            Adam's learning rate; the number of steps is the budget's ``updates``.
        val_instances: held-out instances of the family scored during training (``val_every``
            steps apart; default 8 checkpoints) into ``info["training"]["history"]``.
    """

    version = "0"

    def __init__(
        self,
        iters: int = 200,
        rule: str = "release",
        layers: int = 4,
        hidden: int = 64,
        embed: int = 32,
        batch_instances: int = 4,
        batch_latent: int = 32,
        lr: float = 2e-3,
        val_instances: int = 8,
        val_every: int = 0,
    ) -> None:
        if rule not in RULES:
            raise ValueError(f"AmortizedHomPGDAgent: rule must be one of {RULES}, got {rule!r}")
        for name, v in (
            ("layers", layers),
            ("hidden", hidden),
            ("embed", embed),
            ("batch_instances", batch_instances),
            ("batch_latent", batch_latent),
        ):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"AmortizedHomPGDAgent: {name} must be an int >= 1, got {v!r}")
        if not (isinstance(val_instances, int) and val_instances >= 0):
            raise ValueError(
                f"AmortizedHomPGDAgent: val_instances must be an int >= 0, got {val_instances!r}"
            )
        super().__init__("hom_pgd_plus", iters=iters, rule=rule)
        self.net = {"layers": layers, "hidden": hidden, "embed": embed}
        self.train_kw = {"batch_instances": batch_instances, "batch_latent": batch_latent, "lr": lr}
        self.val_instances, self.val_every = val_instances, val_every
        self.cinn: CondINNMap | None = None
        self.training: dict[str, Any] = {}

    def learn(self, family: Any, budget: Any) -> None:
        """Train the family's conditional INN for ``budget.updates`` steps (seeded by ``reset``)."""
        steps = getattr(budget, "updates", None)
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(
                f"AmortizedHomPGDAgent.learn: the budget must set updates (INN training steps) "
                f"to an int >= 1, got {steps!r}"
            )
        val = family.validation_instances(self.val_instances) if self.val_instances else None
        every = self.val_every or max(1, steps // 8)
        cinn = CondINNMap(family.n, family.condition_dim, seed=self._seed, **self.net)
        t0, c0 = time.perf_counter(), time.process_time()
        cinn.fit(family, steps, seed=self._seed, validation=val, val_every=every, **self.train_kw)
        self.cinn = cinn
        self.training = {
            "steps": steps,
            "cpu_s": time.process_time() - c0,
            "wall_s": time.perf_counter() - t0,
            "params": cinn.num_params(),
            "history": [h for h in cinn.history if "val_coverage" in h],
        }

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)  # keeps the learned map: it serves every instance of the family

    def solve(self, oracle: Any) -> SolverGen:
        if self.cinn is None:
            raise RuntimeError(
                "AmortizedHomPGDAgent: call learn(family, budget) before solving (the conditional "
                "INN is trained once per family)"
            )
        cond = getattr(oracle, "condition", None)
        if cond is None:
            raise ValueError(
                "AmortizedHomPGDAgent: the instance has no condition (instance parameters); it "
                "needs a parametric family such as problem='qcqp_param'"
            )
        inn = self.cinn.bind(np.asarray(cond, float), np.asarray(oracle.x0, float))
        self.info = {}
        return hom_pgd_plus(
            oracle, inn=inn, info=self.info, quality=False, **{**self.params, "seed": self._seed}
        )
