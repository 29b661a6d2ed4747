"""Bi-LoRA on plain torch factors: descent/ascent signs, Adam ascent, the three clipping modes, resume."""

import copy
import math

import pytest
import torch

from optiforge.optim import BiLoRA


class TwoLayerLoRA(torch.nn.Module):
    """Two frozen linear maps, each with a primary (B1, A1) and an auxiliary (B2, A2) module."""

    def __init__(self, scale: float = 0.5, seed: int = 0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        dims = [(3, 4), (4, 2)]  # (in, out)
        self.w0 = [torch.randn(o, i, generator=g, dtype=torch.float64) for i, o in dims]
        self.b1 = torch.nn.ParameterList(torch.randn(o, 2, generator=g, dtype=torch.float64) * 0.3 for _, o in dims)
        self.a1 = torch.nn.ParameterList(torch.randn(2, i, generator=g, dtype=torch.float64) * 0.3 for i, _ in dims)
        self.b2 = torch.nn.ParameterList(torch.randn(o, 2, generator=g, dtype=torch.float64) * 0.3 for _, o in dims)
        self.a2 = torch.nn.ParameterList(torch.randn(2, i, generator=g, dtype=torch.float64) * 0.3 for i, _ in dims)
        self.scale = scale

    def weights(self) -> list[torch.Tensor]:
        return [w + b1 @ a1 + self.scale * b2 @ a2
                for w, b1, a1, b2, a2 in zip(self.w0, self.b1, self.a1, self.b2, self.a2, strict=True)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w1, w2 = self.weights()
        return torch.tanh(x @ w1.T) @ w2.T

    def primary(self):
        return [*self.b1, *self.a1]

    def auxiliary(self):
        return [(b, a, self.scale) for b, a in zip(self.b2, self.a2, strict=True)]


def _data():
    g = torch.Generator().manual_seed(1)
    return torch.randn(6, 3, generator=g, dtype=torch.float64), torch.randn(6, 2, generator=g, dtype=torch.float64)


def _weight_grads(model, x, y):
    """G_l = dL/dW_l at the merged weights (autograd on the merged matrices themselves)."""
    ws = [w.detach().requires_grad_(True) for w in model.weights()]
    out = torch.tanh(x @ ws[0].T) @ ws[1].T
    torch.nn.functional.mse_loss(out, y).backward()
    return [w.grad for w in ws]


def _one_step(model, opt, x, y):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()   # ONE backward at the merged weights
    opt.step()


def test_primary_descends_and_auxiliary_ascends_from_one_gradient():
    model = TwoLayerLoRA()
    x, y = _data()
    gs = _weight_grads(model, x, y)
    old = {k: [t.detach().clone() for t in getattr(model, k)] for k in ("b1", "a1", "b2", "a2")}
    eta1, eta2, s = 0.1, 0.05, model.scale
    opt = BiLoRA(torch.optim.SGD(model.primary(), lr=eta1), model.auxiliary(), aux_lr=eta2, rho=1e6,
                 aux_optimizer="sgd")
    _one_step(model, opt, x, y)
    for i, g in enumerate(gs):
        b1, a1, b2, a2 = (old[k][i] for k in ("b1", "a1", "b2", "a2"))
        torch.testing.assert_close(model.b1[i].detach(), b1 - eta1 * g @ a1.T)
        torch.testing.assert_close(model.a1[i].detach(), a1 - eta1 * b1.T @ g)
        torch.testing.assert_close(model.b2[i].detach(), b2 + eta2 * s * g @ a2.T)
        torch.testing.assert_close(model.a2[i].detach(), a2 + eta2 * s * b2.T @ g)


def test_adam_ascent_moves_each_factor_entry_by_lr_along_its_gradient():
    model = TwoLayerLoRA()
    x, y = _data()
    gs = _weight_grads(model, x, y)
    b2, a2 = model.b2[0].detach().clone(), model.a2[0].detach().clone()
    opt = BiLoRA(torch.optim.SGD(model.primary(), lr=0.0), model.auxiliary(), aux_lr=1e-3, rho=1e6)
    _one_step(model, opt, x, y)
    # Adam's first step is lr * g / (|g| + eps): +lr where dL/dB2 > 0 (ascent), -lr where < 0.
    torch.testing.assert_close(model.b2[0].detach(), b2 + 1e-3 * torch.sign(model.scale * gs[0] @ a2.T), atol=1e-9, rtol=0)
    torch.testing.assert_close(model.a2[0].detach(), a2 + 1e-3 * torch.sign(model.scale * b2.T @ gs[0]), atol=1e-9, rtol=0)


def _after_ascent(model, x, y, eta2):
    """The auxiliary factors after the (unclipped) SGD ascent step, by hand."""
    gs = _weight_grads(model, x, y)
    s = model.scale
    return [(b.detach() + eta2 * s * g @ a.detach().T, a.detach() + eta2 * s * b.detach().T @ g)
            for b, a, g in zip(model.b2, model.a2, gs, strict=True)]


@pytest.mark.parametrize("clip", ["global", "layer", "none"])
def test_clipping_modes(clip):
    model = TwoLayerLoRA()
    model.b2[1].data.mul_(20)  # layer 1's perturbation is large, layer 0's small
    x, y = _data()
    s, eta2 = model.scale, 0.05
    ascended = _after_ascent(model, x, y, eta2)
    norms = [float(torch.linalg.matrix_norm(s * b @ a)) for b, a in ascended]
    rho = 0.5 * norms[1]
    assert norms[0] < rho < norms[1]
    opt = BiLoRA(torch.optim.SGD(model.primary(), lr=0.1), model.auxiliary(), aux_lr=eta2, rho=rho,
                 clip=clip, aux_optimizer="sgd")
    _one_step(model, opt, x, y)
    if clip == "global":
        c = math.hypot(*norms)
        factors = [math.sqrt(rho / c)] * 2
    elif clip == "layer":
        factors = [1.0, math.sqrt(rho / norms[1])]
    else:
        factors = [1.0, 1.0]
    for i, ((b, a), f) in enumerate(zip(ascended, factors, strict=True)):
        torch.testing.assert_close(model.b2[i].detach(), f * b)
        torch.testing.assert_close(model.a2[i].detach(), f * a)
    after = opt.auxiliary_norms()
    if clip == "global":
        assert math.hypot(*after) == pytest.approx(rho)
        assert after[0] / after[1] == pytest.approx(norms[0] / norms[1])   # directions kept
    elif clip == "layer":
        assert after == pytest.approx([norms[0], rho])
    else:
        assert after == pytest.approx(norms)
    assert opt.last_norm == pytest.approx(math.hypot(*after))


def test_state_dict_roundtrip_resumes_exactly():
    x, y = _data()

    def make():
        model = TwoLayerLoRA()
        opt = BiLoRA(torch.optim.AdamW(model.primary(), lr=1e-2), model.auxiliary(), aux_lr=1e-2, rho=0.3)
        return model, opt

    model, opt = make()
    for _ in range(3):
        _one_step(model, opt, x, y)
    saved_model, saved_opt = copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict())
    for _ in range(3):
        _one_step(model, opt, x, y)
    model2, opt2 = make()
    model2.load_state_dict(saved_model)
    opt2.load_state_dict(saved_opt)
    for _ in range(3):
        _one_step(model2, opt2, x, y)
    for a, b in zip(model.parameters(), model2.parameters(), strict=True):
        torch.testing.assert_close(a, b)
    # Without the auxiliary state (what the GRPO learner saves) the ascent restarts.
    opt2.load_state_dict({"primary": saved_opt["primary"]})
    assert not opt2.aux_optimizer.state


def test_bad_arguments_name_the_argument():
    model = TwoLayerLoRA()
    sgd = torch.optim.SGD(model.primary(), lr=0.1)
    with pytest.raises(TypeError, match="optimizer"):
        BiLoRA(model.primary(), model.auxiliary(), rho=0.1)
    with pytest.raises(ValueError, match="rho"):
        BiLoRA(sgd, model.auxiliary(), rho=0.0)
    with pytest.raises(ValueError, match="clip"):
        BiLoRA(sgd, model.auxiliary(), rho=0.1, clip="per-layer")
    with pytest.raises(ValueError, match="aux_optimizer"):
        BiLoRA(sgd, model.auxiliary(), rho=0.1, aux_optimizer="adamw")
    with pytest.raises(ValueError, match="aux_lr"):
        BiLoRA(sgd, model.auxiliary(), rho=0.1, aux_lr=-1)
    with pytest.raises(ValueError, match=r"auxiliary\[0\]"):
        BiLoRA(sgd, [(model.b2[0], model.a2[0].T)], rho=0.1)
    with pytest.raises(TypeError, match=r"auxiliary\[0\]"):
        BiLoRA(sgd, [(model.b2[0],)], rho=0.1)
    with pytest.raises(ValueError, match="auxiliary"):
        BiLoRA(sgd, [], rho=0.1)
    with pytest.raises(ValueError, match="also trained"):
        BiLoRA(sgd, [(model.b1[0], model.a1[0])], rho=0.1)
    with pytest.raises(ValueError, match="state_dict"):
        BiLoRA(sgd, model.auxiliary(), rho=0.1).load_state_dict({})
