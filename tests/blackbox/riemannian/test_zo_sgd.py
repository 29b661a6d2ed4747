"""Properties of the zeroth-order Riemannian estimator, its sampler and ZO-SGD (Ma & Huang)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from optiforge.blackbox.riemannian import (
    SPD,
    ConformalBarrier,
    Euclidean,
    Schedule,
    Simplex,
    Sphere,
    sample_direction,
    simplex_curvature,
    zo_sgd,
)

N = 20_000


def _estimates(manifold, f, x, mu, sampler, n=N, seed=0):
    """``n`` two-point estimates at ``x`` (ambient tangent vectors)."""
    rng = np.random.default_rng(seed)
    frame = manifold.frame(x)
    out = np.empty((n, manifold.size))
    for i in range(n):
        v = frame.ambient(sample_direction(frame, rng, sampler))
        out[i] = (f(manifold.retr(x, mu * v)) - f(manifold.retr(x, -mu * v))) / (2 * mu) * v
    return out, frame


def _assert_mean_is_grad_over_d(est, frame, grad, z=4.5):
    """Compare in tangent coordinates, coordinate by coordinate, within z standard errors."""
    c = frame.coords(est)
    target = frame.coords(grad) / frame.dim
    se = c.std(axis=0, ddof=1) / math.sqrt(len(c))
    assert np.all(np.abs(c.mean(axis=0) - target) < z * se + 1e-12), (c.mean(axis=0), target, se)


A = np.array([[4.0, 1.0, 0.0], [1.0, 2.0, 0.3], [0.0, 0.3, 0.25]])
B = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 3.0]])


def quad(x):
    return 0.5 * x @ B @ x + x[0]


def test_estimator_mean_is_riemannian_gradient_over_d_under_an_anisotropic_metric():
    m, x = Euclidean(3, A), np.array([0.3, -0.2, 0.5])
    est, frame = _estimates(m, quad, x, 1e-3, "alg1")
    grad = m.egrad2rgrad(x, B @ x + np.array([1.0, 0, 0]))  # A^{-1} grad_E f
    _assert_mean_is_grad_over_d(est, frame, grad)


def test_naive_rescaling_is_biased_and_the_test_sees_it():
    m, x = Euclidean(3, A), np.array([0.3, -0.2, 0.5])
    est, frame = _estimates(m, quad, x, 1e-3, "naive")
    grad = m.egrad2rgrad(x, B @ x + np.array([1.0, 0, 0]))
    with pytest.raises(AssertionError):
        _assert_mean_is_grad_over_d(est, frame, grad)


def test_estimator_mean_on_the_simplex_with_the_barrier_metric_and_on_the_sphere():
    q = np.array([0.1, 0.2, 0.3, 0.4])
    m, x = Simplex(4, barrier=ConformalBarrier(0.05)), np.array([0.05, 0.15, 0.3, 0.5])

    def kl(p):
        return float(np.sum(p * np.log(p / q)))

    est, frame = _estimates(m, kl, x, 1e-4, "alg1", n=12_000)
    grad = m.egrad2rgrad(x, np.log(x / q) + 1.0)  # grad_g' = grad_E (tangent part) / h
    _assert_mean_is_grad_over_d(est, frame, grad)

    s, y = Sphere(3), np.array([0.6, 0.0, 0.8])
    est, frame = _estimates(s, lambda u: u @ B @ u, y, 1e-4, "alg1", n=12_000)
    _assert_mean_is_grad_over_d(est, frame, s.proju(y, 2 * B @ y))


def test_rejection_normaliser_sqrt_lambda_max_gives_uniform_arc_length_on_an_ellipse():
    """Alg. 1 with acceptance sqrt(v^T A^2 v / lambda_max): uniform for the ellipse's length."""
    a, b = 3.0, 1.5  # semi-axes (both metric eigenvalues < 1, where a lambda_max bound is biased)
    m = Euclidean(2, np.diag([1 / a**2, 1 / b**2]))
    frame, rng = m.frame(np.zeros(2)), np.random.default_rng(1)
    v = np.array([frame.ambient(sample_direction(frame, rng, "alg1-rejection")) for _ in range(N)])
    assert np.allclose((v / [a, b]) ** 2 @ np.ones(2), 1.0)
    theta = np.linspace(0, 2 * np.pi, 20_001)
    arc = np.concatenate([[0], np.cumsum(np.hypot(np.diff(a * np.cos(theta)), np.diff(b * np.sin(theta))))])
    u = np.interp(np.mod(np.arctan2(v[:, 1] / b, v[:, 0] / a), 2 * np.pi), theta, arc / arc[-1])
    ks = np.max(np.abs(np.sort(u) - (np.arange(1, N + 1) - 0.5) / N))
    assert ks < 1.63 / math.sqrt(N) + 1e-3  # Kolmogorov-Smirnov at the 1% level


