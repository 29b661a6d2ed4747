"""One step of an odd quintic polar iteration, with one dispatch point.

``polar_step(X, a, b, c)`` returns ``aX + bX X^T X + c (X X^T)^2 X`` computed as
``A = X X^T``, ``B = bA + cA A``, ``X' = aX + B X`` -- the inner step of Newton--Schulz and of
Polar Express. CUDA tensors run the Triton kernels in ``_polar_triton`` (symmetric products
computed once per tile pair, ``bA`` and ``aX`` fused into GEMM epilogues); everything else runs
the PyTorch fallback, which fuses the same terms through ``addmm``/``baddbmm`` so no
intermediate is materialised twice.
"""

from __future__ import annotations

import torch

from ._backend import resolve_backend


def _polar_step_torch(x: torch.Tensor, a: float, b: float, c: float) -> torch.Tensor:
    gram = torch.bmm(x, x.mT)
    poly = torch.baddbmm(gram, gram, gram, beta=b, alpha=c)
    return torch.baddbmm(x, poly, x, beta=a)


def polar_step(
    x: torch.Tensor, a: float, b: float, c: float, *, backend: str | None = None
) -> torch.Tensor:
    """Apply ``X <- aX + (bA + cA^2) X`` with ``A = X X^T``.

    Parameters
    ----------
    x : torch.Tensor
        Shape ``(m, n)`` or ``(batch, m, n)``, floating point. Wide matrices (``m <= n``) are the
        cheap orientation; callers transpose tall ones first.
    a, b, c : float
        Coefficients of the odd polynomial ``p(s) = a s + b s^3 + c s^5`` applied to the
        singular values.
    backend : {"auto", "triton", "torch"}, optional
        Override the backend choice (see :mod:`optiforge.kernels`).

    Returns
    -------
    torch.Tensor
        New tensor of the same shape and dtype as ``x``.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim not in (2, 3):
        raise ValueError(f"x must have shape (m, n) or (batch, m, n), got {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"x must be floating point, got {x.dtype}")
    squeeze = x.ndim == 2
    xb = x.unsqueeze(0) if squeeze else x
    if resolve_backend(x, backend) == "triton":
        from ._polar_triton import polar_step_triton

        out = polar_step_triton(xb.contiguous(), float(a), float(b), float(c))
    else:
        out = _polar_step_torch(xb, float(a), float(b), float(c))
    return out.squeeze(0) if squeeze else out
