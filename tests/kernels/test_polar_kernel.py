import pytest
import torch

from optiforge.kernels import polar_step, resolve_backend, set_backend

pytest.importorskip("triton")

COEFFS = (3.4445, -4.7750, 2.0315)


def _device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def _normalised(*shape: int, dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(*shape, generator=g, dtype=torch.float32)
    x = x / torch.linalg.matrix_norm(x, keepdim=True)
    return x.to(dtype=dtype, device=_device())


@pytest.mark.parametrize("shape", [(2, 100, 150), (1, 70, 70), (3, 17, 40)])
def test_triton_matches_fallback_fp32(shape):
    x = _normalised(*shape, dtype=torch.float32)
    got = polar_step(x, *COEFFS, backend="triton")
    want = polar_step(x, *COEFFS, backend="torch")
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_triton_matches_fallback_bf16():
    # (100 x 100) spans two 64-row tiles, so the mirrored off-diagonal tiles are exercised.
    x = _normalised(2, 100, 130, dtype=torch.bfloat16)
    got = polar_step(x, *COEFFS, backend="triton").float()
    want = polar_step(x, *COEFFS, backend="torch").float()
    assert got.dtype == want.dtype
    rel = (got - want).norm() / want.norm()
    assert rel < 2e-2


def test_two_dimensional_input_keeps_shape():
    x = _normalised(30, 50, dtype=torch.float32)
    got = polar_step(x, *COEFFS, backend="triton")
    assert got.shape == (30, 50)
    torch.testing.assert_close(got, polar_step(x, *COEFFS, backend="torch"), rtol=1e-4, atol=1e-5)


def test_fallback_is_the_exact_polynomial():
    x = _normalised(2, 20, 33, dtype=torch.float64)
    a, b, c = COEFFS
    gram = x @ x.mT
    want = a * x + b * gram @ x + c * gram @ gram @ x
    torch.testing.assert_close(polar_step(x, a, b, c, backend="torch"), want)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="x must have shape"):
        polar_step(torch.zeros(3), *COEFFS)
    with pytest.raises(TypeError, match="x must be floating"):
        polar_step(torch.zeros(3, 3, dtype=torch.int64), *COEFFS)
    with pytest.raises(ValueError, match="backend must be one of"):
        polar_step(torch.zeros(3, 3), *COEFFS, backend="cuda")


def test_dispatch_rules(monkeypatch):
    cpu = torch.zeros(2, 2)
    assert resolve_backend(cpu, "auto") == "torch"
    assert resolve_backend(cpu, "torch") == "torch"
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="TRITON_INTERPRET"):
            resolve_backend(cpu, "triton")
    monkeypatch.setenv("OPTIFORGE_KERNEL_BACKEND", "torch")
    assert resolve_backend(cpu) == "torch"
    set_backend("auto")
    try:
        assert resolve_backend(cpu) == "torch"
    finally:
        set_backend(None)
    with pytest.raises(ValueError, match="backend must be one of"):
        set_backend("gpu")
