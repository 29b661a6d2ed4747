"""LazyMask's lookahead-2 feasibility mask (LMask's hot path: B x n x n work per step), one dispatch point.

For each row ``b`` at node ``i = current[b]`` with resource ``t = time[b]`` (the arrival time, or
the load for draft limits), node ``j`` is allowed iff it is unvisited and::

    a_j = max(t + travel[b, i, j], start[b, j]) <= end[b, j] + tol
    max(a_j + travel[b, j, k], start[b, k]) <= end[b, k] + tol   for every pending k != j

(TSPTW: travel = distances, [start, end] = the windows; TSPDL: travel[b, i, j] = demand[b, j],
start = 0, end = the drafts.) Triton on CUDA tensors, exact PyTorch elsewhere; both evaluate
the same float expressions, so they agree bit for bit.

References
----------
.. [1] T. Li, H. Zou, J. Wu, Z. Wen, "Learn to Solve Constrained Routing Problems with Lazy
   Masking", ICLR 2026, arXiv:2505.17938 (``get_action_mask``, ``lookahead_step=2``).
"""

from __future__ import annotations

import torch

from ._backend import resolve_backend

TOLERANCE = 1e-6


def _check(travel: torch.Tensor, start: torch.Tensor, end: torch.Tensor, current: torch.Tensor,
           time: torch.Tensor, unvisited: torch.Tensor, pending: torch.Tensor) -> None:
    if not isinstance(travel, torch.Tensor) or travel.dim() != 3 or travel.shape[1] != travel.shape[2]:
        raise ValueError(f"travel: expected a (B, n, n) tensor, got {getattr(travel, 'shape', travel)}")
    B, n = travel.shape[0], travel.shape[1]
    for name, t, shape in (("start", start, (B, n)), ("end", end, (B, n)), ("current", current, (B,)),
                           ("time", time, (B,)), ("unvisited", unvisited, (B, n)),
                           ("pending", pending, (B, n))):
        if not isinstance(t, torch.Tensor) or tuple(t.shape) != shape:
            raise ValueError(f"{name}: expected a tensor of shape {shape}, got {getattr(t, 'shape', t)}")
        if t.device != travel.device:
            raise ValueError(f"{name}: must be on {travel.device}, got {t.device}")


def lookahead2_mask(travel: torch.Tensor, start: torch.Tensor, end: torch.Tensor, current: torch.Tensor,
                    time: torch.Tensor, unvisited: torch.Tensor, pending: torch.Tensor, *,
                    backend: str | None = None) -> torch.Tensor:
    """The ``(B, n)`` bool lookahead-2 mask (see the module docstring).

    Parameters
    ----------
    travel : torch.Tensor
        ``(B, n, n)`` travel costs (float; may be an expanded view).
    start, end : torch.Tensor
        ``(B, n)`` lower and upper limits of the resource at each node.
    current : torch.Tensor
        ``(B,)`` int64 current nodes.
    time : torch.Tensor
        ``(B,)`` resource on leaving the current node.
    unvisited : torch.Tensor
        ``(B, n)`` bool candidates.
    pending : torch.Tensor
        ``(B, n)`` bool nodes that must still be reachable (the unvisited, plus the depot for TSPTW).
    backend : {"auto", "triton", "torch"}, optional
        Override the backend choice.
    """
    _check(travel, start, end, current, time, unvisited, pending)
    if resolve_backend(travel, backend) == "triton":
        from ._routing_triton import lookahead2_mask_triton

        return lookahead2_mask_triton(travel, start, end, current, time, unvisited, pending, TOLERANCE)
    B, n = start.shape
    rows = torch.arange(B, device=travel.device)
    arrival = torch.maximum(time[:, None] + travel[rows, current], start)
    arrival2 = torch.maximum(arrival[:, :, None] + travel, start[:, None, :])
    eye = torch.eye(n, dtype=torch.bool, device=travel.device)
    reach = (arrival2 <= end[:, None, :] + TOLERANCE) | ~pending[:, None, :] | eye
    return unvisited & (arrival <= end + TOLERANCE) & reach.all(dim=2)
