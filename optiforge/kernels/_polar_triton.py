"""Triton kernels for one odd-quintic polar step ``X <- aX + (bA + cA^2) X`` with ``A = XX^T``.

Imported lazily (only when the Triton backend is chosen) because ``triton.jit`` decides between
compiled and interpreted kernels at decoration time, from ``TRITON_INTERPRET``.

The step runs as three launches over a batch of ``(m, n)`` matrices with ``m <= n``:

1. ``A = X X^T``: only tiles on or above the diagonal are computed; each is written to both
   ``A[i, j]`` and ``A[j, i]``, halving the Gram product's work.
2. ``B = bA + cA A``: ``A`` is symmetric, so ``B`` is too; the same upper-tile scheme applies and
   the ``bA`` term is fused into the epilogue of the ``A A`` product.
3. ``X' = aX + B X``: one GEMM with the ``aX`` term fused into its epilogue.

Accumulation is fp32; ``A`` and ``B`` are stored in ``X``'s dtype, as the PyTorch fallback does.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._backend import interpreter_enabled


@triton.jit
def _sym_product_kernel(
    L, R, C, OUT, alpha, beta,
    M, K,
    stride_lb, stride_lm, stride_lk,
    stride_rb, stride_rm, stride_rk,
    stride_ob, stride_om, stride_on,
    BLOCK: tl.constexpr, BLOCK_K: tl.constexpr, DOT_F32: tl.constexpr, HAS_C: tl.constexpr,
):
    # OUT = alpha * L R^T + beta * C for a product known to be symmetric (L R^T = R L^T):
    # with L = R = X it is the Gram matrix; with L = R = A (symmetric) it is A A.
    pid_i = tl.program_id(0)
    pid_j = tl.program_id(1)
    bat = tl.program_id(2)
    if pid_i > pid_j:
        return
    rows = pid_i * BLOCK + tl.arange(0, BLOCK)
    cols = pid_j * BLOCK + tl.arange(0, BLOCK)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + ks
        lt = tl.load(
            L + bat * stride_lb + rows[:, None] * stride_lm + kk[None, :] * stride_lk,
            mask=(rows[:, None] < M) & (kk[None, :] < K), other=0.0,
        )
        rt = tl.load(
            R + bat * stride_rb + cols[None, :] * stride_rm + kk[:, None] * stride_rk,
            mask=(cols[None, :] < M) & (kk[:, None] < K), other=0.0,
        )
        if DOT_F32:
            # "ieee": on a GPU, tl.dot rounds fp32 tiles to TF32 by default (a 10-bit mantissa,
            # ~1e-2 relative error seen on an H200), which the exact fallback does not do.
            acc += tl.dot(lt.to(tl.float32), rt.to(tl.float32), input_precision="ieee")
        else:
            acc += tl.dot(lt, rt)
    acc = acc * alpha
    if HAS_C:
        # C is allocated like OUT, so it shares OUT's strides.
        ct = tl.load(
            C + bat * stride_ob + rows[:, None] * stride_om + cols[None, :] * stride_on,
            mask=(rows[:, None] < M) & (cols[None, :] < M), other=0.0,
        )
        acc += beta * ct.to(tl.float32)
    out = acc.to(OUT.dtype.element_ty)
    mask = (rows[:, None] < M) & (cols[None, :] < M)
    tl.store(OUT + bat * stride_ob + rows[:, None] * stride_om + cols[None, :] * stride_on, out, mask=mask)
    if pid_i != pid_j:
        tl.store(
            OUT + bat * stride_ob + cols[None, :] * stride_om + rows[:, None] * stride_on,
            out, mask=mask,
        )


@triton.jit
def _axpbx_kernel(
    B, X, OUT, a,
    M, N,
    stride_bb, stride_bm, stride_bk,
    stride_xb, stride_xm, stride_xn,
    stride_ob, stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, DOT_F32: tl.constexpr,
):
    # OUT = a X + B X with B (M x M), X (M x N).
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    bat = tl.program_id(2)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, M, BLOCK_K):
        kk = k0 + ks
        bt = tl.load(
            B + bat * stride_bb + rows[:, None] * stride_bm + kk[None, :] * stride_bk,
            mask=(rows[:, None] < M) & (kk[None, :] < M), other=0.0,
        )
        xt = tl.load(
            X + bat * stride_xb + kk[:, None] * stride_xm + cols[None, :] * stride_xn,
            mask=(kk[:, None] < M) & (cols[None, :] < N), other=0.0,
        )
        if DOT_F32:
            acc += tl.dot(bt.to(tl.float32), xt.to(tl.float32), input_precision="ieee")
        else:
            acc += tl.dot(bt, xt)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    xs = tl.load(X + bat * stride_xb + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask, other=0.0)
    acc += a * xs.to(tl.float32)
    tl.store(
        OUT + bat * stride_ob + rows[:, None] * stride_om + cols[None, :] * stride_on,
        acc.to(OUT.dtype.element_ty), mask=mask,
    )


def polar_step_triton(x: torch.Tensor, a: float, b: float, c: float) -> torch.Tensor:
    """One polar step on a batch ``x`` of shape ``(batch, m, n)``, ``m <= n``."""
    bsz, m, n = x.shape
    # The interpreter mishandles bf16/fp16 arithmetic inside tl.dot, so it computes the product
    # from fp32 copies of the same (exactly representable) values; on a GPU, 16-bit tiles feed
    # the tensor cores directly. fp32 storage always uses fp32 tiles.
    dot_f32 = interpreter_enabled() or x.dtype == torch.float32
    block, block_k = 64, 32
    a_mat = torch.empty((bsz, m, m), dtype=x.dtype, device=x.device)
    b_mat = torch.empty_like(a_mat)
    tiles = triton.cdiv(m, block)
    grid = (tiles, tiles, bsz)
    _sym_product_kernel[grid](
        x, x, a_mat, a_mat, 1.0, 0.0, m, n,
        *x.stride(), *x.stride(), *a_mat.stride(),
        BLOCK=block, BLOCK_K=block_k, DOT_F32=dot_f32, HAS_C=False,
    )
    _sym_product_kernel[grid](
        a_mat, a_mat, a_mat, b_mat, float(c), float(b), m, m,
        *a_mat.stride(), *a_mat.stride(), *b_mat.stride(),
        BLOCK=block, BLOCK_K=block_k, DOT_F32=dot_f32, HAS_C=True,
    )
    out = torch.empty_like(x)
    grid2 = (triton.cdiv(m, block), triton.cdiv(n, block), bsz)
    _axpbx_kernel[grid2](
        b_mat, x, out, float(a), m, n,
        *b_mat.stride(), *x.stride(), *out.stride(),
        BLOCK_M=block, BLOCK_N=block, BLOCK_K=block_k, DOT_F32=dot_f32,
    )
    return out
