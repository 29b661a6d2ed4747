import pytest
import torch

from optiforge.optim import Muon
from optiforge.optim.lowprec import Quantized, quantize


@pytest.mark.parametrize("bits", [1, 3, 7, 10])
def test_quantize_keeps_m_bits(bits):
    x = torch.randn(10000) * 1e3
    for mode, bound in (("nearest", 2.0 ** -(bits + 1)), ("stochastic", 2.0**-bits), ("truncate", 2.0**-bits)):
        q = quantize(x, bits, mode, torch.Generator().manual_seed(0))
        assert ((q - x).abs() <= bound * x.abs() * (1 + 1e-6)).all()
        # The dropped mantissa bits are zero: q has at most 2^bits distinct mantissas.
        mant = (q.view(torch.int32) & ((1 << 23) - 1)) >> (23 - bits)
        assert mant.unique().numel() <= 2**bits
        assert torch.equal(q.sign(), x.sign())


def test_stochastic_rounding_is_unbiased_and_nearest_is_exact_on_grid():
    x = torch.full((200000,), 1.3)
    q = quantize(x, 2, "stochastic", torch.Generator().manual_seed(1))
    assert set(q.unique().tolist()) == {1.25, 1.5}
    assert abs(q.mean().item() - 1.3) < 2e-3
    assert quantize(torch.tensor([1.25, -1.5]), 2, "nearest").tolist() == [1.25, -1.5]
    assert torch.equal(quantize(x, 23), x)
    special = torch.tensor([float("inf"), float("nan"), 0.0])
    out = quantize(special, 3)
    assert out[0] == float("inf") and out[1].isnan() and out[2] == 0


def test_truncation_rounds_toward_zero():
    x = torch.randn(10000) * 1e3
    q = quantize(x, 3, "truncate")
    assert (q.abs() <= x.abs()).all()
    # Biased: it shrinks magnitudes on average (what lets optimizer states decay and stagnate).
    assert (x.abs() - q.abs()).mean() > 0.01 * x.abs().mean()
    assert quantize(torch.tensor([1.3, -1.3, 1.5]), 2, "truncate").tolist() == [1.25, -1.25, 1.5]


def test_bad_arguments():
    with pytest.raises(ValueError, match="mantissa_bits"):
        quantize(torch.ones(2), 24)
    with pytest.raises(ValueError, match="rounding"):
        quantize(torch.ones(2), 3, "floor")
    with pytest.raises(TypeError, match="x must be"):
        quantize(torch.ones(2, dtype=torch.int32), 3)
    p = torch.nn.Parameter(torch.ones(2, 2))
    with pytest.raises(ValueError, match="grads"):
        Quantized(torch.optim.Adam([p]), grads=-1)
    with pytest.raises(TypeError, match="optimizer"):
        Quantized(object())


def test_wrapper_quantises_weights_and_states_but_keeps_master(task, trainer):
    train, _ = trainer
    make_model, loss_of = task
    model = make_model()
    opt = Quantized(torch.optim.Adam(model.parameters(), lr=1e-2), weights=3, grads=3, states=3)
    losses = train(opt, model, loss_of, 30)
    assert losses[-1] < 0.5 * losses[0]
    for p, m in zip(model.parameters(), opt.master_weights(), strict=True):
        assert ((p - m).abs() <= 2.0**-3 * m.abs() * (1 + 1e-6)).all()
        mant = p.detach().view(torch.int32) & ((1 << 20) - 1)
        assert (mant == 0).all()
    for st in opt.state.values():
        assert ((st["exp_avg_sq"].view(torch.int32) & ((1 << 20) - 1)) == 0).all()


def test_quantized_muon_trains_and_roundtrips(task, trainer):
    train, roundtrip = trainer
    make_model, loss_of = task
    model = make_model()
    opt = Quantized(Muon(model.parameters(), lr=0.02, adamw_lr=1e-2), weights=4, grads=4, states=4)
    losses = train(opt, model, loss_of, 30)
    assert losses[-1] < 0.5 * losses[0]
    roundtrip(
        lambda m: Quantized(torch.optim.Adam(m.parameters(), lr=1e-2), weights=5, states=5,
                            rounding="nearest"),
        make_model, loss_of,
    )
