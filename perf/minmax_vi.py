"""Oracle calls per second of the minmax_vi family against a plain Python loop, in one run.

The peer is what a VI experiment usually looks like without vectorization: the same algorithm
(extragradient-type FBF with batches b_k = k + 1, and unbatched SEG) on the same bilinear game
with the random-coupling noise, written with Python lists and ``random.gauss``, drawing each of
the b samples of a batch one by one. Ours: :func:`run_direct` (one replicate, the env's exact
stream), :func:`run_direct` with 16 replicates at once, and the agent through ``gym.make``.

    OMP_NUM_THREADS=1 python perf/minmax_vi.py
"""

from __future__ import annotations

import math
import random
import time

import gymnasium as gym

import icml26  # noqa: F401
from icml26.agents.minmax_vi.algorithms import VIAlgorithmAgent, run_direct
from icml26.envs.minmax_vi.problems import bilinear

N = 5  # x, y in R^5
SIGMA0 = 0.1


def plain_python_fbf(
    a: list[list[float]],
    x0: list[float],
    y0: list[float],
    calls: int,
    batch: str,
    seed: int,
    sigma1: float,
) -> float:
    """FBF (eta = 1/(2L), L = 1) with a per-sample Python oracle; returns |F(z_final)|."""
    rnd = random.Random(seed)
    n = len(x0)

    def sample(z: list[float]) -> list[float]:
        ux = [z[i] - x0[i] for i in range(n)]
        uy = [z[n + i] - y0[i] for i in range(n)]
        out = [0.0] * (2 * n)
        for i in range(n):
            for j in range(n):
                aij = a[i][j] + sigma1 * rnd.gauss(0.0, 1.0) / math.sqrt(n)
                out[i] += aij * uy[j]
                out[n + j] -= aij * ux[i]
        return [o + SIGMA0 * rnd.gauss(0.0, 1.0) / math.sqrt(2 * n) for o in out]

    def mean_sample(z: list[float], b: int) -> list[float]:
        acc = [0.0] * (2 * n)
        for _ in range(b):
            s = sample(z)
            acc = [u + v for u, v in zip(acc, s)]
        return [u / b for u in acc]

    z = [0.0] * (2 * n)
    used, k, eta = 0, 0, 0.5
    while used < calls:
        b = min(k + 1 if batch == "linear" else 1, (calls - used) // 2 or 1)
        g1 = mean_sample(z, b)
        zb = [z[i] - eta * g1[i] for i in range(2 * n)]
        g2 = mean_sample(zb, b)
        z = [zb[i] - eta * (g2[i] - g1[i]) for i in range(2 * n)]
        used += 2 * b
        k += 1
    ux = [z[i] - x0[i] for i in range(n)]
    uy = [z[n + i] - y0[i] for i in range(n)]
    f = [sum(a[i][j] * uy[j] for j in range(n)) for i in range(n)] + [
        -sum(a[i][j] * ux[i] for i in range(n)) for j in range(n)
    ]
    return math.sqrt(sum(v * v for v in f))


def rate(fn, calls: int) -> float:
    t = time.perf_counter()
    fn()
    return calls / (time.perf_counter() - t)


def through_env(calls: int, batch: str, sigma1: float) -> None:
    env = gym.make(
        "icml26/StochasticVI-v0",
        problem="bilinear",
        problem_kwargs={"n": N, "seed": 0},
        sigma1=sigma1,
        oracle_budget=calls,
    )
    agent = VIAlgorithmAgent("fbf", batch=batch)
    agent.bind(env.observation_space, env.action_space)
    obs, info = env.reset(seed=0)
    agent.reset(0)
    while True:
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        if term or trunc:
            break


def main() -> None:
    prob = bilinear(n=N, seed=0)
    a = prob.params["A"].tolist()
    x0, y0 = prob.solution[:N].tolist(), prob.solution[N:].tolist()
    print(
        f"bilinear game, x, y in R^{N}, random-coupling noise; oracle calls per second (higher is better)\n"
    )
    print(f"{'setting':53s} {'plain Python':>14s} {'ours':>14s} {'ratio':>8s}")
    # unbatched FBF diverges at sigma1 = 1 (the point of the family): the constant-batch rows use 0.1
    for batch, sigma1, calls_py, calls_np in (
        ("linear", 1.0, 200_000, 2_000_000),
        ("constant", 0.1, 20_000, 200_000),
    ):
        params = {"eta": 0.5, "batch": batch, "b0": 1.0}
        py = rate(
            lambda c=calls_py, b=batch, s1=sigma1: plain_python_fbf(a, x0, y0, c, b, 0, s1),
            calls_py,
        )
        rows = [
            (
                "run_direct, 1 replicate",
                rate(
                    lambda c=calls_np, p=params, s1=sigma1: run_direct(
                        prob,
                        "fbf",
                        p,
                        noise="operator",
                        sigma0=SIGMA0,
                        sigma1=s1,
                        oracle_budget=c,
                        seed=0,
                    ),
                    calls_np,
                ),
            ),
            (
                "run_direct, 16 replicates",
                rate(
                    lambda c=calls_np, p=params, s1=sigma1: run_direct(
                        prob,
                        "fbf",
                        p,
                        noise="operator",
                        sigma0=SIGMA0,
                        sigma1=s1,
                        oracle_budget=c,
                        seed=0,
                        replicates=16,
                    ),
                    16 * calls_np,
                ),
            ),
            (
                "agent through gym.make",
                rate(
                    lambda c=calls_np // 4, b=batch, s1=sigma1: through_env(c, b, s1), calls_np // 4
                ),
            ),
        ]
        for name, ours in rows:
            print(
                f"FBF, batch {batch:8s} sigma1 {sigma1:3.1f} {name:25s} {py:14,.0f} {ours:14,.0f} {ours / py:7.1f}x"
            )


if __name__ == "__main__":
    main()
