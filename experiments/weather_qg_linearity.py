"""Off-task probe: does nonlinearity matter on a QG configuration? (issue 22, nonlinearity check)

    python experiments/weather.py qg-linearity --qg '{"beta": 1e-11, "rek": 1.157e-5}' --seed 0

Generates 2000-2003 of the two-layer QG source with the given model settings (seeded, after the
150-day spin-up), trains on 2000-2002 and scores z250 RMSE (m^2/s^2) on initializations every 5
days of the held-out 2003, with 95% percentile bootstrap intervals over initializations and
paired RMSE ratios against the direct per-lead linear model. Everything works on the leading
256 EOFs of the normalized z250/z750 anomaly (the rest is forecast as climatology):

- ``linear-direct``: per lead, ridge regression of the PCs on the last two states' leading PCs
  (PC count and penalty chosen on the last 20% of the training years);
- ``quadratic-direct``: the same plus products of the newest state's leading 24 PCs;
- ``iter-quadratic``: a one-step (6 h) quadratic regression of the PC tendency (the QG Jacobian
  is quadratic), iterated, penalties chosen on the validation 3-day error;
- ``analogue``: mean of the 8 nearest training states in the leading-16-PC space.

Not a result on any registered task; the lead writes the printed table into the page's caveats.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

LEADS_D = (1, 2, 3, 5, 7, 10)
LEADS = tuple(4 * d for d in LEADS_D)
H = 2  # context states
K = 256  # EOFs kept
OUT = Path(__file__).resolve().parents[1] / "results" / "weather" / "qg_linearity"


def _generate(source: str, settings: dict[str, Any], seed: int) -> np.ndarray:
    """2000-2003 of a generated source (``qg``, ``barotropic`` or ``lorenz96``) through the
    family's data cache (a registered task's data, e.g. the headline setting, is read, not
    regenerated): its first variable as (time, level, lat, lon)."""
    from icml26.envs.weather.sources import open_source

    if source not in ("qg", "barotropic", "lorenz96"):
        raise ValueError(f"qg-linearity: source must be qg, barotropic or lorenz96, got {source!r}")
    kw = {**settings, "seed": seed}
    ds = open_source(source, "2000-01-01", "2003-12-31T18", progress=False, **kw)
    var = "geopotential" if "geopotential" in ds else next(iter(ds.data_vars))
    z = ds[var].values.astype(np.float64)
    return z if z.ndim == 4 else z[:, None]


class Probe:
    """The held-out-year comparison on one generated run (QG by default)."""

    def __init__(self, qg: dict[str, Any], seed: int, source: str = "qg") -> None:
        z = _generate(source, qg, seed)
        n_t = z.shape[0]
        ntr = 4 * (365 + 366 + 365)  # 6-hourly states of 2000-2002: the training years
        self.mu = z[:ntr].mean(0)
        self.sc = np.sqrt(((z[:ntr] - self.mu) ** 2).mean(axis=(0, 2, 3)))
        x = ((z - self.mu) / self.sc[None, :, None, None]).reshape(n_t, -1)
        _, s, vt = np.linalg.svd(x[:ntr], full_matrices=False)
        self.eofs, self.pstd = vt[:K], s[:K] / np.sqrt(ntr)
        self.p = (x @ self.eofs.T) / self.pstd  # whitened PCs
        top = max(LEADS)
        self.ends = np.arange(H, ntr - top)
        n_va = int(0.2 * self.ends.size)
        self.tr, self.va = self.ends[: -n_va - top], self.ends[-n_va:]
        self.inits = np.arange(ntr + H, n_t - top, 20)
        self.z = z

    # ------------------------------------------------------------------ helpers
    def z250(self, pcs: np.ndarray) -> np.ndarray:
        """Unwhitened PCs (B, r <= K) -> the first level's anomaly (B, ny * nx) (z250 for QG,
        in m^2/s^2)."""
        f = (pcs @ self.eofs[: pcs.shape[1]]).reshape(len(pcs), self.z.shape[1], -1)
        return f[:, 0] * self.sc[0]

    def truth(self, lead: int) -> np.ndarray:
        return (self.z[self.inits + lead, 0] - self.mu[0]).reshape(len(self.inits), -1)

    def feats(self, ends: np.ndarray, r: int, q: int = 0) -> np.ndarray:
        f = [self.p[ends - j, :r] for j in range(H)]
        if q:
            f.append(_quad(self.p[ends, :q]))
        f.append(np.ones((ends.size, 1)))
        return np.concatenate(f, 1)

    # ------------------------------------------------------------------ forecasters
    def direct(self, lead: int, q: int) -> np.ndarray:
        best: tuple[float, tuple[int, float, float]] = (np.inf, (8, 1e-3, 0.0))
        y_tr, y_va = self.p[self.tr + lead] * self.pstd, self.p[self.va + lead] * self.pstd
        for r in (8, 16, 32, 64, 128):
            x_tr, x_va = self.feats(self.tr, r, q), self.feats(self.va, r, q)
            for a in (1e-4, 1e-3, 1e-2, 1e-1):
                for aq in (1e-2, 1e-1, 1.0, 10.0) if q else (0.0,):
                    w = _ridge(x_tr, y_tr, a, aq, H * r)
                    m = float(((x_va @ w - y_va) ** 2).sum(1).mean())
                    if m < best[0]:
                        best = (m, (r, a, aq))
        r, a, aq = best[1]
        w = _ridge(self.feats(self.ends, r, q), self.p[self.ends + lead] * self.pstd, a, aq, H * r)
        return self.z250(self.feats(self.inits, r, q) @ w)

    def analogue(self, lead: int, r: int = 16, k: int = 8) -> np.ndarray:
        lib = np.concatenate([self.p[self.ends - j, :r] for j in range(H)], 1)
        qry = np.concatenate([self.p[self.inits - j, :r] for j in range(H)], 1)
        nn = np.argsort(((qry[:, None] - lib[None]) ** 2).sum(-1), 1)[:, :k]
        return self.z250((self.p[self.ends[nn] + lead] * self.pstd).mean(1))

    def iterated_quadratic(self, r: int = 48, q: int = 32) -> dict[int, np.ndarray]:
        def design(e: np.ndarray) -> np.ndarray:
            p, pp = self.p[e, :r], self.p[e - 1, :r]
            return np.concatenate([p, pp, _quad(p[:, :q]), np.ones((len(e), 1))], 1)

        best: tuple[float, float, float] = (np.inf, 1e-3, 1e-1)
        sub = self.va[::8]
        for a in (1e-5, 1e-4, 1e-3, 1e-2):
            for aq in (1e-4, 1e-3, 1e-2, 1e-1):
                w = _ridge(
                    design(self.tr), self.p[self.tr + 1, :r] - self.p[self.tr, :r], a, aq, 2 * r
                )
                out = _roll(self.p[sub, :r], self.p[sub - 1, :r], w, q, (12,))
                m = float(((out[12] - self.p[sub + 12, :r]) ** 2).sum(1).mean())
                if np.isfinite(m) and m < best[0]:
                    best = (m, a, aq)
        e = self.ends
        w = _ridge(design(e), self.p[e + 1, :r] - self.p[e, :r], best[1], best[2], 2 * r)
        out = _roll(self.p[self.inits, :r], self.p[self.inits - 1, :r], w, q, LEADS)
        return {lead: self.z250(out[lead] * self.pstd[:r]) for lead in LEADS}

    def run(self) -> dict[int, dict[str, np.ndarray]]:
        """Per lead (days), per forecaster: squared error per initialization (grid mean)."""
        itq = self.iterated_quadratic()
        res: dict[int, dict[str, np.ndarray]] = {}
        for lead, d in zip(LEADS, LEADS_D, strict=True):
            t = self.truth(lead)
            fc = {
                "persistence": (self.z[self.inits, 0] - self.mu[0]).reshape(len(self.inits), -1),
                "climatology": np.zeros_like(t),
                "linear-direct": self.direct(lead, 0),
                "quadratic-direct": self.direct(lead, 24),
                "iter-quadratic": itq[lead],
                "analogue": self.analogue(lead),
            }
            res[d] = {n: ((f - t) ** 2).mean(1) for n, f in fc.items()}
        return res


def _quad(a: np.ndarray) -> np.ndarray:
    iu = np.triu_indices(a.shape[1])
    return (a[:, :, None] * a[:, None, :])[:, iu[0], iu[1]] / np.sqrt(2.0)


def _ridge(x: np.ndarray, y: np.ndarray, a: float, aq: float, n_lin: int) -> np.ndarray:
    """Ridge with penalty ``a`` on the first ``n_lin`` columns, ``aq`` on the rest, no penalty on
    the last (bias) column."""
    pen = np.full(x.shape[1], a)
    pen[n_lin:-1] = aq
    pen[-1] = 0.0
    return np.linalg.solve(x.T @ x + np.diag(pen * x.shape[0]), x.T @ y)


def _roll(
    p: np.ndarray, pp: np.ndarray, w: np.ndarray, q: int, keep: tuple[int, ...]
) -> dict[int, np.ndarray]:
    out = {}
    for s in range(1, max(keep) + 1):
        x = np.concatenate([p, pp, _quad(p[:, :q]), np.ones((len(p), 1))], 1)
        pp, p = p, np.clip(p + x @ w, -8.0, 8.0)
        if s in keep:
            out[s] = p.copy()
    return out


def table(res: dict[int, dict[str, np.ndarray]], n_boot: int = 2000) -> list[str]:
    """Markdown: RMSE with 95% bootstrap intervals over initializations, then paired ratios."""
    n = len(next(iter(res[LEADS_D[0]].values())))
    idx = np.random.default_rng(0).integers(0, n, (n_boot, n))
    names = list(res[LEADS_D[0]])
    w = ["| forecaster | " + " | ".join(f"{d} d" for d in LEADS_D) + " |"]
    w.append("|---|" + "---|" * len(LEADS_D))
    for nm in names:
        cells = []
        for d in LEADS_D:
            e = res[d][nm]
            lo, hi = np.percentile(np.sqrt(e[idx].mean(1)), [2.5, 97.5])
            cells.append(f"{np.sqrt(e.mean()):.4g} [{lo:.4g}, {hi:.4g}]")
        w.append(f"| {nm} | " + " | ".join(cells) + " |")
    w += ["", "RMSE ratio to linear-direct (paired, same initializations; < 1: better):", ""]
    w.append("| forecaster | " + " | ".join(f"{d} d" for d in LEADS_D) + " |")
    w.append("|---|" + "---|" * len(LEADS_D))
    for nm in names[3:]:
        cells = []
        for d in LEADS_D:
            a, b = res[d]["linear-direct"], res[d][nm]
            lo, hi = np.percentile(np.sqrt(b[idx].mean(1) / a[idx].mean(1)), [2.5, 97.5])
            cells.append(f"{np.sqrt(b.mean() / a.mean()):.3f} [{lo:.3f}, {hi:.3f}]")
        w.append(f"| {nm} | " + " | ".join(cells) + " |")
    return w


def cmd_qg_linearity(qg: dict[str, Any], seed: int, source: str = "qg") -> None:
    out = OUT / f"{_key(qg, seed, source)}.md"
    if out.exists():
        print(f"{out} exists (delete it to re-probe)")
        return
    pr = Probe(qg, seed, source)
    res = pr.run()
    name = "QG settings" if source == "qg" else f"{source} settings"
    unit = "z250 RMSE" if source == "qg" else "first-channel RMSE"
    lines = [
        f"{name} {json.dumps(qg, sort_keys=True) or '{}'}, seed {seed}: {unit}, "
        f"{len(pr.inits)} initializations every 5 days of held-out 2003, 95% bootstrap "
        "intervals over initializations.",
        "",
        *table(res),
    ]
    print("\n".join(lines), flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")


def _key(qg: dict[str, Any], seed: int, source: str) -> str:
    """The result file's name (QG keeps the old names: [settings, seed])."""
    what: list[Any] = [qg, seed] if source == "qg" else [source, qg, seed]
    return hashlib.sha1(json.dumps(what, sort_keys=True).encode()).hexdigest()[:10]
