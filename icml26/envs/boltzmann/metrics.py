"""Metrics of a Boltzmann sampler: ESS, log Z, NLL, energy Wasserstein, modes, Ramachandran KL.

Formulas (Midgley et al. 2023, FAB; the LDR paper's evaluation):

* log-weights ``log w = -u(x) - log q(x)`` (unnormalized target over sampler density);
* reverse ESS (Kish) from sampler samples: ``(sum w)^2 / (n sum w^2)``, after clipping the
  top 1e-4 fraction of log-weights to their 1 - 1e-4 quantile;
* forward ESS from target samples: ``exp(-logmeanexp(-log w) - logmeanexp(log w))``;
* ``log Z^ = logmeanexp(log w)`` over sampler samples, compared with the exact log Z;
* NLL: ``-mean log q`` on held-out target samples;
* energy W1 / W2 between the sampler's and the reference's reduced-energy distributions;
* modes covered (GMM-40): modes holding at least 10% of their expected share of samples
  (samples assigned to the nearest mean);
* Ramachandran KL: ``sum p log(p / q)`` between 100 x 100 histograms of (phi, psi) on
  [0, 2 pi)^2 of reference (p) and sampler (q) configurations, both plus eps = 1e-10; reported
  with its noise floor (the same KL between two disjoint parts of the reference, one of the
  sampler's size) and at a coarser 36 x 36 binning, whose floor is lower;
* paired Ramachandran KL (:func:`ramachandran_kl_paired`): the reference is split into two
  independent halves A and B (by MD run where the reference records runs), the sampler scores
  KL(A || |B| of its samples) and the floor is KL(A || B): the same reference part and the same
  comparison size, so an exact sampler scores at most about the floor;
* phi > 0 population of the sampler next to the reference's (alanine).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from icml26.envs.boltzmann.datasets import BoltzmannDataset
from icml26.envs.boltzmann.targets import Target

__all__ = [
    "log_mean_exp",
    "reverse_ess",
    "forward_ess",
    "log_z_estimate",
    "energy_wasserstein",
    "modes_covered",
    "ramachandran_kl",
    "ramachandran_kl_floor",
    "ramachandran_kl_paired",
    "reference_halves",
    "batched_energy",
    "evaluate_sampler",
]


def log_mean_exp(a: np.ndarray) -> float:
    a = np.asarray(a, dtype=np.float64)
    m = np.max(a)
    if not np.isfinite(m):
        return float(m)
    return float(m + np.log(np.mean(np.exp(a - m))))


def _clean(log_w: np.ndarray) -> np.ndarray:
    lw = np.asarray(log_w, dtype=np.float64).ravel()
    if lw.size == 0:
        raise ValueError("ESS: no log-weights")
    return np.where(np.isnan(lw), -np.inf, lw)


def reverse_ess(log_w: np.ndarray, clip_fraction: float = 1e-4) -> float:
    """Normalized Kish ESS in [0, 1] of sampler-sample log-weights (top ``clip_fraction`` clipped)."""
    lw = _clean(log_w)
    finite = lw[np.isfinite(lw)]
    if finite.size == 0 or np.any(lw == np.inf):
        return 0.0
    if clip_fraction > 0:
        lw = np.minimum(lw, np.quantile(finite, 1.0 - clip_fraction))
    w = np.exp(lw - np.max(lw))
    return float(w.sum() ** 2 / (lw.size * (w**2).sum()))


def forward_ess(log_w_target: np.ndarray) -> float:
    """Normalized forward ESS in [0, 1] from log-weights of *target* samples."""
    lw = _clean(log_w_target)
    if np.any(np.isinf(lw)):
        return 0.0  # a target sample the sampler cannot produce (or cannot weigh)
    return float(min(1.0, math.exp(-log_mean_exp(-lw) - log_mean_exp(lw))))


def log_z_estimate(log_w: np.ndarray) -> float:
    """Importance-sampling estimate of log Z from sampler-sample log-weights."""
    return log_mean_exp(_clean(log_w))


def energy_wasserstein(
    u_model: np.ndarray, u_ref: np.ndarray, cap_kt: float = 100.0
) -> dict[str, float]:
    """W1 and W2 between two 1-D energy samples (quantile coupling on a common grid).

    Sampler energies above the reference's 99.9% quantile + ``cap_kt`` (and inf/NaN) are
    clipped to that cap so the distance stays finite; the clipped fraction is reported.
    """
    a = np.asarray(u_model, dtype=np.float64).ravel()
    b = np.asarray(u_ref, dtype=np.float64).ravel()
    cap = float(np.quantile(b, 0.999) + cap_kt)
    clipped = ~(a <= cap)
    a = np.where(clipped, cap, a)
    m = max(a.size, b.size, 1000)
    q = (np.arange(m) + 0.5) / m
    qa, qb = np.quantile(a, q), np.quantile(b, q)
    d = np.abs(qa - qb)
    return {
        "energy_w1": float(d.mean()),
        "energy_w2": float(np.sqrt((d**2).mean())),
        "energy_clip_fraction": float(clipped.mean()),
    }


def modes_covered(x: np.ndarray, means: np.ndarray, min_share: float = 0.1) -> int:
    """Number of modes (nearest mean) holding >= ``min_share`` of their expected n / K samples."""
    x = np.asarray(x, dtype=np.float64)
    means = np.asarray(means, dtype=np.float64)
    k = np.argmin(((x[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
    counts = np.bincount(k, minlength=len(means))
    return int(np.sum(counts >= min_share * len(x) / len(means)))


def ramachandran_kl(
    phi_psi_ref: tuple[np.ndarray, np.ndarray],
    phi_psi_model: tuple[np.ndarray, np.ndarray],
    bins: int = 100,
    eps: float = 1e-10,
) -> float:
    """Forward KL(reference || sampler) between (phi, psi) histograms on [0, 2 pi)^2."""
    edges = np.linspace(0, 2 * np.pi, bins + 1)

    def hist(phi: np.ndarray, psi: np.ndarray) -> np.ndarray:
        h, _, _ = np.histogram2d(
            np.mod(phi, 2 * np.pi), np.mod(psi, 2 * np.pi), bins=[edges, edges]
        )
        return h / max(h.sum(), 1.0) + eps

    p, q = hist(*phi_psi_ref), hist(*phi_psi_model)
    return float(np.sum(p * np.log(p / q)))


def ramachandran_kl_floor(
    phi_psi_ref: tuple[np.ndarray, np.ndarray],
    n_model: int,
    bins: int = 100,
    eps: float = 1e-10,
    seed: int = 0,
) -> float:
    """The noise floor of :func:`ramachandran_kl`: the same KL between two disjoint random parts of
    the reference sample, the second of the sampler's size ``n_model`` (halves when the reference
    is not larger than that). A sampler's KL is only informative where it clearly exceeds this:
    a perfect sampler scores about the floor, not 0."""
    phi, psi = (np.asarray(a) for a in phi_psi_ref)
    n = phi.size
    if n < 4:
        raise ValueError(
            f"ramachandran_kl_floor: need at least 4 reference configurations, got {n}"
        )
    perm = np.random.default_rng(seed).permutation(n)
    m = int(n_model) if 0 < n_model < n - 1 else n // 2
    a, b = perm[: n - m], perm[n - m :]
    return ramachandran_kl((phi[a], psi[a]), (phi[b], psi[b]), bins=bins, eps=eps)


def reference_halves(n: int, run_id: np.ndarray | None = None, seed: int = 0) -> np.ndarray:
    """Boolean mask of half B of ``n`` reference configurations: the odd-ranked runs when
    ``run_id`` names at least two runs (independent MD runs), else a seeded random half."""
    runs = None if run_id is None else np.asarray(run_id)
    if runs is not None and runs.shape != (n,):
        raise ValueError(f"reference_halves: run_id must have shape ({n},), got {runs.shape}")
    if runs is not None and np.unique(runs).size >= 2:
        return np.isin(runs, np.unique(runs)[1::2])
    in_b = np.zeros(n, bool)
    in_b[np.random.default_rng(seed).permutation(n)[: n // 2]] = True
    return in_b


def ramachandran_kl_paired(
    phi_psi_ref: tuple[np.ndarray, np.ndarray],
    phi_psi_model: tuple[np.ndarray, np.ndarray],
    run_id: np.ndarray | None = None,
    bins: int = 36,
    eps: float = 1e-10,
    seed: int = 0,
) -> tuple[float, float]:
    """``(KL(A || sampler), KL(A || B))``: A and B are independent halves of the reference (even
    and odd runs when ``run_id`` gives at least two runs, else a seeded random half split); the
    sampler contributes its first ``|B|`` samples. The second value is the noise floor."""
    phi, psi = (np.asarray(a) for a in phi_psi_ref)
    mphi, mpsi = (np.asarray(a) for a in phi_psi_model)
    n = phi.size
    if n < 4:
        raise ValueError(
            f"ramachandran_kl_paired: need at least 4 reference configurations, got {n}"
        )
    in_b = reference_halves(n, run_id, seed)
    m = int(in_b.sum())
    if mphi.size < m:
        raise ValueError(
            f"ramachandran_kl_paired: the sampler needs at least {m} samples (the size of "
            f"reference half B), got {mphi.size}"
        )
    a = (phi[~in_b], psi[~in_b])
    kl = ramachandran_kl(a, (mphi[:m], mpsi[:m]), bins=bins, eps=eps)
    return kl, ramachandran_kl(a, (phi[in_b], psi[in_b]), bins=bins, eps=eps)


def batched_energy(target: Target, x: np.ndarray | torch.Tensor, chunk: int = 4096) -> np.ndarray:
    """Reduced energies of many configurations, in chunks, without gradients (float64)."""
    xt = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x.detach()).to(
        torch.float64
    )
    out = []
    with torch.no_grad():
        for i in range(0, xt.shape[0], chunk):
            out.append(target.energy(xt[i : i + chunk]).to(torch.float64).numpy())
    return np.concatenate(out) if out else np.zeros(0)


def _np(a: Any) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().to(torch.float64).numpy()
    return np.asarray(a, dtype=np.float64)


def evaluate_sampler(
    target: Target,
    sample: Callable[[int], tuple[Any, Any]],
    log_prob: Callable[[Any], Any] | None,
    test: BoltzmannDataset,
    n_samples: int = 10_000,
) -> dict[str, float]:
    """Every metric of the family for a sampler on ``target`` against held-out ``test`` data.

    ``sample(n) -> (x, log_q)``; ``log_prob(x) -> log_q`` (needed for NLL and forward ESS).
    """
    x, log_q = sample(n_samples)
    x, log_q = _np(x), _np(log_q).ravel()
    if x.shape != (n_samples, target.dim) or log_q.shape != (n_samples,):
        raise ValueError(
            f"sampler for {target.name}: sample({n_samples}) must return x of shape "
            f"({n_samples}, {target.dim}) and log_q of shape ({n_samples},), got {x.shape} and {log_q.shape}"
        )
    u = batched_energy(target, x)
    log_w = -u - log_q
    out: dict[str, float] = {"reverse_ess": reverse_ess(log_w)}
    log_z_hat = log_z_estimate(log_w)
    out["log_z_estimate"] = log_z_hat if math.isfinite(log_z_hat) else -1e30
    if target.log_z is not None:
        err = abs(log_z_hat - target.log_z)
        out["log_z_error"] = float(err) if math.isfinite(err) else 1e30
    if log_prob is not None:
        lq_test = _np(log_prob(test.x)).ravel()
        finite = np.isfinite(lq_test)
        out["nll"] = float(-lq_test[finite].mean()) if finite.any() else 1e30
        out["nll_nonfinite_fraction"] = float(1 - finite.mean())
        out["forward_ess"] = forward_ess(-test.energy - lq_test)
    out.update(energy_wasserstein(u, test.energy))
    if target.name.startswith("gmm40"):
        out["modes_covered"] = float(modes_covered(x, target.means.numpy()))  # type: ignore[attr-defined]
    if target.geometry == "alanine":
        from icml26.envs.boltzmann.geometry import ramachandran

        ref = tuple(a.numpy() for a in ramachandran(torch.from_numpy(test.x.astype(np.float64))))
        mod = tuple(a.numpy() for a in ramachandran(torch.from_numpy(x)))
        out["ramachandran_kl"] = ramachandran_kl(ref, mod)  # type: ignore[arg-type]
        # its noise floor at this sample size, and both at a coarser 36 x 36 (10 degree) binning
        out["ramachandran_kl_floor"] = ramachandran_kl_floor(ref, n_samples)  # type: ignore[arg-type]
        out["ramachandran_kl_36"] = ramachandran_kl(ref, mod, bins=36)  # type: ignore[arg-type]
        out["ramachandran_kl_36_floor"] = ramachandran_kl_floor(ref, n_samples, bins=36)  # type: ignore[arg-type]
        run_id = test.meta.get("run_id")
        if n_samples >= int(reference_halves(len(test), run_id).sum()):
            for b in (36, 100):
                kl, floor = ramachandran_kl_paired(ref, mod, run_id, bins=b)  # type: ignore[arg-type]
                out[f"ramachandran_kl_{b}_paired"], out[f"ramachandran_kl_{b}_paired_floor"] = (
                    kl,
                    floor,
                )
        out["phi_positive"] = float(np.mean(mod[0] > 0))
        out["phi_positive_reference"] = float(np.mean(ref[0] > 0))
    return out
