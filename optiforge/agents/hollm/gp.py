"""The local Gaussian process shared by HOLLM's GP predictor and GP proposers.

A Matern-5/2 GP (one length scale, or one per dimension) with a constant amplitude, a white
noise term and normalised targets [1]_ (the model scikit-learn's ``GaussianProcessRegressor``
builds from ``ConstantKernel * Matern(nu=2.5) + WhiteKernel`` with ``normalize_y=True``),
written in numpy so that an ask pays for linear algebra, not for kernel objects.

One fit per ask: the proposer that builds the GP leaves it in the proposal context's cache, and
the predictor reuses it when it would train on the same points. Per ask:

* the **hyperparameters** (amplitude, length scale(s), noise) maximise the log marginal
  likelihood [1]_ (Eq. 5.8, gradient Eq. 5.9) with L-BFGS-B from a fixed start, on the first
  :data:`FIT_POINTS` rows of the ask's training subset (the chosen regions' points first);
* the **posterior** is conditioned on the whole training subset (at most 150 points) with
  those hyperparameters.

Refitting the hyperparameters only every 10% growth of the observations, on a fixed subset,
was tried and lost quality on BBOB f15–f24 (docs/benchmarks/hollm.md, "Speed"): the
hyperparameters fitted on the chosen regions' points matter, so they are refitted every ask.

References
----------
.. [1] C. E. Rasmussen, C. K. I. Williams, "Gaussian Processes for Machine Learning",
   MIT Press (2006), Ch. 2 (Alg. 2.1) and Ch. 5.4.1.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import cho_solve, cholesky, solve_triangular
from scipy.spatial.distance import cdist
from threadpoolctl import ThreadpoolController


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
    focus = np.asarray(focus if focus is not None else [], dtype=int)
    order = np.concatenate([focus[focus < n], np.argsort(y), np.arange(n - 1, -1, -1)])
    _, first = np.unique(order, return_index=True)  # keep each index's first occurrence
    return order[np.sort(first)][:cap]


FIT_POINTS = 60
"""Rows used to fit the GP's hyperparameters (see :func:`fit_hyperparameters`)."""

MAX_ITER = 30
"""L-BFGS iterations of the marginal-likelihood fit (scikit-learn's default, 15,000, usually
ran ~60; 30 change the hyperparameters little)."""

JITTER = 1e-10
"""Added to the training covariance's diagonal (scikit-learn's default ``alpha``)."""

LOG_BOUNDS = {"amplitude": (1e-3, 1e3), "length_scale": (1e-3, 1e2), "noise": (1e-8, 1e-1)}
"""Box of each hyperparameter (the L-BFGS-B search is over their logarithms)."""

INITIAL = {"amplitude": 1.0, "length_scale": 0.5, "noise": 1e-4}
"""Start of every hyperparameter fit."""

SQRT5 = math.sqrt(5.0)

_THREADPOOLS: ThreadpoolController | None = None


def single_threaded() -> Any:
    """Context limiting BLAS to one thread: the matrices are small, and extra threads only add
    contention (5x slower fits on a busy machine). The controller is built once, because
    ``threadpool_limits()`` rescans the loaded libraries on every call (about 2 ms)."""
    global _THREADPOOLS
    if _THREADPOOLS is None:
        _THREADPOOLS = ThreadpoolController()
    return _THREADPOOLS.limit(limits=1, user_api="blas")


def _scaled_distances(A: np.ndarray, B: np.ndarray, length_scale: np.ndarray) -> np.ndarray:
    return cdist(A / length_scale, B / length_scale)


def _matern52(r: np.ndarray) -> np.ndarray:
    """Matern-5/2 correlation of scaled distances ``r`` ([1]_ Eq. 4.17)."""
    s = SQRT5 * r
    out = np.exp(-s)
    poly = s * s  # (1 + s + s^2 / 3) in place: these arrays are the bulk of an ask's arithmetic
    poly *= 1.0 / 3.0
    poly += s
    poly += 1.0
    out *= poly
    return out


def _unpack(theta: np.ndarray, d: int, ard: bool) -> tuple[float, np.ndarray, float]:
    """``(amplitude, length scales (d,), noise)`` from log-parameters ``theta``."""
    e = np.exp(theta)
    ls = e[1 : 1 + d] if ard else np.full(d, e[1])
    return float(e[0]), ls, float(e[-1])


