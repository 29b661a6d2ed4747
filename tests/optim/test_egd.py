import pytest
import torch

from optiforge.optim import EGD
from optiforge.optim.egd import egalitarian


@pytest.mark.parametrize("method", ["polar_express", "svd"])
def test_equalised_gradient_has_unit_singular_values(method):
    g = torch.randn(40, 24) @ torch.diag(torch.logspace(-2, 0, 24))
    out = egalitarian(g, method)
    s = torch.linalg.svdvals(out)
    assert (s - 1).abs().max() < 0.05
    # Same singular directions: projecting G onto the output's row space loses nothing.
    assert torch.allclose(out @ out.T @ g, g, atol=5e-2 * g.abs().max())


def test_loss_decreases(task, trainer):
    train, _ = trainer
    make_model, loss_of = task
    model = make_model()
    opt = EGD(model.parameters(), lr=0.05)
    losses = train(opt, model, loss_of, 40)
    assert losses[-1] < 0.5 * losses[0]


def test_only_chosen_layers_and_switch_off(task, trainer):
    train, _ = trainer
    make_model, loss_of = task
    model = make_model()
    opt = EGD(model.parameters(), lr=0.1, layers=[model.hidden.weight], switch_off_at=0.95)
    flags = {id(p): g["equalize"] for g in opt.param_groups for p in g["params"]}
    assert flags[id(model.hidden.weight)] is True
    assert flags[id(model.mix.weight)] is False
    # An equalised step moves the chosen layer by exactly lr * U V^T.
    before = model.hidden.weight.detach().clone()
    train(opt, model, loss_of, 1)
    s = torch.linalg.svdvals((before - model.hidden.weight.detach()) / 0.1)
    assert (s[: min(before.shape)] - 1).abs().max() < 0.05
    assert opt.observe(0.5) is True
    assert opt.observe(0.96) is False and opt.observe(0.1) is False
    before = model.hidden.weight.detach().clone()
    model.zero_grad()
    loss_of(model).backward()
    grad = model.hidden.weight.grad.clone()
    opt.step()
    torch.testing.assert_close(model.hidden.weight.detach(), before - 0.1 * grad)


def test_state_dict_roundtrip(task, trainer):
    _, roundtrip = trainer
    make_model, loss_of = task
    roundtrip(lambda m: EGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4), make_model, loss_of)
    model = make_model()
    opt = EGD(model.parameters(), lr=0.05, switch_off_at=0.9)
    opt.observe(0.95)
    opt2 = EGD(model.parameters(), lr=0.05, switch_off_at=0.9)
    opt2.load_state_dict(opt.state_dict())
    assert opt2.egd_active is False


@pytest.mark.parametrize(
    "kw,name",
    [
        (dict(lr=0.0), "lr"),
        (dict(lr=0.1, momentum=-0.5), "momentum"),
        (dict(lr=0.1, method="qr"), "method"),
        (dict(lr=0.1, switch_off_at=1.5), "switch_off_at"),
        (dict(lr=0.1, steps=0), "steps"),
    ],
)
def test_bad_hyperparameters(kw, name):
    with pytest.raises(ValueError, match=name):
        EGD([torch.nn.Parameter(torch.zeros(3, 3))], **kw)
    with pytest.raises(ValueError, match="layers"):
        bias = torch.nn.Parameter(torch.zeros(3))
        EGD([bias], lr=0.1, layers=[bias])
