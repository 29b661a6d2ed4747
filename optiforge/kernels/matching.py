"""The slack scan of batched push-relabel matching, with one dispatch point.

Push-relabel keeps, on every level ``i``, duals ``y_i(r)`` of requests and ``y_i(s)`` of
servers, and the slack of an edge is ``d_i(r, s) + 1 - y_i(r) - y_i(s)``. The authors' GPU code
stores the slacks (``levels x requests x servers``) and rewrites them after every relabel and
push. Here the slacks of the requests that are free in a phase are derived on the fly from the
stored scaled distances (one row per request, at the level it resides on) and a per-level server
table, in one pass that also does the two things a phase needs from them:

* the **relabel amount**: the smallest slack of the row over the servers visible on its level;
* the **admissible edge** the request proposes to after that relabel: among the servers attaining
  the minimum, a free one first, then a pseudo-random one (a hash of row, server and ``seed``, so
  that concurrent requests spread over tied servers instead of colliding on the lowest index).

``slack_scan`` packs both into one int64 per row, ``t_min << 32 | (2**32 - 1 - key)`` with
``t = d - offset`` and ``key = free << 31 | hash7 << 24 | server``, so the row minimum of the
packed value is the lexicographic (smallest ``t``, largest key) pair. Triton on CUDA tensors,
PyTorch elsewhere; both compute the identical integers.
"""

from __future__ import annotations

import torch

from ._backend import resolve_backend

INVISIBLE = -(2**30)
"""``offset`` value of a server a level cannot see (a slack no relabel ever reaches)."""
MAX_SERVERS = 2**24
EMPTY = 2**63 - 1
"""Packed value of a row with no eligible server at all."""
HASH_P = 2**31 - 1
_LOW = 2**32 - 1


def hash7(ids: torch.Tensor, servers: torch.Tensor, seed: int) -> torch.Tensor:
    """7-bit pseudo-random priority of (row id, server) pairs (int64, broadcasting)."""
    h = (ids * 40503 + servers * 34283 + seed * 49842) % HASH_P
    return ((h * 48271) % HASH_P >> 12) & 127


def unpack(packed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Split ``slack_scan``'s output into ``(t_min, server)`` (server -1 for an empty row)."""
    empty = packed == EMPTY
    t_min = packed >> 32
    server = (_LOW - (packed & _LOW)) & (MAX_SERVERS - 1)
    return t_min, torch.where(empty, torch.full_like(server, -1), server)


def _scan_torch(dhat: torch.Tensor, rows: torch.Tensor, ids: torch.Tensor, levels: torch.Tensor,
                offset: torch.Tensor, free: torch.Tensor, blocked: torch.Tensor | None,
                seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    n = dhat.shape[1]
    servers = torch.arange(n, device=dhat.device, dtype=torch.int64)
    base_key = (free.to(torch.int64) << 31) | servers
    out = torch.empty((rows.shape[0], 2), dtype=torch.int64, device=dhat.device)
    chunk = max(1, (1 << 23) // max(n, 1))  # ~64 MB of int64 temporaries per chunk
    for lo in range(0, rows.shape[0], chunk):
        r = rows[lo:lo + chunk]
        t = dhat[r].to(torch.int64) - offset[levels[lo:lo + chunk]].to(torch.int64)
        key = base_key | (hash7(ids[lo:lo + chunk, None], servers, seed) << 24)
        packed = (t << 32) | (_LOW - key)
        if blocked is not None:
            packed = packed.masked_fill(blocked, EMPTY)
        if n >= 2:
            out[lo:lo + chunk] = torch.topk(packed, 2, dim=1, largest=False, sorted=True).values
        else:
            out[lo:lo + chunk, 0] = packed[:, 0]
            out[lo:lo + chunk, 1] = EMPTY
    return out[:, 0], out[:, 1]


def slack_scan(
    dhat: torch.Tensor,
    rows: torch.Tensor,
    ids: torch.Tensor,
    levels: torch.Tensor,
    offset: torch.Tensor,
    free: torch.Tensor,
    *,
    seed: int = 0,
    blocked: torch.Tensor | None = None,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Row minimum of the slacks and the admissible server to propose, packed in one int64.

    Parameters
    ----------
    dhat : torch.Tensor
        ``(m, n)`` int32 scaled distances, one row per request at its residence level.
    rows : torch.Tensor
        ``(f,)`` int64 rows of ``dhat`` to scan (the free requests).
    ids : torch.Tensor
        ``(f,)`` int64 request ids, used only by the tie-breaking hash (``< 2**24``).
    levels : torch.Tensor
        ``(f,)`` int64 residence level of each scanned row.
    offset : torch.Tensor
        ``(levels, n)`` int32: ``y_i(s)`` where server ``s`` is visible on level ``i``, else
        :data:`INVISIBLE`. The slack of ``(r, s)`` is ``dhat[r, s] - offset[i, s] + 1 - y_i(r)``.
    free : torch.Tensor
        ``(n,)`` bool, servers no request holds (preferred among tied admissible servers).
    seed : int
        Varies the tie-breaking hash (e.g. the phase number), ``0 <= seed < 2**31``.
    blocked : torch.Tensor, optional
        ``(n,)`` bool, servers to leave out entirely (taken earlier in the same phase).
    backend : {"auto", "triton", "torch"}, optional
        Override the backend choice (see :mod:`optiforge.kernels`).

    Returns
    -------
    best, second : torch.Tensor
        ``(f,)`` int64 each: the smallest and second smallest packed values of the row.
        :func:`unpack` of ``best`` gives ``t_min = min_s dhat - offset`` (so the minimum slack
        is ``t_min + 1 - y_i(r)``) and the chosen server among the minimisers;
        ``second >> 32`` is the smallest ``t`` over the *other* servers (a bid's second-best
        slack). :data:`EMPTY` where no server is left.
    """
    for name, t, dtype in (("dhat", dhat, torch.int32), ("offset", offset, torch.int32),
                           ("rows", rows, torch.int64), ("ids", ids, torch.int64),
                           ("levels", levels, torch.int64), ("free", free, torch.bool)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype != dtype:
            raise TypeError(f"{name} must be {dtype}, got {t.dtype}")
    n = dhat.shape[1]
    if n > MAX_SERVERS:
        raise ValueError(f"dhat: at most {MAX_SERVERS} servers, got {n}")
    if offset.ndim != 2 or offset.shape[1] != n or free.shape != (n,):
        raise ValueError(f"offset must be (levels, {n}) and free ({n},)")
    if not (rows.shape == ids.shape == levels.shape) or rows.ndim != 1:
        raise ValueError("rows, ids and levels must be 1-D of the same length")
    if blocked is not None and (blocked.dtype != torch.bool or blocked.shape != (n,)):
        raise ValueError(f"blocked must be a ({n},) bool tensor")
    if rows.numel() == 0:
        empty = torch.empty(0, dtype=torch.int64, device=dhat.device)
        return empty, empty.clone()
    if resolve_backend(dhat, backend) == "triton":
        from ._matching_triton import slack_scan_triton

        return slack_scan_triton(dhat.contiguous(), rows.contiguous(), ids.contiguous(),
                                 levels.contiguous(), offset.contiguous(), free.contiguous(),
                                 None if blocked is None else blocked.contiguous(), int(seed))
    return _scan_torch(dhat, rows, ids, levels, offset, free, blocked, int(seed))
