"""Triton kernel of the lookahead-2 mask. Imported lazily, like the other ``_*_triton`` modules.

One program per (row, block of candidates j); it streams the row's nodes k in blocks, so the
B x n x n intermediate of the PyTorch fallback is never materialised.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _mask_kernel(TRAVEL, START, END, CUR, TIME, UNVIS, PEND, OUT, n, s_b, s_i, s_j, tol,
                 BLOCK_J: tl.constexpr, BLOCK_K: tl.constexpr):
    b = tl.program_id(0)
    offs_j = tl.program_id(1) * BLOCK_J + tl.arange(0, BLOCK_J)
    in_j = offs_j < n
    cur = tl.load(CUR + b)
    t = tl.load(TIME + b)
    d_cur = tl.load(TRAVEL + b * s_b + cur * s_i + offs_j * s_j, mask=in_j, other=0.0)
    e_j = tl.load(START + b * n + offs_j, mask=in_j, other=0.0)
    l_j = tl.load(END + b * n + offs_j, mask=in_j, other=0.0)
    a_j = tl.maximum(t + d_cur, e_j)
    ok = (a_j <= l_j + tol) & (tl.load(UNVIS + b * n + offs_j, mask=in_j, other=0) != 0) & in_j
    for k0 in range(0, n, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        in_k = offs_k < n
        e_k = tl.load(START + b * n + offs_k, mask=in_k, other=0.0)
        l_k = tl.load(END + b * n + offs_k, mask=in_k, other=0.0)
        p_k = (tl.load(PEND + b * n + offs_k, mask=in_k, other=0) != 0) & in_k
        d = tl.load(TRAVEL + b * s_b + offs_j[:, None] * s_i + offs_k[None, :] * s_j,
                    mask=in_j[:, None] & in_k[None, :], other=0.0)
        a_k = tl.maximum(a_j[:, None] + d, e_k[None, :])
        fine = (a_k <= l_k[None, :] + tol) | (p_k[None, :] == 0) | (offs_j[:, None] == offs_k[None, :])
        ok = ok & (tl.min(fine.to(tl.int32), axis=1) != 0)
    tl.store(OUT + b * n + offs_j, ok.to(tl.int8), mask=in_j)


def lookahead2_mask_triton(travel: torch.Tensor, start: torch.Tensor, end: torch.Tensor,
                           current: torch.Tensor, time: torch.Tensor, unvisited: torch.Tensor,
                           pending: torch.Tensor, tol: float) -> torch.Tensor:
    B, n = start.shape
    out = torch.empty((B, n), dtype=torch.int8, device=travel.device)
    start, end, time = start.contiguous(), end.contiguous(), time.contiguous()
    block = max(16, min(64, triton.next_power_of_2(n)))
    grid = (B, triton.cdiv(n, block))
    _mask_kernel[grid](travel, start, end, current.contiguous(), time,
                       unvisited.to(torch.int8).contiguous(), pending.to(torch.int8).contiguous(), out,
                       n, travel.stride(0), travel.stride(1), travel.stride(2), tol,
                       BLOCK_J=block, BLOCK_K=block)
    return out.bool()
