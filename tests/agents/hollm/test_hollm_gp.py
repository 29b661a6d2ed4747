"""The numpy GP of HOLLM's GP proposer and predictor, checked against scikit-learn's."""

import json

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

import optiforge.agents.hollm.gp as gp_module
from optiforge.agents.hollm import HOLLMAgent
from optiforge.agents.hollm.gp import (
    LocalGP,
    cached_gp,
    fit_hyperparameters,
    log_marginal_likelihood,
    posterior_samples,
)


def _data(n=40, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    return X, np.sin(5 * X).sum(axis=1) + 3 * X[:, 0] ** 2


def _sklearn_kernel(d, ard):
    return ConstantKernel(1.0, (1e-3, 1e3)) * Matern(
        np.full(d, 0.5) if ard else 0.5, (1e-3, 1e2), nu=2.5
    ) + WhiteKernel(1e-4, (1e-8, 1e-1))


def _theta(ard):
    return np.log([2.0, *([0.3, 0.7, 0.5, 1.1] if ard else [0.4]), 1e-3])


@pytest.mark.parametrize("ard", [False, True])
def test_log_marginal_likelihood_and_gradient_match_scikit_learn(ard):
    X, y = _data()
    ref = GaussianProcessRegressor(_sklearn_kernel(4, ard), normalize_y=True, optimizer=None).fit(
        X, y
    )
    want, want_grad = ref.log_marginal_likelihood(_theta(ard), eval_gradient=True)
    got, got_grad = log_marginal_likelihood(_theta(ard), X, y, ard=ard)
    assert got == pytest.approx(want, abs=1e-8)
    assert np.allclose(got_grad, want_grad, atol=1e-8, rtol=0)


@pytest.mark.parametrize("ard", [False, True])
def test_posterior_matches_scikit_learn_on_the_same_kernel(ard):
    X, y = _data()
    U = np.random.default_rng(1).random((30, 4))
    kernel = _sklearn_kernel(4, ard).clone_with_theta(_theta(ard))
    ref = GaussianProcessRegressor(kernel, normalize_y=True, optimizer=None).fit(X, y)
    want_mean, want_cov = ref.predict(U, return_cov=True)
    gp = LocalGP(X, y, _theta(ard), ard)
    mean, cov = gp.predict_cov(U)
    assert np.allclose(mean, want_mean, atol=1e-8, rtol=0)
    assert np.allclose(cov, want_cov, atol=1e-8, rtol=0)
    assert np.allclose(gp.predict(U), want_mean, atol=1e-8, rtol=0)
    # Blocks share one solve; each block's result is that of its own call.
    for (m, c), B in zip(gp.predict_cov_blocks([U[:10], U[10:]]), (U[:10], U[10:]), strict=True):
        m_ref, c_ref = gp.predict_cov(B)
        assert np.allclose(m, m_ref, atol=1e-12) and np.allclose(c, c_ref, atol=1e-12)


@pytest.mark.parametrize("ard", [False, True])
def test_hyperparameter_fit_matches_scikit_learns_single_start_fit(ard):
    def lbfgs(obj, theta0, bounds):
        res = minimize(
            obj,
            theta0,
            method="L-BFGS-B",
            jac=True,
            bounds=bounds,
            options={"maxiter": gp_module.MAX_ITER},
        )
        return res.x, res.fun

    X, y = _data()
    ref = GaussianProcessRegressor(_sklearn_kernel(4, ard), normalize_y=True, optimizer=lbfgs).fit(
        X, y
    )
    assert np.allclose(fit_hyperparameters(X, y, ard=ard), ref.kernel_.theta, atol=1e-5)


def test_hyperparameters_come_from_the_first_rows_of_the_training_subset():
    # Callers order the subset by relevance (the chosen regions' points first): the fit uses
    # the first FIT_POINTS rows, the posterior all of them.
    X, y = _data(n=200, d=3)
    idx = np.random.default_rng(3).permutation(200)[:150]
    gp = cached_gp({}, X, y, idx, ard=False)
    fit = idx[: gp_module.FIT_POINTS]
    assert np.array_equal(gp.theta, fit_hyperparameters(X[fit], y[fit], ard=False))
    assert np.array_equal(gp.X, X[idx]) and np.array_equal(gp.y, y[idx])


def test_a_rebuilt_agent_reproduces_the_next_ask():
    space = {f"x{i}": {"type": "float", "low": -1, "high": 1} for i in range(3)}

    def f(p):
        return sum((v - 0.2) ** 2 for v in p.values())

    a = HOLLMAgent(space, {"budget": 40}, seed=1)
    while a.n_total < 23:
        for p in a.ask(1 if a.n_total >= 20 else 4):
            a.tell(p, f(p))
    b = HOLLMAgent(space, {"budget": 40}, seed=0)
    b.load_state_dict(json.loads(json.dumps(a.state_dict())))
    assert b.ask(4) == a.ask(4)


def test_thompson_samples_follow_the_posterior():
    X, y = _data(n=30, d=2)
    gp = LocalGP(X, y, np.log([1.0, 0.3, 1e-4]))
    U = np.random.default_rng(3).random((5, 2))
    draws = posterior_samples(gp, U, 4000, np.random.default_rng(4))
    mean, cov = gp.predict_cov(U)
    assert np.allclose(draws.mean(axis=0), mean, atol=4 * np.sqrt(np.diag(cov).max() / 4000) + 1e-9)
    assert np.allclose(np.cov(draws.T), cov, atol=0.1 * np.abs(cov).max())


def test_cached_gp_is_built_once_per_ask_and_training_set():
    X, y = _data(n=50, d=3)
    cache: dict = {}
    idx = np.arange(40)
    first = cached_gp(cache, X, y, idx, ard=False)
    assert cached_gp(cache, X, y, idx, ard=False) is first
    assert cached_gp(cache, X, y, np.arange(45), ard=False) is not first
