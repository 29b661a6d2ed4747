"""The local Gaussian process shared by HOLLM's GP predictor and GP proposers.

One fit per ask: the proposer that fits a GP leaves it in the proposal context's cache, and
the predictor reuses it when it would train on the same points (fits dominate an ask's time).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits


def training_subset(X: np.ndarray, y: np.ndarray, focus: np.ndarray | None, cap: int) -> np.ndarray:
    """Indices of at most ``cap`` observations: the ``focus`` ones, then the best, then the newest.

    Parameters
    ----------
    X, y : ndarray
        Observations (unit cube) and values (lower is better).
    focus : ndarray of int, optional
        Indices to take first (the chosen regions' points); indices ``>= len(y)`` (pending or
        failed points the partition also holds) are skipped.
    cap : int
        Largest subset.

    Returns
    -------
    ndarray of int
    """
    n = X.shape[0]
    if n <= cap:
        return np.arange(n)
    chosen: list[int] = []
    seen: set[int] = set()
    for group in (focus if focus is not None else np.array([], dtype=int), np.argsort(y),
                  np.arange(n - 1, -1, -1)):
        for j in group:
            j = int(j)
            if j < n and j not in seen:
                seen.add(j)
                chosen.append(j)
                if len(chosen) >= cap:
                    return np.array(chosen)
    return np.array(chosen)


FIT_POINTS = 60
"""Rows used to fit the GP's hyperparameters (see :func:`fit_gp`)."""

MAX_ITER = 30
"""L-BFGS iterations of the marginal-likelihood fit. scikit-learn's default (15,000, usually
~60 used) made the fit 90% of an ask; 30 iterations change the hyperparameters little."""


def _lbfgs(obj_func: Any, initial_theta: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, float]:
    from scipy.optimize import minimize

    res = minimize(obj_func, initial_theta, method="L-BFGS-B", jac=True, bounds=bounds,
                   options={"maxiter": MAX_ITER})
    return res.x, float(res.fun)


def fit_gp(X: np.ndarray, y: np.ndarray, *, ard: bool, seed: int, fit_points: int = FIT_POINTS) -> Any:
    """A fitted scikit-learn GP: Matern-5/2 (one or ``d`` length scales) + noise, normalised y.

    The hyperparameters are fitted on the first ``fit_points`` rows (callers order rows by
    relevance), then the GP is conditioned on all rows with them: the marginal-likelihood fit
    is cubic in the rows and was nine tenths of an ask.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    d = X.shape[1]
    kernel = (ConstantKernel(1.0, (1e-3, 1e3)) * Matern(np.full(d, 0.5) if ard else 0.5, (1e-3, 1e2), nu=2.5)
              + WhiteKernel(1e-4, (1e-8, 1e-1)))
    gp = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=0, random_state=seed,
                                  optimizer=_lbfgs)
    # Small matrices: BLAS threads only add contention (5x slower fits on a busy machine).
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        gp.fit(X[:fit_points], y[:fit_points])
        if X.shape[0] > fit_points:
            gp = GaussianProcessRegressor(gp.kernel_, normalize_y=True, optimizer=None).fit(X, y)
    return gp


def cached_gp(cache: dict[str, Any], X: np.ndarray, y: np.ndarray, idx: np.ndarray, *, ard: bool,
              rng: np.random.Generator) -> Any:
    """The GP on ``X[idx], y[idx]``, fitted once per ``cache`` (one ask) and training set."""
    key = ("gp", ard, idx.tobytes(), X.shape[0])
    hit = cache.get("gp")
    if hit is not None and hit[0] == key:
        return hit[1]
    gp = fit_gp(X[idx], y[idx], ard=ard, seed=int(rng.integers(2**31 - 1)))
    cache["gp"] = (key, gp)
    return gp


def posterior_samples(gp: Any, U: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` joint posterior draws of the GP at the rows of ``U`` (shape ``(n, len(U))``)."""
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", RuntimeWarning)
        mean, cov = gp.predict(U, return_cov=True)
    cov = 0.5 * (cov + cov.T)
    jitter = 1e-10 * max(float(np.mean(np.diag(cov))), 1e-12)
    for _ in range(6):
        try:
            L = np.linalg.cholesky(cov + jitter * np.eye(len(U)))
            break
        except np.linalg.LinAlgError:
            jitter *= 100
    else:  # numerically singular: sample the marginals
        L = np.diag(np.sqrt(np.clip(np.diag(cov), 0, None)))
    return mean[None, :] + rng.standard_normal((n, len(U))) @ L.T
