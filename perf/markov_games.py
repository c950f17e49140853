"""Speed of the exact metrics and of SOS-MD against straightforward per-state implementations.

    OMP_NUM_THREADS=1 .venv/bin/python perf/markov_games.py

For a random game S=20, A=B=5, H=10 and a 10x larger one (S=200), side by side in one run:

* exact duality gap (two best responses by backward induction): vectorized over states
  (``icml26.envs.markov_games.duality_gap``) vs a loop over (h, s) with numpy per state;
* exact Nash equilibrium: one block-diagonal HiGHS LP per stage
  (``nash_equilibrium``) vs one ``linprog`` per player per state;
* one SOS-MD fit on 10^4 trajectories (least squares + T = 100 self-play steps per stage):
  ``SOSMD.learn`` vs per-sample accumulation and a per-state mirror-descent loop.

Each implementation is checked against the other (same numbers) before timing. Prints best-of-k
wall times and the ratio (loop / vectorized). Times are machine-dependent; ratios measured in
one run are robust to load.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from icml26.agents.markov_games import SOSMD  # noqa: E402
from icml26.envs.markov_games import collect_dataset, duality_gap, nash_equilibrium, random_game  # noqa: E402
from icml26.envs.markov_games.metrics import _NASH_CACHE  # noqa: E402
from icml26.envs.markov_games.solvers import solve_matrix_game_lp  # noqa: E402


def gap_loop(game: Any, mu: np.ndarray, nu: np.ndarray) -> float:
    """Best responses by a plain loop over steps and states (numpy inside each state)."""
    H, S = game.H, game.S
    v_hi, v_lo = np.zeros(S), np.zeros(S)
    for h in reversed(range(H)):
        new_hi, new_lo = np.zeros(S), np.zeros(S)
        for s in range(S):
            q_hi = game.rewards[h, s] + game.transitions[h, s] @ v_hi
            q_lo = game.rewards[h, s] + game.transitions[h, s] @ v_lo
            new_hi[s] = np.max(q_hi @ nu[h, s])
            new_lo[s] = np.min(mu[h, s] @ q_lo)
        v_hi, v_lo = new_hi, new_lo
    return float(game.initial @ (v_hi - v_lo))


def nash_loop(game: Any) -> float:
    """Backward induction with two LPs (max and min player) per state."""
    v = np.zeros(game.S)
    for h in reversed(range(game.H)):
        new = np.zeros(game.S)
        for s in range(game.S):
            Q = game.rewards[h, s] + game.transitions[h, s] @ v
            _, _, new[s] = solve_matrix_game_lp(Q)
        v = new
    return float(game.initial @ v)


def sos_md_loop(
    ds: Any, beta: float, eta: float, T: int, lam: float
) -> tuple[np.ndarray, np.ndarray]:
    """SOS-MD written the straightforward way: per-sample sums, per-state mirror descent."""
    H, S, A, B = ds.shape
    lo_r, hi_r = ds.metadata["game"]["reward_range"]
    mu, nu = np.zeros((H, S, A)), np.zeros((H, S, B))
    v = np.zeros(S)
    for h in reversed(range(H)):
        sums, counts = np.zeros((S, A, B)), np.zeros((S, A, B))
        for k in range(ds.n):
            s, a, b = ds.states[k, h], ds.actions_max[k, h], ds.actions_min[k, h]
            sums[s, a, b] += ds.rewards[k, h] + v[ds.next_states[k, h]]
            counts[s, a, b] += 1
        Q = np.clip(sums / (counts + lam), (H - h) * lo_r, (H - h) * hi_r)
        new_v = np.zeros(S)
        for s in range(S):
            p, q = ds.reference_mu[h, s], ds.reference_nu[h, s]
            x, y = p.copy(), q.copy()
            for _ in range(T):
                gx, gy = Q[s] @ y, -(x @ Q[s])
                x_new = x ** (1 - eta * beta) * p ** (eta * beta) * np.exp(eta * (gx - gx.max()))
                y_new = y ** (1 - eta * beta) * q ** (eta * beta) * np.exp(eta * (gy - gy.max()))
                x, y = x_new / x_new.sum(), y_new / y_new.sum()
            mu[h, s], nu[h, s] = x, y
            new_v[s] = (
                x @ Q[s] @ y - beta * np.sum(x * np.log(x / p)) + beta * np.sum(y * np.log(y / q))
            )
        v = new_v
    return mu, nu


def best_of(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def bench(label: str, S: int) -> list[tuple[str, str, float, float]]:
    rows = []
    game = random_game(S=S, A=5, B=5, H=10, seed=0)
    rng = np.random.default_rng(0)
    mu, nu = rng.dirichlet(np.ones(5), (10, S)), rng.dirichlet(np.ones(5), (10, S))
    fast_t, fast = best_of(lambda: duality_gap(game, mu, nu), 5)
    slow_t, slow = best_of(lambda: gap_loop(game, mu, nu), 3 if S == 20 else 1)
    assert abs(fast - slow) < 1e-9, (fast, slow)
    rows.append(("exact duality gap", label, fast_t, slow_t))

    def nash() -> float:
        _NASH_CACHE.clear()
        return nash_equilibrium(game).value

    fast_t, fast = best_of(nash, 3)
    slow_t, slow = best_of(lambda: nash_loop(game), 1)
    assert abs(fast - slow) < 1e-7, (fast, slow)
    rows.append(("exact Nash equilibrium (LP)", label, fast_t, slow_t))

    ds = collect_dataset(game, 10_000, "uniform", seed=0)

    def fit() -> tuple[np.ndarray, np.ndarray]:
        agent = SOSMD(beta=0.1, eta=0.5, T=100, lam=1.0)
        agent.learn(ds)
        return agent.policy()

    fast_t, (fmu, _) = best_of(fit, 3)
    slow_t, (smu, _) = best_of(lambda: sos_md_loop(ds, 0.1, 0.5, 100, 1.0), 1)
    assert np.abs(fmu - smu).max() < 1e-8
    rows.append(("SOS-MD fit (n=1e4, T=100)", label, fast_t, slow_t))
    return rows


def main() -> None:
    from tqdm.auto import tqdm

    rows = []
    for label, S in tqdm(
        [("S=20, A=B=5, H=10", 20), ("S=200, A=B=5, H=10 (10x)", 200)], desc="perf"
    ):
        rows += bench(label, S)
    print("| operation | game | vectorized (ms) | per-state loop (ms) | speed-up |")
    print("|---|---|---|---|---|")
    for op, label, fast_t, slow_t in rows:
        print(
            f"| {op} | {label} | {fast_t * 1e3:.1f} | {slow_t * 1e3:.1f} | {slow_t / fast_t:.0f}x |"
        )


if __name__ == "__main__":
    main()
