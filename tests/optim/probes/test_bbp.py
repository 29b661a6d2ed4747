"""BBP probe: the Hessian against autograd, Lanczos against eigh, the N = inf theory against
simulation, and the transition itself at small scale."""

import math

import pytest
import torch

from optiforge.optim.probes import bbp


def _single(problem, b, w):
    return bbp.SoftCommittee(problem.teacher[b:b + 1], w[None], problem.x[b:b + 1],
                             problem.y[b:b + 1], problem.a)


@pytest.mark.parametrize("p,p_star", [(1, 1), (2, 1), (3, 2)])
def test_hessian_matches_autograd(p, p_star):
    prob = bbp.sample_problem(5, 3.0, p=p, p_star=p_star, a=0.7, batch=2, seed=p)
    h = bbp.hessian(prob, riemannian=False)
    for b in range(2):
        auto = torch.func.hessian(lambda w, b=b: bbp.loss(_single(prob, b, w), w[None])[0])(
            prob.student[b])
        torch.testing.assert_close(h[b], auto.reshape(p * 5, p * 5), rtol=0, atol=1e-10)


def test_riemannian_hessian_is_the_second_derivative_along_geodesics():
    n = 6
    prob = bbp.sample_problem(n, 2.0, p=2, p_star=1, a=1.5, batch=1, seed=4)
    h = bbp.hessian(prob, riemannian=True)[0]
    w0 = prob.student[0]
    unit = w0 / math.sqrt(n)
    gen = torch.Generator().manual_seed(0)
    for _ in range(3):
        xi = torch.randn(w0.shape, generator=gen, dtype=w0.dtype)
        xi = xi - (xi * unit).sum(-1, keepdim=True) * unit  # tangent to each sphere
        speed = xi.norm(dim=-1, keepdim=True)

        def along(t, xi=xi, speed=speed):  # the great circle through w0 with velocity xi
            w = torch.cos(t * speed / math.sqrt(n)) * w0 + math.sqrt(n) * torch.sin(
                t * speed / math.sqrt(n)) * xi / speed
            return bbp.loss(_single(prob, 0, w), w[None])[0]

        second = torch.func.hessian(along)(torch.tensor(0.0, dtype=w0.dtype))
        assert float(second) == pytest.approx(float(xi.reshape(-1) @ h @ xi.reshape(-1)), rel=1e-9)


@pytest.mark.parametrize("riemannian", [False, True])
def test_matrix_free_product_and_lanczos_match_the_dense_hessian(riemannian):
    prob = bbp.sample_problem(60, 2.0, p=2, batch=3, seed=1)
    dense = bbp.hessian(prob, riemannian)
    v = torch.randn(3, 120, dtype=torch.float64)
    torch.testing.assert_close(bbp.hessian_matvec(prob, riemannian)(v),
                               torch.einsum("bij,bj->bi", dense, v), rtol=0, atol=1e-10)
    val_d, vec_d = bbp.lowest_eigenpair(prob, method="dense", riemannian=riemannian)
    val_l, vec_l = bbp.lowest_eigenpair(prob, method="lanczos", riemannian=riemannian, tol=1e-10)
    torch.testing.assert_close(val_l, val_d, rtol=0, atol=1e-8)
    assert ((vec_l * vec_d).sum(-1).abs() > 1 - 1e-6).all()
    if riemannian:  # the lowest eigenvector is tangent: the normal directions were lifted
        unit = prob.student / math.sqrt(prob.n)
        assert (vec_d.reshape(3, 2, 60) * unit).sum(-1).abs().max() < 1e-8


def test_overlap_is_one_on_the_signal_and_small_on_a_random_direction():
    prob = bbp.sample_problem(400, 1.0, p=2, batch=1, seed=0)
    signal = torch.cat([prob.teacher[0, 0] * 0.6, prob.teacher[0, 0] * 0.8])[None] / 20.0
    assert float(bbp.overlap(prob, signal)) == pytest.approx(1.0)
    rnd = torch.randn(1, 800, dtype=torch.float64)
    assert float(bbp.overlap(prob, rnd / rnd.norm())) < 0.2


@pytest.mark.parametrize("a", [0.7, 1.5])
def test_large_p_theory_gives_the_papers_threshold(a):
    # p -> inf: alpha_BBP = p*(a+1)/2, with the edge pinned at sup T (a discontinuous jump).
    alpha, pinned = bbp.spectral_threshold(bbp.spectral_model(None, a))
    assert alpha == pytest.approx(bbp.large_p_threshold(1, a), rel=1e-6)
    assert pinned
    rho2, _ = bbp.spectral_overlap(alpha * 1.001, bbp.spectral_model(None, a))
    assert rho2 > 0.1  # the overlap jumps


def test_p1_theory_is_continuous_at_a07_and_discontinuous_at_a15():
    small, large = bbp.spectral_model(1, 0.7), bbp.spectral_model(1, 1.5)
    a_small, pinned_small = bbp.spectral_threshold(small)
    a_large, pinned_large = bbp.spectral_threshold(large)
    assert not pinned_small and pinned_large
    assert bbp.spectral_overlap(a_small * 1.01, small)[0] < 0.01
    assert bbp.spectral_overlap(a_large * 1.01, large)[0] > 0.04
    # Overparametrization lowers the threshold: p = 1 above p -> inf.
    assert a_small > bbp.large_p_threshold(1, 0.7) and a_large > bbp.large_p_threshold(1, 1.5)


def test_p1_simulation_matches_the_n_inf_theory():
    alpha, a = 5.0, 1.5
    expected = math.sqrt(bbp.spectral_overlap(alpha, bbp.spectral_model(1, a))[0])  # 0.707
    prob = bbp.sample_problem(600, alpha, p=1, a=a, batch=4, seed=7)
    _, vec = bbp.lowest_eigenpair(prob, method="lanczos", tol=1e-7)
    assert float(bbp.overlap(prob, vec).mean()) == pytest.approx(expected, abs=0.05)


def test_the_lowest_eigenvector_learns_the_teacher_only_with_enough_data():
    sweep = bbp.overlap_sweep([0.3, 3.0], 300, p=2, a=0.7, trials=4, seed=1)
    low, high = sweep.mean
    assert high > 0.55 and low < 0.3 and high > low + 0.3


def test_finite_size_fit_recovers_a_planted_law():
    ns = [100, 200, 400, 800]
    fit = bbp.finite_size_fit(ns, [1.2 + 3.0 * n ** (-2 / 3) for n in ns], "power")
    assert fit["alpha_inf"] == pytest.approx(1.2) and fit["rms"] < 1e-12


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="^n:"):
        bbp.sample_problem(1, 1.0)
    with pytest.raises(ValueError, match="^alpha:"):
        bbp.sample_problem(10, -1.0)
    with pytest.raises(TypeError, match="^p:"):
        bbp.sample_problem(10, 1.0, p=1.5)
    with pytest.raises(ValueError, match="^method:"):
        bbp.lowest_eigenpair(bbp.sample_problem(10, 1.0), method="svd")
    with pytest.raises(ValueError, match="^p:"):
        bbp.spectral_model(2, 0.7)