@pytest.mark.parametrize("manifold", [Simplex(5, barrier=ConformalBarrier(0.01)), Sphere(4), SPD(3),
                                      Simplex(3, m=4, barrier=ConformalBarrier(0.001))])
def test_every_iterate_stays_on_its_manifold_even_with_huge_steps(manifold):
    rng = np.random.default_rng(0)
    target = manifold.random(rng)
    wiggle, eta = 5.0, 50.0
    if isinstance(manifold, SPD):
        # SPD is complete (no boundary to cross); there a huge step only overflows floats, as the
        # affine-invariant gradient S grad_E S grows with S: test it with moderate steps.
        wiggle, eta = 0.0, 0.05

    def f(x):
        return float(np.sum((x - target) ** 2) + wiggle * np.sin(7 * x).sum())

    x0 = manifold.random(np.random.default_rng(1))
    if isinstance(manifold, Simplex):  # start next to the boundary
        x0 = manifold.projx(x0 - 0.3) * 0.98 + 0.02 / manifold.k
    res = zo_sgd(f, manifold, x0, steps=300, eta=eta, mu=0.01, schedule="constant", seed=2)
    assert res.valid.all()


def test_the_inherited_euclidean_metric_leaves_the_simplex():
    """Without the structure-preserving metric the same run leaves the open simplex."""
    m = Simplex(5)
    res = zo_sgd(lambda p: float(np.sum(p**2) + 5 * np.sin(7 * p).sum()), m,
                 np.array([0.02, 0.02, 0.02, 0.02, 0.92]), steps=300, eta=50.0, mu=0.01,
                 schedule="constant", seed=2)
    assert not res.valid.all()


def test_zo_sgd_finds_the_smallest_eigenvector_and_bad_input_names_the_argument():
    res = zo_sgd(lambda u: u @ np.diag([3.0, 2.0, 1.0]) @ u, Sphere(3), steps=400, eta=1.0, mu=0.01,
                 schedule="constant", seed=0)
    assert res.best_value < 1.01
    with pytest.raises(ValueError, match=r"x0: not a point"):
        zo_sgd(lambda u: 0.0, Sphere(3), np.array([1.0, 1.0, 0.0]))
    with pytest.raises(ValueError, match=r"sampler"):
        zo_sgd(lambda u: 0.0, Sphere(3), sampler="uniform")
    with pytest.raises(TypeError, match=r"steps"):
        zo_sgd(lambda u: 0.0, Sphere(3), steps=1.5)


def test_theorem_schedule_and_mu_cap():
    s = Schedule(2.0, 1.0, "theorem", horizon=400, dim=4, radius=0.1)
    eta, mu = s.at(0)
    assert eta == pytest.approx(2.0 * math.sqrt(4 / 400)) and mu == pytest.approx(0.1 / 16)
    assert Schedule(1.0, 1.0, "constant", radius=0.1).at(5)[1] == 0.05  # capped at rho / 2


def test_conformal_exp_matches_the_line_for_small_steps_and_stays_inside():
    m = Simplex(3, barrier=ConformalBarrier(0.01), retraction="exp")
    x, u = np.array([0.2, 0.3, 0.5]), np.array([1e-4, -2e-4, 1e-4])
    assert np.allclose(m.retr(x, u), x + u, atol=1e-10)
    y = m.retr(x, np.array([3.0, 0.0, -3.0]))  # far beyond the line's reach
    assert m.belongs(y)
    assert abs(simplex_curvature(ConformalBarrier(0.01), x)) > 0


def test_geoopt_manifolds_plug_in():
    geoopt = pytest.importorskip("geoopt")
    from optiforge.blackbox.riemannian import GeooptManifold

    m = GeooptManifold(geoopt.Sphere(), (3,))
    assert m.dim == 2
    res = zo_sgd(lambda u: u @ np.diag([3.0, 2.0, 1.0]) @ u, m, steps=300, eta=1.0, mu=0.01,
                 schedule="constant", seed=0)
    assert res.best_value < 1.02 and res.valid.all()
