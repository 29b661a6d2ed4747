import pytest
import torch

from optiforge.optim import Muon, muon_param_groups
from optiforge.optim.muon import lr_scale


def _make(model, **kw):
    muon, adamw = muon_param_groups(model)
    return Muon(muon, adamw_params=adamw, adamw_lr=1e-2, **kw)


@pytest.mark.parametrize("ns", ["polar_express", "jordan"])
def test_loss_decreases(task, trainer, ns):
    train, _ = trainer
    make_model, loss_of = task
    model = make_model()
    opt = _make(model, lr=0.02, ns=ns)
    losses = train(opt, model, loss_of, 40)
    assert losses[-1] < 0.3 * losses[0]


def test_routing(task):
    make_model, _ = task
    model = make_model()
    muon, adamw = muon_param_groups(model)
    names = {id(p): n for n, p in model.named_parameters()}
    assert sorted(names[id(p)] for p in muon) == ["conv.weight", "hidden.weight", "mix.weight"]
    assert "embed.weight" in {names[id(p)] for p in adamw}
    assert "head.weight" in {names[id(p)] for p in adamw}
    # Passing everything: 1-D parameters still fall back to AdamW automatically.
    opt = Muon(model.parameters())
    kinds = {g["use_muon"]: sum(p.numel() for p in g["params"]) for g in opt.param_groups}
    assert kinds[False] == sum(p.numel() for p in model.parameters() if p.ndim < 2)


def test_update_is_orthogonal_and_scaled():
    w = torch.nn.Parameter(torch.zeros(64, 16))
    opt = Muon([w], lr=0.1, momentum=0.0, nesterov=False, ns_dtype=torch.float32)
    w.grad = torch.randn(64, 16)
    opt.step()
    s = torch.linalg.svdvals(-w.detach() / (0.1 * lr_scale((64, 16), "spectral")))
    assert (s - 1).abs().max() < 0.15
    assert lr_scale((64, 16), "spectral") == 2.0
    assert lr_scale((64, 16), "match_rms_adamw") == pytest.approx(0.2 * 8)


def test_conv_weights_are_flattened(task, trainer):
    train, _ = trainer
    make_model, loss_of = task
    model = make_model()
    opt = _make(model, ns_dtype=torch.float32)
    before = model.conv.weight.detach().clone()
    train(opt, model, loss_of, 1)
    assert not torch.equal(before, model.conv.weight)
    assert opt.state[model.conv.weight]["momentum_buffer"].shape == model.conv.weight.shape


def test_state_dict_roundtrip(task, trainer):
    _, roundtrip = trainer
    make_model, loss_of = task
    roundtrip(lambda m: _make(m, weight_decay=0.01), make_model, loss_of)


@pytest.mark.parametrize(
    "kw,name",
    [
        (dict(lr=-1.0), "lr"),
        (dict(momentum=1.0), "momentum"),
        (dict(ns="svd"), "ns"),
        (dict(ns_steps=0), "ns_steps"),
        (dict(adjust_lr="rms"), "adjust_lr"),
        (dict(weight_decay=-0.1), "weight_decay"),
        (dict(adamw_betas=(0.9, 1.5)), "adamw_betas"),
        (dict(adamw_lr=float("nan")), "adamw_lr"),
    ],
)
def test_bad_hyperparameters(kw, name):
    with pytest.raises(ValueError, match=name):
        Muon([torch.nn.Parameter(torch.zeros(3, 3))], **kw)


def test_empty_params():
    with pytest.raises(ValueError, match="params"):
        Muon([])
