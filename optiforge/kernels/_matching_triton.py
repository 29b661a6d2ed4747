"""Triton kernel of the push-relabel slack scan. Imported lazily, like ``_polar_triton``.

One program per scanned row walks the servers in blocks and keeps the two smallest values of
the packed ``(t << 32) | (2**32 - 1 - key)`` (see :mod:`optiforge.kernels.matching`). Every
operation is on integers, so the result equals the PyTorch fallback bit for bit.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .matching import EMPTY, HASH_P

BLOCK = 1024


# Triton compiles an int argument equal to 1 as a constant (no `.to`): seed = 1 failed on an H200.
@triton.jit(do_not_specialize=["seed"])
def _scan_kernel(DHAT, ROWS, IDS, LEVELS, OFFSET, FREE, BLOCKED, OUT, n, seed,
                 EMPTY_V: tl.constexpr, P: tl.constexpr, HAS_BLOCKED: tl.constexpr,
                 BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    row = tl.load(ROWS + pid).to(tl.int64)
    rid = tl.load(IDS + pid).to(tl.int64)
    lvl = tl.load(LEVELS + pid).to(tl.int64)
    sd = seed.to(tl.int64)
    n64 = n.to(tl.int64)
    empty = tl.full((BLOCK,), EMPTY_V, tl.int64)
    low = tl.full((BLOCK,), 4294967295, tl.int64)  # 2**32 - 1, built as int64 (not a uint32 literal)
    best = empty
    second = empty
    for start in range(0, n, BLOCK):
        s = start + tl.arange(0, BLOCK).to(tl.int64)
        mask = s < n64
        d = tl.load(DHAT + row * n64 + s, mask=mask, other=0).to(tl.int64)
        o = tl.load(OFFSET + lvl * n64 + s, mask=mask, other=0).to(tl.int64)
        fr = tl.load(FREE + s, mask=mask, other=0).to(tl.int64)
        h = (rid * 40503 + s * 34283 + sd * 49842) % P
        h = ((h * 48271) % P >> 12) & 127
        key = (fr << 31) | (h << 24) | s
        packed = ((d - o) << 32) | (low - key)
        keep = mask
        if HAS_BLOCKED:
            keep = keep & (tl.load(BLOCKED + s, mask=mask, other=1) == 0)
        packed = tl.where(keep, packed, empty)
        # Two smallest per lane (packed values are distinct: the key holds the server index).
        second = tl.minimum(second, tl.maximum(best, packed))
        best = tl.minimum(best, packed)
    b1 = tl.min(best, axis=0)
    # Second smallest overall: the smallest of the other lanes' bests and every lane's second.
    b2 = tl.minimum(tl.min(tl.where(best == b1, empty, best), axis=0), tl.min(second, axis=0))
    tl.store(OUT + pid * 2, b1)
    tl.store(OUT + pid * 2 + 1, b2)


def slack_scan_triton(dhat: torch.Tensor, rows: torch.Tensor, ids: torch.Tensor, levels: torch.Tensor,
                      offset: torch.Tensor, free: torch.Tensor, blocked: torch.Tensor | None,
                      seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    f, n = rows.shape[0], dhat.shape[1]
    out = torch.empty((f, 2), dtype=torch.int64, device=dhat.device)
    free8 = free.to(torch.int8)
    blocked8 = free8 if blocked is None else blocked.to(torch.int8)  # never read when absent
    _scan_kernel[(f,)](dhat, rows, ids, levels, offset, free8, blocked8, out, n, seed,
                       EMPTY_V=EMPTY, P=HASH_P, HAS_BLOCKED=blocked is not None, BLOCK=BLOCK)
    return out[:, 0], out[:, 1]
