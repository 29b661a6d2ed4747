import pytest
import torch

from optiforge.kernels import BUF_COPY, BUF_EMA, BUF_NONE, sign_stats, sign_update_

pytest.importorskip("triton")


def _t(n: int, seed: int, dtype=torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.randn(n, generator=g).to(dtype=dtype, device=dev)


@pytest.mark.parametrize("n", [1, 1000, 2500])
def test_stats_dense_prev(n):
    g, prev = _t(n, 0), _t(n, 1)
    got = sign_stats(g, prev, backend="triton")
    want = sign_stats(g, prev, backend="torch")
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(want[0], (g - prev).abs().sum())


def test_stats_sign_prev_lower_bounds_the_true_difference():
    prev_grad = _t(2500, 2)
    g = _t(2500, 3) - 5.0  # all-negative-ish, so the max/min sentinels of partial blocks matter
    signs = prev_grad.sign().to(torch.int8)
    got = sign_stats(g, signs, backend="triton")
    want = sign_stats(g, signs, backend="torch")
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-3)
    assert 0 < want[0] <= (g - prev_grad).abs().sum()
    torch.testing.assert_close(want[1], (g * prev_grad.sign()).sum())
    torch.testing.assert_close(want[2], g.max())
    torch.testing.assert_close(want[3], g.min())


@pytest.mark.parametrize("mode", [BUF_NONE, BUF_COPY, BUF_EMA])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_update_matches_fallback(mode, dtype):
    results = []
    for backend in ("triton", "torch"):
        p = _t(3000, 4, dtype)
        g = _t(3000, 5, dtype)
        buf = _t(3000, 6, dtype) if mode != BUF_NONE else None
        signs = torch.zeros(3000, dtype=torch.int8, device=p.device)
        sign_update_(p, g, 0.01, decay=0.999, buf=buf, buf_mode=mode, beta=0.9, sign_out=signs,
                     backend=backend)
        results.append((p.float(), None if buf is None else buf.float(), signs))
    (p1, b1, s1), (p0, b0, s0) = results
    tol = dict(rtol=1e-2, atol=1e-2) if dtype == torch.bfloat16 else dict(rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(p1, p0, **tol)
    if b0 is not None:
        torch.testing.assert_close(b1, b0, **tol)
    assert torch.equal(s1, s0)


def test_update_semantics():
    p = torch.tensor([1.0, 1.0, 1.0])
    g = torch.tensor([2.0, -3.0, 0.0])
    signs = torch.zeros(3, dtype=torch.int8)
    sign_update_(p, g, 0.5, decay=0.5, sign_out=signs, backend="torch")
    torch.testing.assert_close(p, torch.tensor([0.0, 1.0, 0.5]))
    assert signs.tolist() == [1, -1, 0]


def test_update_bad_arguments():
    p = torch.zeros(4)
    with pytest.raises(ValueError, match="buf is required"):
        sign_update_(p, p, 0.1, buf_mode=BUF_COPY)
    with pytest.raises(ValueError, match="g must have 4 elements"):
        sign_update_(p, torch.zeros(5), 0.1)
    with pytest.raises(TypeError, match="sign_out must be int8"):
        sign_update_(p, p, 0.1, sign_out=torch.zeros(4))
