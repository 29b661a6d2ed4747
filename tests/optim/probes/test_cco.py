"""CCO probe: Algorithm 1's directions against autograd, the phases, and crowding-out itself."""

import pytest
import torch

from optiforge.optim.probes import cco


def _setup(a=5.0, batch=2, seed=0):
    data = cco.causal_chain(16, 4, a=a, c=0.5, batch=batch, seed=seed)
    s1, s2 = cco.positions(3)
    xt, zt = cco.tokens(data, s1, s2)
    gen = torch.Generator().manual_seed(seed)
    v = torch.randn(batch, 7, generator=gen, dtype=torch.float64) * 0.3
    w = torch.randn(batch, 7, generator=gen, dtype=torch.float64)
    return data, xt, zt, v, w


def test_algorithm_directions_match_autograd():
    data, xt, zt, v, w = _setup()
    v = v.requires_grad_()
    w = w.requires_grad_()
    cco.loss(v, w, xt, zt, data.y).sum().backward()
    g_w, g_v = cco.updates(v.detach(), w.detach(), xt, zt, data.y)
    torch.testing.assert_close(g_v, v.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(2 * g_w, w.grad, rtol=1e-10, atol=1e-12)  # eta is a step of eta/2


def test_attention_and_head_follow_the_definitions():
    data, xt, zt, v, w = _setup()
    p, h, yhat = cco.forward(v, w, xt, zt)
    torch.testing.assert_close(p, torch.softmax(torch.stack(
        [torch.einsum("bnk,bk->bn", xt, v), torch.einsum("bnk,bk->bn", zt, v)]), 0)[0])
    torch.testing.assert_close(yhat, ((p[..., None] * xt + (1 - p[..., None]) * zt) * w[:, None] ** 2).sum(-1))


def _run(a, trials=3, **kw):
    data = cco.causal_chain(64, 5, a=a, c=0.5, batch=trials, seed=1)
    test = cco.causal_chain(1000, 5, a=a, c=-0.5, batch=trials, seed=2)
    return cco.train(data, test, eta=0.01, beta=0.5, t2=200, t3=kw.pop("t3", 1500), **kw)


def test_strong_correlation_crowds_out_the_descendant():
    run = _run(50.0)
    steps = run.steps
    # Phase (i) stops once w_1 >= 1/4; phase (ii) drives the attention to the cause fast.
    assert all(0 < e < 200 for e in run.phase1_end)
    at = steps.index(max(run.phase1_end) // 10 * 10 + 100)
    assert min(run.p_x[at]) > 0.95
    assert min(run.p_x[-1]) > 0.95
    # Phase (iii) then fits the head: |w - w*| decreases, and the predictor ignores z, so a
    # shifted y -> z mechanism costs little above the noise floor sigma^2/2 = 0.5.
    first_after = steps.index(max(run.phase2_end) // 10 * 10 + 10)
    assert all(e < s for e, s in zip(run.w_error[-1], run.w_error[first_after], strict=True))
    losses = sorted(run.test_loss_shifted[-1])
    assert losses[1] < 0.8 and losses[-1] < 3.0  # median near 0.5; a run at p_x = 0.97 pays more


def test_weak_correlation_keeps_the_descendant():
    run = _run(1.0, t3=300)
    assert max(run.p_x[-1]) < 0.6
    assert min(run.test_loss_shifted[-1]) > 3.0


def test_positional_part_of_the_head_never_moves():
    run_data = cco.causal_chain(32, 3, a=10.0, c=0.5, batch=1)
    run = cco.train(run_data, run_data, t3=50, t2=20, phase1_max=100)
    assert len(run.final_w[0]) == 3  # feature part only; the position part stayed exactly 0


def test_dominant_coordinate_condition():
    assert cco.dominant_coordinate_margin(5, a=50.0, c=0.5, samples=20_000) > 0
    assert cco.dominant_coordinate_margin(5, a=1.0, c=[0.3] * 5, samples=20_000) < 0


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="^a:"):
        cco.causal_chain(8, 3, a=-1.0)
    with pytest.raises(ValueError, match="^c:"):
        cco.causal_chain(8, 3, c=[1.0, 2.0])
    data = cco.causal_chain(8, 3)
    with pytest.raises(ValueError, match="^schedule:"):
        cco.train(data, data, schedule="adam")
    with pytest.raises(ValueError, match="^eta:"):
        cco.train(data, data, eta=0.0)
