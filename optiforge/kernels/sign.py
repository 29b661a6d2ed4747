"""Sign-descent kernels used by ALIAS, with one dispatch point each.

``sign_stats`` reduces what the parameter-free step size needs from the new gradient and the
stored previous direction; ``sign_update_`` applies ``p <- decay * p - gamma * sign(d)`` while
refreshing the stored state in the same pass. Triton on CUDA tensors, PyTorch elsewhere.
"""

from __future__ import annotations

import torch

from ._backend import resolve_backend

BUF_NONE, BUF_COPY, BUF_EMA = 0, 1, 2


def _check_flat_pair(name: str, a: torch.Tensor, ref: torch.Tensor) -> None:
    if not isinstance(a, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(a).__name__}")
    if a.numel() != ref.numel() or a.device != ref.device:
        raise ValueError(f"{name} must have {ref.numel()} elements on {ref.device}")


def sign_stats(
    g: torch.Tensor,
    prev: torch.Tensor,
    *,
    backend: str | None = None,
) -> torch.Tensor:
    """Statistics of a new gradient against the stored previous direction.

    Parameters
    ----------
    g : torch.Tensor
        New gradient (any shape).
    prev : torch.Tensor
        Previous direction, same number of elements: a dense floating tensor (previous gradient
        or momentum), or an ``int8`` tensor of its signs (memory-efficient mode).
    backend : {"auto", "triton", "torch"}, optional
        Override the backend choice.

    Returns
    -------
    torch.Tensor
        ``float32`` vector of 4 entries. Dense ``prev``: ``[||g - prev||_1, <g, sign(prev)>, 0,
        0]``. Signs: ``[flip, <g, sign(prev)>, max(g), min(g)]`` where ``flip = sum_j
        max(0, -sign(prev_j) g_j)``, the gradient mass on coordinates whose sign flipped, a
        lower bound of ``||g - prev_grad||_1`` (there ``|g_j - prev_j| >= |g_j|``).
    """
    _check_flat_pair("prev", prev, g)
    sign_mode = prev.dtype == torch.int8
    if resolve_backend(g, backend) == "triton":
        from ._sign_triton import sign_stats_triton

        part = sign_stats_triton(g.contiguous().view(-1), prev.contiguous().view(-1))
        if sign_mode:
            return torch.stack(
                [part[:, 0].sum(), part[:, 1].sum(), part[:, 2].max(), part[:, 3].min()]
            )
        return torch.stack([part[:, 0].sum(), part[:, 1].sum(), part[:, 2].sum(), part[:, 3].sum()])
    gf = g.reshape(-1).float()
    if sign_mode:
        s = prev.reshape(-1).float()
        flip = (-s * gf).clamp_min(0).sum()
        return torch.stack([flip, (gf * s).sum(), gf.max(), gf.min()])
    pf = prev.reshape(-1).float()
    zero = gf.new_zeros(())
    return torch.stack([(gf - pf).abs().sum(), (gf * pf.sign()).sum(), zero, zero])


@torch.no_grad()
def sign_update_(
    p: torch.Tensor,
    g: torch.Tensor,
    gamma: float,
    *,
    decay: float = 1.0,
    buf: torch.Tensor | None = None,
    buf_mode: int = BUF_NONE,
    beta: float = 0.0,
    sign_out: torch.Tensor | None = None,
    backend: str | None = None,
) -> None:
    """In place: ``p <- decay * p - gamma * sign(d)``, refreshing stored state in the same pass.

    Parameters
    ----------
    p : torch.Tensor
        Parameter, updated in place (must be contiguous).
    g : torch.Tensor
        Gradient.
    gamma : float
        Step size.
    decay : float
        Multiplier on ``p`` (decoupled weight decay ``1 - gamma * wd``).
    buf : torch.Tensor, optional
        Dense state. ``buf_mode=BUF_COPY``: ``d = g`` and ``buf <- g``. ``buf_mode=BUF_EMA``:
        ``buf <- beta * buf + (1 - beta) * g`` and ``d = buf``. ``BUF_NONE``: ``d = g``.
    buf_mode : int
        One of ``BUF_NONE``, ``BUF_COPY``, ``BUF_EMA``.
    beta : float
        Momentum for ``BUF_EMA``.
    sign_out : torch.Tensor, optional
        ``int8`` tensor receiving ``sign(d)``.
    backend : {"auto", "triton", "torch"}, optional
        Override the backend choice.
    """
    if buf_mode not in (BUF_NONE, BUF_COPY, BUF_EMA):
        raise ValueError(f"buf_mode must be 0, 1 or 2, got {buf_mode!r}")
    if buf_mode != BUF_NONE and buf is None:
        raise ValueError("buf is required when buf_mode is not BUF_NONE")
    if not p.is_contiguous():
        raise ValueError("p must be contiguous")
    _check_flat_pair("g", g, p)
    if buf is not None:
        _check_flat_pair("buf", buf, p)
    if sign_out is not None:
        _check_flat_pair("sign_out", sign_out, p)
        if sign_out.dtype != torch.int8:
            raise TypeError(f"sign_out must be int8, got {sign_out.dtype}")
    if resolve_backend(p, backend) == "triton":
        from ._sign_triton import sign_update_triton

        sign_update_triton(
            p.view(-1), g.contiguous().view(-1), None if buf is None else buf.view(-1),
            None if sign_out is None else sign_out.view(-1), gamma, decay, beta, buf_mode,
        )
        return
    if buf_mode == BUF_EMA:
        buf.mul_(beta).add_(g.reshape(buf.shape), alpha=1.0 - beta)
        d = buf
    else:
        if buf_mode == BUF_COPY:
            buf.copy_(g.reshape(buf.shape))
        d = g
    s = d.reshape(p.shape).sign()
    if decay != 1.0:
        p.mul_(decay)
    p.add_(s.to(p.dtype), alpha=-gamma)
    if sign_out is not None:
        sign_out.copy_(s.reshape(sign_out.shape))
