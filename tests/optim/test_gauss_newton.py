"""Gauss-Newton: the Newton step on least squares, hand-computed inner steps (full, layerwise,
prox-linear) against an explicit Jacobian, the line search, warm starts and resume."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from optiforge.optim import GaussNewton
from optiforge.optim.gauss_newton import default_layers


def sgd(lr):
    return lambda named: torch.optim.SGD([t for _, t in named], lr=lr)


def test_linear_least_squares_step_is_the_newton_step():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(200, 4, generator=g, dtype=torch.float64)
    y = torch.randn(200, 3, generator=g, dtype=torch.float64)
    torch.manual_seed(0)
    model = nn.Linear(4, 3).double()
    w0, b0 = model.weight.detach().clone(), model.bias.detach().clone()
    # Loss = mean over 600 entries: Hessian 2/600 [X 1]^T [X 1] per output; lr = 1 / its largest eigenvalue.
    xa = torch.cat([x, torch.ones(200, 1, dtype=torch.float64)], 1)
    hess = 2 / 600 * xa.T @ xa
    lr = 1 / float(torch.linalg.eigvalsh(hess).max())
    gn = GaussNewton(model, F.mse_loss, inner_optimizer=sgd(lr), line_search=1)
    stats = gn.step([(x, y)] * 400)
    # The Newton step theta - H^-1 grad, by hand (per output column; the loss is quadratic).
    theta0 = torch.cat([w0, b0[:, None]], 1).T                 # (5, 3)
    grad0 = 2 / 600 * xa.T @ (xa @ theta0 - y)
    newton = theta0 - torch.linalg.solve(hess, grad0)
    torch.testing.assert_close(model.weight.detach(), newton[:4].T, atol=1e-9, rtol=1e-9)
    torch.testing.assert_close(model.bias.detach(), newton[4], atol=1e-9, rtol=1e-9)
    assert stats["alpha"] == 1.0
    # On a linear model with a quadratic loss the model's quadratic is the loss itself.
    assert stats["model_loss"] == pytest.approx(float(F.mse_loss(model(x), y).detach()), rel=1e-9)


def _tiny():
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 3)).double()
    g = torch.Generator().manual_seed(2)
    x = torch.randn(5, 3, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 2, 1, 2, 0])
    return model, x, y


def _explicit(model, x, y):
    """Flat parameters, the Jacobian of the flattened outputs, g = dl/dz and H = d2l/dz2 by hand."""
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for p in model.parameters()]
    theta = torch.cat([p.detach().reshape(-1) for p in model.parameters()])

    def f(vec):
        params, i = {}, 0
        for n, s in zip(names, shapes, strict=True):
            params[n] = vec[i : i + s.numel()].view(s)
            i += s.numel()
        return torch.func.functional_call(model, params, (x,)).reshape(-1)

    jac = torch.autograd.functional.jacobian(f, theta)             # (15, P)
    z = f(theta).view(5, 3)
    p = z.softmax(-1)
    onehot = F.one_hot(y, 3).double()
    g = ((p - onehot) / 5).reshape(-1)
    h = torch.block_diag(*[(torch.diag(pi) - torch.outer(pi, pi)) / 5 for pi in p])
    sizes = [s.numel() for s in shapes]
    return theta, jac, z, g, h, f, sizes


@pytest.mark.parametrize("variant", ["full", "layerwise", "prox_linear"])
def test_two_inner_steps_match_the_hand_computed_subproblem(variant):
    model, x, y = _tiny()
    theta, jac, z, g, h, f, sizes = _explicit(model, x, y)
    eta = 0.7
    d1 = -eta * jac.T @ g                                        # grad Q(0) = J^T g in every variant
    if variant == "full":
        grad1 = jac.T @ (g + h @ jac @ d1)
    elif variant == "prox_linear":
        z1 = (z.reshape(-1) + jac @ d1).view(5, 3)
        grad1 = jac.T @ ((z1.softmax(-1) - F.one_hot(y, 3).double()) / 5).reshape(-1)
    else:  # layers: (0.weight, 0.bias) and (2.weight, 2.bias); curvature only within a layer
        cut = sizes[0] + sizes[1]
        parts = []
        for sl in (slice(0, cut), slice(cut, None)):
            j_l = jac[:, sl]
            parts.append(j_l.T @ (g + h @ j_l @ d1[sl]))
        grad1 = torch.cat(parts)
    expected = theta + d1 - eta * grad1
    gn = GaussNewton(model, variant=variant, inner_optimizer=sgd(eta), line_search=1)
    stats = gn.step([(x, y), (x, y)])
    got = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    torch.testing.assert_close(got, expected, atol=1e-12, rtol=1e-10)
    assert stats["loss"] == pytest.approx(float(F.cross_entropy(z, y)))


def test_layerwise_differs_from_full_by_the_cross_layer_curvature():
    # Guards the test above: the two variants must not coincide on this model.
    outs = {}
    for variant in ("full", "layerwise"):
        model, x, y = _tiny()
        GaussNewton(model, variant=variant, inner_optimizer=sgd(0.7), line_search=1).step([(x, y)] * 2)
        outs[variant] = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    assert (outs["full"] - outs["layerwise"]).abs().max() > 1e-4


def test_line_search_takes_the_best_step_size():
    model, x, y = _tiny()
    theta0 = {n: p.detach().clone() for n, p in model.named_parameters()}
    gn = GaussNewton(model, inner_optimizer=sgd(40.0), line_search=6)   # an inner lr that overshoots
    stats = gn.step([(x, y)] * 3)
    d = {n: gn.inner_solution[n] - theta0[n] for n in theta0}
    tried = {}
    for i in range(6):
        a = 2 ** (-i / 2)
        params = {n: theta0[n] + a * d[n] for n in theta0}
        tried[a] = float(F.cross_entropy(torch.func.functional_call(model, params, (x,)), y))
    best = min(tried, key=tried.get)
    assert best < 1.0 and stats["alpha"] == pytest.approx(best)
    assert stats["line_search_loss"] == pytest.approx(tried[best])
    for n, p in model.named_parameters():
        torch.testing.assert_close(p.detach(), theta0[n] + best * d[n])


@pytest.mark.parametrize("warm", [True, False])
def test_warm_start_continues_from_the_previous_inner_solution(warm):
    model, x, y = _tiny()
    lr = {"now": 40.0}
    gn = GaussNewton(model, inner_optimizer=lambda named: torch.optim.SGD([t for _, t in named], lr=lr["now"]),
                     line_search=6, warm_start=warm)
    gn.step([(x, y)] * 3)
    assert gn.history[-1]["alpha"] < 1.0     # so theta_1 != theta_hat_1
    after_first = {n: p.detach().clone() for n, p in model.named_parameters()}
    hat = {n: t.clone() for n, t in gn.inner_solution.items()}
    lr["now"] = 0.0                           # the inner problem does not move: only the start counts
    for group in gn.inner_optimizer.param_groups:
        group["lr"] = 0.0
    gn.step([(x, y)])
    for n, p in model.named_parameters():
        start = hat[n] if warm else after_first[n]
        alpha = gn.history[-1]["alpha"]
        torch.testing.assert_close(p.detach(), after_first[n] + alpha * (start - after_first[n]))
    if warm:
        assert any(not torch.equal(p.detach(), after_first[n]) for n, p in model.named_parameters())


class CharNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(12, 8)
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 8)) for _ in range(2))
        self.head = nn.Linear(8, 12)

    def forward(self, idx):
        h = self.embed(idx)
        for b in self.blocks:
            h = h + torch.tanh(b(h))
        return self.head(h)


def _char_batches(n, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        x = torch.randint(0, 12, (8, 6), generator=g)
        out.append((x, (x * 5 + 1) % 12))
    return out


@pytest.mark.parametrize("variant", ["full", "layerwise", "prox_linear"])
def test_default_inner_muon_reduces_the_loss(variant):
    torch.manual_seed(0)
    model = CharNet()
    gn = GaussNewton(model, variant=variant, inner_lr=0.05, inner_adamw_lr=0.02, line_search=3)
    assert [len(layer) for layer in gn.layers] == [1, 4, 4, 2]
    probe = _char_batches(4, 99)
    before = gn._true_loss({n: p.detach() for n, p in model.named_parameters()}, probe)
    for t in range(4):
        gn.step(_char_batches(4, t))
    after = gn._true_loss({n: p.detach() for n, p in model.named_parameters()}, probe)
    assert after < 0.8 * before


def test_state_dict_roundtrip_resumes_exactly():
    def make():
        torch.manual_seed(0)
        model = CharNet()
        return model, GaussNewton(model, inner_lr=0.05, line_search=2)

    model, gn = make()
    for t in range(2):
        gn.step(_char_batches(2, t))
    saved_model, saved_gn = copy.deepcopy(model.state_dict()), copy.deepcopy(gn.state_dict())
    for t in range(2, 4):
        gn.step(_char_batches(2, t))
    model2, gn2 = make()
    model2.load_state_dict(saved_model)
    gn2.load_state_dict(saved_gn)
    for t in range(2, 4):
        gn2.step(_char_batches(2, t))
    for a, b in zip(model.parameters(), model2.parameters(), strict=True):
        torch.testing.assert_close(a, b)
    assert gn2.steps == 4 and gn2.history == gn.history


def test_default_layers_groups_blocks():
    names = ["embed.weight", "pos", "blocks.0.qkv.weight", "blocks.0.ln.bias", "blocks.1.fc.weight", "head.weight"]
    assert default_layers(names) == [["embed.weight"], ["pos"], ["blocks.0.qkv.weight", "blocks.0.ln.bias"],
                                     ["blocks.1.fc.weight"], ["head.weight"]]


def test_bad_arguments_name_the_argument():
    model, x, y = _tiny()
    with pytest.raises(TypeError, match="model"):
        GaussNewton(object())
    with pytest.raises(TypeError, match="loss_fn"):
        GaussNewton(model, "mse")
    for kwargs, name in [({"variant": "diag"}, "variant"), ({"inner_lr": 0}, "inner_lr"),
                         ({"line_search": 0}, "line_search"), ({"layers": [["0.weight"]]}, "layers")]:
        with pytest.raises(ValueError, match=name):
            GaussNewton(model, **kwargs)
    with pytest.raises(TypeError, match="inner_optimizer"):
        GaussNewton(model, inner_optimizer=lambda named: None)
    gn = GaussNewton(model)
    with pytest.raises(ValueError, match="batches"):
        gn.step([])
    with pytest.raises(ValueError, match="line_search_batches"):
        gn.step([(x, y)], line_search_batches=[x])
    with pytest.raises(ValueError, match="state_dict"):
        gn.load_state_dict({"inner": {"nope": x}})
