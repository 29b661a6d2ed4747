"""Compressors: unbiased where they claim to be, top-k contractive, bits counted exactly."""

import math

import pytest
import torch

from optiforge.optim.distributed import Identity, Natural, RandK, TopK, make_compressor

D = 24


def _x() -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(D, generator=g, dtype=torch.float64) * torch.logspace(-2, 1, D, dtype=torch.float64)
    x[3] = 0.0  # a zero entry must stay zero
    x[5] = 0.25  # an exact power of two (natural compression keeps it)
    return x


def _draws(comp, x: torch.Tensor, n: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return torch.stack([comp(x, g)[0] for _ in range(n)])


@pytest.mark.parametrize("comp", [RandK(k=4), RandK(fraction=0.5), Natural()],
                         ids=["randk4", "randk-half", "natural"])
def test_unbiased_compressors_have_mean_x_and_bounded_variance(comp):
    x, n = _x(), 6000
    q = _draws(comp, x, n)
    omega = comp.omega(D)
    # E Q(x) = x: each coordinate's sample mean within 5 standard errors (per-coordinate
    # variance bound: rand-k x_j^2 (d/k - 1), natural x_j^2 / 8).
    se = torch.sqrt(omega * x**2 / n)
    assert torch.all((q.mean(0) - x).abs() <= 5 * se + 1e-12)
    # E||Q(x) - x||^2 <= omega ||x||^2 (rand-k: equality).
    err = ((q - x) ** 2).sum(1).mean()
    assert err <= omega * (x**2).sum() * 1.05
    if isinstance(comp, RandK):
        assert err == pytest.approx(omega * float((x**2).sum()), rel=0.08)


def test_natural_rounds_to_neighbouring_powers_of_two():
    x = _x()
    q = _draws(Natural(), x, 200)
    nz = x != 0
    assert torch.all(q[:, ~nz] == 0)
    assert torch.all(torch.sign(q[:, nz]) == torch.sign(x[nz]))
    low = 2.0 ** torch.floor(torch.log2(x[nz].abs()))
    assert torch.all((q[:, nz].abs() == low) | (q[:, nz].abs() == 2 * low))
    assert torch.all(q[:, 5] == 0.25)


def test_topk_is_contractive_and_biased():
    g = torch.Generator().manual_seed(2)
    comp = TopK(k=5)
    for _ in range(200):
        x = torch.randn(D, generator=g, dtype=torch.float64) ** 3
        q, _ = comp(x, g)
        assert ((q - x) ** 2).sum() <= (1 - comp.delta(D)) * (x**2).sum() + 1e-12
        assert torch.count_nonzero(q) == 5
        kept = torch.topk(x.abs(), 5).values
        assert torch.equal(torch.sort(q[q != 0].abs()).values, torch.sort(kept).values)
    x = _x()
    assert not torch.allclose(_draws(comp, x, 3).mean(0), x)  # deterministic and biased


def test_bits_are_exact():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1000)
    idx = math.ceil(math.log2(1000))  # 10 bits per index
    assert RandK(k=7)(x, g)[1] == 7 * (32 + idx)
    assert RandK(fraction=0.1)(x, g)[1] == 100 * (32 + idx)
    assert TopK(k=3)(x, g)[1] == 3 * (32 + idx)
    assert Natural()(x, g)[1] == 9 * 1000
    assert Identity()(x, g)[1] == 32 * 1000
    assert torch.equal(Identity()(x, g)[0], x)


@pytest.mark.parametrize(("kwargs", "word"), [({}, "exactly one"), ({"k": 0}, "k"),
                                              ({"fraction": 0.0}, "fraction"),
                                              ({"fraction": 1.5}, "fraction"),
                                              ({"k": 2, "fraction": 0.5}, "exactly one")])
def test_bad_k_names_the_argument(kwargs, word):
    with pytest.raises(ValueError, match=word):
        RandK(**kwargs)


def test_make_compressor_refuses_unknown_names():
    assert isinstance(make_compressor("topk", 0.2), TopK)
    with pytest.raises(ValueError, match="compressor: must be one of"):
        make_compressor("signsgd")
