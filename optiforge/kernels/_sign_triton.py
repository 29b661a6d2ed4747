"""Triton kernels for sign-descent steps (ALIAS). Imported lazily, like ``_polar_triton``.

Both kernels work on flat contiguous tensors. The statistics kernel writes one row of partial
results per program (summed or maxed by the caller), which keeps the reduction deterministic.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _stats_kernel(G, PREV, OUT, n, SIGN_PREV: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(G + offs, mask=mask, other=0.0).to(tl.float32)
    prev = tl.load(PREV + offs, mask=mask, other=0).to(tl.float32)
    s = tl.where(prev > 0, 1.0, tl.where(prev < 0, -1.0, 0.0))
    inner = tl.sum(g * s, axis=0)
    if SIGN_PREV:
        # Where the sign flipped, |g - g_prev| = |g| + |g_prev| >= |g|: the flip mass is a lower
        # bound of ||g - g_prev||_1 computable from the stored signs alone.
        flip = tl.where(mask, tl.maximum(-s * g, 0.0), 0.0)
        tl.store(OUT + pid * 4 + 0, tl.sum(flip, axis=0))
        tl.store(OUT + pid * 4 + 2, tl.max(tl.where(mask, g, -float("inf")), axis=0))
        tl.store(OUT + pid * 4 + 3, tl.min(tl.where(mask, g, float("inf")), axis=0))
    else:
        tl.store(OUT + pid * 4 + 0, tl.sum(tl.abs(g - prev), axis=0))
        tl.store(OUT + pid * 4 + 2, 0.0)
        tl.store(OUT + pid * 4 + 3, 0.0)
    tl.store(OUT + pid * 4 + 1, inner)


@triton.jit
def _update_kernel(
    P, G, BUF, SGN, n, gamma, decay, beta,
    BUF_MODE: tl.constexpr, WRITE_SIGN: tl.constexpr, BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(G + offs, mask=mask, other=0.0).to(tl.float32)
    d = g
    if BUF_MODE == 2:
        m = tl.load(BUF + offs, mask=mask, other=0.0).to(tl.float32)
        d = beta * m + (1.0 - beta) * g
        tl.store(BUF + offs, d.to(BUF.dtype.element_ty), mask=mask)
    if BUF_MODE == 1:
        tl.store(BUF + offs, g.to(BUF.dtype.element_ty), mask=mask)
    s = tl.where(d > 0, 1.0, tl.where(d < 0, -1.0, 0.0))
    p = tl.load(P + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(P + offs, (p * decay - gamma * s).to(P.dtype.element_ty), mask=mask)
    if WRITE_SIGN:
        tl.store(SGN + offs, s.to(tl.int8), mask=mask)


def sign_stats_triton(g: torch.Tensor, prev: torch.Tensor) -> torch.Tensor:
    n = g.numel()
    nblocks = triton.cdiv(n, BLOCK)
    out = torch.empty((nblocks, 4), dtype=torch.float32, device=g.device)
    _stats_kernel[(nblocks,)](
        g, prev, out, n,
        SIGN_PREV=prev.dtype == torch.int8, BLOCK=BLOCK,
    )
    return out


def sign_update_triton(
    p: torch.Tensor, g: torch.Tensor, buf: torch.Tensor | None, sign_out: torch.Tensor | None,
    gamma: float, decay: float, beta: float, buf_mode: int,
) -> None:
    n = p.numel()
    dummy = p  # never read or written when its mode flag is off
    _update_kernel[(triton.cdiv(n, BLOCK),)](
        p, g, buf if buf is not None else dummy, sign_out if sign_out is not None else dummy,
        n, float(gamma), float(decay), float(beta),
        BUF_MODE=buf_mode, WRITE_SIGN=sign_out is not None, BLOCK=BLOCK,
    )
