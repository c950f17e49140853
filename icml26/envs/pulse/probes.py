"""The evaluator's probes on frozen representations, in numpy/scipy.

* :func:`logistic_probe` -- multinomial logistic regression on standardized features with an
  L2 penalty (scikit-learn's objective ``0.5 ||W||^2 + C sum_i w_i loss_i``, intercept not
  penalized, balanced class weights), L-BFGS, at most 1000 iterations: the linear probe of the
  PULSE release (``StandardScaler`` + ``LogisticRegression(class_weight="balanced",
  max_iter=1000)``).
* :func:`ridge_r2` -- ridge regression of each factor on standardized features, the penalty
  chosen per factor by exact leave-one-out error (the SVD shortcut) over a log grid; returns
  R^2 on held-out rows. R^2 is 1 - SSE / SST with SST about the *test* mean, so it is 0 for
  a constant prediction at the test mean and negative when worse.
"""

from __future__ import annotations

import numpy as np

__all__ = ["standardize", "logistic_probe", "ridge_r2", "RIDGE_ALPHAS"]

RIDGE_ALPHAS = tuple(float(a) for a in np.logspace(-3, 4, 15))


def standardize(train: np.ndarray, *others: np.ndarray) -> tuple[np.ndarray, ...]:
    """Centre and scale by the training columns' mean and sd (constant columns left at 0)."""
    mu = train.mean(axis=0)
    sd = train.std(axis=0)
    sd = np.where(sd > 1e-12 * max(1.0, float(np.abs(mu).max(initial=0.0))), sd, 1.0)
    return tuple((x - mu) / sd for x in (train, *others))


def logistic_probe(
    z_train: np.ndarray,
    y_train: np.ndarray,
    z_test: np.ndarray,
    n_classes: int,
    C: float = 1.0,
    max_iter: int = 1000,
) -> np.ndarray:
    """Fit the probe on (z_train, y_train) and return predicted classes of z_test.

    Classes absent from ``y_train`` are never predicted (their logits are -inf).
    """
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    xtr, xte = standardize(np.asarray(z_train, np.float64), np.asarray(z_test, np.float64))
    y = np.asarray(y_train, dtype=np.int64)
    present = np.unique(y)
    k = present.size
    if k == 1:
        return np.full(xte.shape[0], present[0], dtype=np.int64)
    yi = np.searchsorted(present, y)
    counts = np.bincount(yi, minlength=k)
    w = (y.size / (k * counts))[yi]  # balanced class weights (scikit-learn's definition)
    n, d = xtr.shape
    onehot = np.eye(k)[yi]

    def f(theta: np.ndarray) -> tuple[float, np.ndarray]:
        W = theta[: d * k].reshape(d, k)
        b = theta[d * k :]
        logits = xtr @ W + b
        lse = logsumexp(logits, axis=1)
        loss = float(np.sum(w * (lse - np.sum(onehot * logits, axis=1))))
        p = np.exp(logits - lse[:, None])
        g = w[:, None] * (p - onehot)
        gW = xtr.T @ g * C + W
        gb = g.sum(axis=0) * C
        return C * loss + 0.5 * float(np.sum(W * W)), np.concatenate([gW.ravel(), gb])

    res = minimize(
        f, np.zeros(d * k + k), jac=True, method="L-BFGS-B", options={"maxiter": max_iter}
    )
    W = res.x[: d * k].reshape(d, k)
    b = res.x[d * k :]
    return present[np.argmax(xte @ W + b, axis=1)]


def ridge_r2(
    z_train: np.ndarray,
    y_train: np.ndarray,
    z_test: np.ndarray,
    y_test: np.ndarray,
    alphas: tuple[float, ...] = RIDGE_ALPHAS,
) -> np.ndarray:
    """Held-out R^2 of a ridge probe for every column of ``y`` ((n, m) -> (m,))."""
    xtr, xte = standardize(np.asarray(z_train, np.float64), np.asarray(z_test, np.float64))
    ytr = np.asarray(y_train, np.float64).reshape(len(xtr), -1)
    yte = np.asarray(y_test, np.float64).reshape(len(xte), -1)
    ym = ytr.mean(axis=0)
    U, s, Vt = np.linalg.svd(xtr, full_matrices=False)
    uty = U.T @ (ytr - ym)
    best = np.full(ytr.shape[1], np.inf)
    coef = np.zeros((xtr.shape[1], ytr.shape[1]))
    for a in alphas:
        shrink = s / (s**2 + a)
        beta = Vt.T @ (shrink[:, None] * uty)
        hat = (U**2) @ (s**2 / (s**2 + a)) + 1.0 / len(xtr)  # leverage, with the intercept
        resid = (ytr - ym) - xtr @ beta
        loo = np.mean((resid / (1.0 - hat)[:, None]) ** 2, axis=0)
        better = loo < best
        best = np.where(better, loo, best)
        coef[:, better] = beta[:, better]
    pred = xte @ coef + ym
    sse = np.sum((yte - pred) ** 2, axis=0)
    sst = np.sum((yte - yte.mean(axis=0)) ** 2, axis=0)
    return 1.0 - sse / np.where(sst > 0, sst, np.nan)