def _normalise(y: np.ndarray) -> tuple[np.ndarray, float, float]:
    mean = float(np.mean(y))
    std = float(np.std(y))
    if std < 10 * np.finfo(float).eps:  # constant targets: scale 1, as scikit-learn does
        std = 1.0
    return (y - mean) / std, mean, std


def log_marginal_likelihood(
    theta: np.ndarray, X: np.ndarray, y: np.ndarray, *, ard: bool
) -> tuple[float, np.ndarray]:
    """Log marginal likelihood of normalised ``y`` and its gradient in ``theta`` ([1]_ 5.8–5.9).

    Parameters
    ----------
    theta : ndarray
        Log hyperparameters ``[amplitude, length scale(s), noise]`` (``d`` length scales if
        ``ard``, else one).
    X, y : ndarray
        Training rows and raw targets (normalised here to zero mean, unit variance).
    ard : bool
        One length scale per dimension.

    Returns
    -------
    (float, ndarray)
        ``-inf`` and a zero gradient when the covariance is not positive definite.
    """
    return _lml(theta, X, _normalise(y)[0], np.eye(X.shape[0]), ard)


def _lml(
    theta: np.ndarray, X: np.ndarray, yn: np.ndarray, eye: np.ndarray, ard: bool
) -> tuple[float, np.ndarray]:
    """:func:`log_marginal_likelihood` on normalised ``yn`` (the fit computes it, and the
    identity, once rather than once per evaluation)."""
    n, d = X.shape
    amp, ls, noise = _unpack(theta, d, ard)
    r = _scaled_distances(X, X, ls)
    s = SQRT5 * r
    expo = np.exp(-s)
    corr = (1.0 + s + s * s / 3.0) * expo
    K = amp * corr
    K.flat[:: n + 1] += noise + JITTER
    try:
        L = cholesky(K, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return -np.inf, np.zeros_like(theta)
    alpha = cho_solve((L, True), yn, check_finite=False)
    lml = -0.5 * yn @ alpha - np.log(np.diag(L)).sum() - 0.5 * n * math.log(2 * math.pi)
    inner = np.outer(alpha, alpha) - cho_solve((L, True), eye, check_finite=False)
    # d corr / d log(l) = (5/3) (1 + sqrt5 r) exp(-sqrt5 r) * (scaled squared distance).
    radial = amp * (5.0 / 3.0) * (1.0 + s) * expo
    grads = [0.5 * np.sum(inner * (amp * corr))]
    if ard:
        for j in range(d):
            diff = (X[:, j, None] - X[None, :, j]) / ls[j]
            grads.append(0.5 * np.sum(inner * radial * diff * diff))
    else:
        grads.append(0.5 * np.sum(inner * radial * r * r))
    grads.append(0.5 * noise * np.trace(inner))
    return float(lml), np.array(grads)


def fit_hyperparameters(X: np.ndarray, y: np.ndarray, *, ard: bool) -> np.ndarray:
    """Log hyperparameters maximising :func:`log_marginal_likelihood` (L-BFGS-B, fixed start).

    The search runs at most :data:`MAX_ITER` iterations inside :data:`LOG_BOUNDS` from
    :data:`INITIAL`, like scikit-learn's single-start fit of the same kernel.
    """
    from scipy.optimize import minimize

    d = X.shape[1]
    n_ls = d if ard else 1
    start = np.log([INITIAL["amplitude"], *[INITIAL["length_scale"]] * n_ls, INITIAL["noise"]])
    bounds = np.log(
        [LOG_BOUNDS["amplitude"], *[LOG_BOUNDS["length_scale"]] * n_ls, LOG_BOUNDS["noise"]]
    )

    yn, eye = _normalise(y)[0], np.eye(X.shape[0])

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        lml, grad = _lml(theta, X, yn, eye, ard)
        return -lml, -grad

    with warnings.catch_warnings(), single_threaded():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = minimize(
            objective,
            start,
            method="L-BFGS-B",
            jac=True,
            bounds=bounds,
            options={"maxiter": MAX_ITER},
        )
    return np.asarray(res.x, dtype=float)


@dataclass
class LocalGP:
    """The GP posterior on ``X, y`` with fixed log hyperparameters ``theta`` ([1]_ Alg. 2.1).

    Attributes
    ----------
    X, y : ndarray
        Training rows (unit cube) and raw values.
    theta : ndarray
        Log hyperparameters (see :func:`log_marginal_likelihood`).
    ard : bool
        Whether ``theta`` holds one length scale per dimension.
    """

    X: np.ndarray
    y: np.ndarray
    theta: np.ndarray
    ard: bool = False

    def __post_init__(self) -> None:
        n, d = self.X.shape
        self.amplitude, self.length_scale, self.noise = _unpack(self.theta, d, self.ard)
        yn, self.y_mean, self.y_std = _normalise(self.y)
        K = self.amplitude * _matern52(_scaled_distances(self.X, self.X, self.length_scale))
        K.flat[:: n + 1] += self.noise + JITTER
        self._L = cholesky(K, lower=True, check_finite=False)
        self._alpha = cho_solve((self._L, True), yn, check_finite=False)

    def _cross(self, U: np.ndarray) -> np.ndarray:
        return self.amplitude * _matern52(_scaled_distances(U, self.X, self.length_scale))

    def predict(self, U: np.ndarray) -> np.ndarray:
        """Posterior mean at the rows of ``U`` (on the values' scale)."""
        return self.y_std * (self._cross(U) @ self._alpha) + self.y_mean

    def predict_cov(self, U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and joint covariance at the rows of ``U`` (noise on the diagonal).

        As scikit-learn's ``predict(return_cov=True)``: the covariance is that of new noisy
        observations, ``k(U, U) + noise I - k(U, X) (K + noise I)^-1 k(X, U)``, rescaled.
        """
        return self.predict_cov_blocks([U])[0]

    def predict_cov_blocks(self, blocks: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`predict_cov` of each block (joint within a block, not across blocks).

        One cross-covariance and one triangular solve serve all blocks (one call per block
        costs the same arithmetic plus a per-call overhead that dominated at these sizes).
        """
        U = np.vstack(blocks)
        Ks = self._cross(U)
        mean = self.y_std * (Ks @ self._alpha) + self.y_mean
        V = solve_triangular(self._L, Ks.T, lower=True, check_finite=False)
        out = []
        start = 0
        for B in blocks:
            Vb = V[:, start : start + len(B)]
            cov = self.amplitude * _matern52(_scaled_distances(B, B, self.length_scale)) - Vb.T @ Vb
            cov.flat[:: len(B) + 1] += self.noise
            out.append((mean[start : start + len(B)], cov * self.y_std**2))
            start += len(B)
        return out


def cached_gp(
    cache: dict[str, Any], X: np.ndarray, y: np.ndarray, idx: np.ndarray, *, ard: bool
) -> LocalGP:
    """The GP on ``X[idx], y[idx]``, fitted once per ``cache`` (one ask) and training set.

    The hyperparameters are fitted on ``idx[:FIT_POINTS]`` (callers order ``idx`` by relevance),
    then the posterior is conditioned on all of ``idx``.
    """
    key = ("gp", ard, idx.tobytes(), X.shape[0])
    hit = cache.get("gp")
    if hit is not None and hit[0] == key:
        return hit[1]
    fit = idx[:FIT_POINTS]
    theta = fit_hyperparameters(X[fit], y[fit], ard=ard)
    with single_threaded():
        gp = LocalGP(X[idx], y[idx], theta, ard)
    cache["gp"] = (key, gp)
    return gp


def posterior_samples(gp: LocalGP, U: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` joint posterior draws of the GP at the rows of ``U`` (shape ``(n, len(U))``)."""
    return posterior_samples_blocks(gp, [U], n, rng)[0]


def posterior_samples_blocks(
    gp: LocalGP, blocks: list[np.ndarray], n: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """:func:`posterior_samples` for each block (independent draws per block, one solve)."""
    out = []
    with warnings.catch_warnings(), single_threaded():
        warnings.simplefilter("ignore", RuntimeWarning)
        for mean, cov in gp.predict_cov_blocks(blocks):
            cov = 0.5 * (cov + cov.T)
            m = len(mean)
            jitter = 1e-10 * max(float(np.mean(np.diag(cov))), 1e-12)
            for _ in range(6):
                try:
                    jittered = cov.copy()
                    jittered.flat[:: m + 1] += jitter
                    L = np.linalg.cholesky(jittered)
                    break
                except np.linalg.LinAlgError:
                    jitter *= 100
            else:  # numerically singular: sample the marginals
                L = np.diag(np.sqrt(np.clip(np.diag(cov), 0, None)))
            out.append(mean[None, :] + rng.standard_normal((n, m)) @ L.T)
    return out
