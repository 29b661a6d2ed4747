"""Differentiable objectives of the data-manifold experiments (torch, batched, minimised)."""

from __future__ import annotations

import torch

from optiforge.blackbox.manifold.descent import Objective


def tracking_objective(reference: torch.Tensor, inputs: int = 2, r: float = 0.01,
                       q: float = 1.0) -> Objective:
    """``f(u, y) = sum_k r |u_k|^2 + q |y_k - ref_k|^2`` on trajectories ``(B, T, U + Y)``.

    The paper's finite-horizon reference-tracking cost (``R = r I``, ``Q = q I``).
    """
    ref = torch.as_tensor(reference)

    def f(x: torch.Tensor) -> torch.Tensor:
        u, y = x[..., :inputs], x[..., inputs:]
        return r * (u**2).sum(dim=(-2, -1)) + q * ((y - ref.to(x.dtype)) ** 2).sum(dim=(-2, -1))

    return f


def brockett_objective(A: torch.Tensor, N: torch.Tensor) -> Objective:
    """Brockett's cost ``f(X) = tr(X^T A X N)`` on flattened ``n x n`` matrices ``(B, n*n)``.

    Over O(n) (and SO(n)) with symmetric ``A`` and ``N = diag(nu)``, ``nu`` increasing, the
    minimum pairs ``A``'s eigenvalues in increasing order with ``nu`` in decreasing order
    (rearrangement): ``min f = sum_i lambda_i nu_{n+1-i}``; see :func:`brockett_minimum`.
    """
    A, N = torch.as_tensor(A), torch.as_tensor(N)
    n = A.shape[0]

    def f(x: torch.Tensor) -> torch.Tensor:
        X = x.reshape(-1, n, n)
        return torch.einsum("bji,jk,bkl,li->b", X, A.to(x.dtype), X, N.to(x.dtype))

    return f


def brockett_minimum(A: torch.Tensor, N: torch.Tensor) -> float:
    """The minimum of :func:`brockett_objective` over O(n) (= over SO(n))."""
    lam = torch.linalg.eigvalsh(torch.as_tensor(A, dtype=torch.float64))
    nu = torch.sort(torch.diagonal(torch.as_tensor(N, dtype=torch.float64)), descending=True).values
    return float((lam * nu).sum())


def linear_objective(c: torch.Tensor) -> Objective:
    """``f(x) = <c, x>`` (its minimiser on a sphere-like manifold is known in closed form)."""
    c = torch.as_tensor(c)

    def f(x: torch.Tensor) -> torch.Tensor:
        return (x.flatten(1) * c.reshape(1, -1).to(x.dtype)).sum(dim=1)

    return f
