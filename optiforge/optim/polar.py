"""Polar decomposition by odd polynomial iterations: Polar Express and Newton--Schulz.

Both approximate the polar factor ``U V^T`` of ``G = U S V^T`` by repeatedly applying an odd
quintic ``p(x) = a x + b x^3 + c x^5`` to the singular values (``X <- aX + bXX^TX +
c(XX^T)^2X``), after scaling ``G`` so its singular values lie in ``(0, 1]``. The matmul-heavy
step is :func:`optiforge.kernels.polar_step`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import repeat

import numpy as np
import torch

from ..kernels import polar_step

Coefficients = tuple[float, float, float]

#: Polar Express table from the paper's code, before the safety factor:
#: ``optimal_composition(l=1e-3, num_iters=8, safety_factor_eps=1e-2, cushion=0.02)``; the last
#: row (the Newton--Schulz limit) repeats for all later steps. ``polar_express_coefficients()``
#: regenerates it (tests check they agree).
POLAR_EXPRESS_RAW: tuple[Coefficients, ...] = (
    (8.28721201814563, -23.595886519098837, 17.300387312530933),
    (4.107059111542203, -2.9478499167379106, 0.5448431082926601),
    (3.9486908534822946, -2.908902115962949, 0.5518191394370137),
    (3.3184196573706015, -2.488488024314874, 0.51004894012372),
    (2.300652019954817, -1.6689039845747493, 0.4188073119525673),
    (1.891301407787398, -1.2679958271945868, 0.37680408948524835),
    (1.8750014808534479, -1.2500016453999487, 0.3750001645474248),
    (1.875, -1.25, 0.375),
)

#: Keller Jordan's fixed quintic (used by KellerJordan/Muon and ``torch.optim.Muon``).
JORDAN: tuple[Coefficients, ...] = ((3.4445, -4.7750, 2.0315),)

#: Jiacheng You's six per-step quintics (defined for six steps; the last repeats).
YOU: tuple[Coefficients, ...] = tuple(
    (a / 1024, b / 1024, c / 1024)
    for a, b, c in (
        (3955, -8306, 5008), (3735, -6681, 3463), (3799, -6499, 3211),
        (4019, -6385, 2906), (2677, -3029, 1162), (2172, -1833, 682),
    )
)

NEWTON_SCHULZ_PRESETS: dict[str, tuple[Coefficients, ...]] = {"jordan": JORDAN, "you": YOU}

#: Cushion that reproduces the published table (the paper's code default, about 0.024).
DEFAULT_CUSHION = 0.02407327424182761


def optimal_quintic(lo: float, hi: float) -> Coefficients:
    """Odd quintic ``p`` minimising ``max_{x in [lo, hi]} |1 - p(x)|`` (simplified Remez).

    Parameters
    ----------
    lo, hi : float
        Interval, ``0 < lo <= hi``.

    Returns
    -------
    tuple of float
        ``(a, b, c)``.

    Notes
    -----
    The optimum equioscillates at ``lo``, two interior extrema ``q < r`` and ``hi``
    (Amsel et al., 2025, Alg. 3). Each round solves the 4x4 linear system for ``(a, b, c, E)``
    with alternating signs of the error ``E``, then moves ``q, r`` to the roots of
    ``p'(x) = a + 3b x^2 + 5c x^4``, a quadratic in ``x^2``.
    """
    if not 0 < lo <= hi:
        raise ValueError(f"need 0 < lo <= hi, got lo={lo}, hi={hi}")
    if lo / hi >= 1 - 5e-6:
        # The equioscillating family tends to the Newton-Schulz quintic as the interval shrinks.
        return 15 / 8 / hi, -10 / 8 / hi**3, 3 / 8 / hi**5
    q, r = (3 * lo + hi) / 4, (lo + 3 * hi) / 4
    err_prev = math.inf
    a = b = c = 0.0
    for _ in range(100):
        lhs = np.array([[x, x**3, x**5, s] for x, s in ((lo, 1), (q, -1), (r, 1), (hi, -1))])
        a, b, c, err = np.linalg.solve(lhs, np.ones(4))
        disc = math.sqrt(9 * b * b - 20 * a * c)
        q, r = math.sqrt((-3 * b - disc) / (10 * c)), math.sqrt((-3 * b + disc) / (10 * c))
        if abs(err - err_prev) <= 1e-15:
            break
        err_prev = err
    return float(a), float(b), float(c)


def polar_express_coefficients(
    lower: float = 1e-3,
    num_iters: int = 8,
    *,
    cushion: float = DEFAULT_CUSHION,
    safety: float = 1.01,
) -> list[Coefficients]:
    """Greedy minimax composition of Polar Express (Amsel et al., 2025, Thm. 4.1 and Sec. 4.4).

    Parameters
    ----------
    lower : float
        Lower end ``l_1`` of the singular-value interval after normalisation (upper end 1).
    num_iters : int
        Number of polynomials. The last one is the Newton--Schulz limit ``(15, -10, 3)/8``.
    cushion : float
        Each polynomial is built for ``[max(l_t, cushion * u_t), u_t]`` and then rescaled so that
        ``p(l_t)`` and ``p(u_t)`` straddle 1 symmetrically; this bounds ``p(x)/x`` from below
        and keeps signs from flipping in bf16.
    safety : float
        Every polynomial except the last becomes ``p(x / safety)`` to absorb round-off that
        pushes singular values slightly above 1. ``1.0`` disables it.

    Returns
    -------
    list of tuple
        ``num_iters`` coefficient triples ``(a, b, c)``.
    """
    if not 0 < lower < 1:
        raise ValueError(f"lower must be in (0, 1), got {lower}")
    if num_iters < 1:
        raise ValueError(f"num_iters must be >= 1, got {num_iters}")
    if not 0 <= cushion < 1:
        raise ValueError(f"cushion must be in [0, 1), got {cushion}")
    if safety < 1:
        raise ValueError(f"safety must be >= 1, got {safety}")
    lo, hi = lower, 1.0
    raw: list[Coefficients] = []
    for _ in range(num_iters - 1):
        a, b, c = optimal_quintic(max(lo, cushion * hi), hi)
        if cushion * hi > lo:
            p_lo = a * lo + b * lo**3 + c * lo**5
            p_hi = a * hi + b * hi**3 + c * hi**5
            k = 2 / (p_lo + p_hi)
            a, b, c = a * k, b * k, c * k
        raw.append((a, b, c))
        lo = a * lo + b * lo**3 + c * lo**5
        hi = 2 - lo
    raw.append((15 / 8, -10 / 8, 3 / 8))
    return [_with_safety(t, safety) for t in raw[:-1]] + [raw[-1]]


def _with_safety(coeffs: Coefficients, safety: float) -> Coefficients:
    a, b, c = coeffs
    return a / safety, b / safety**3, c / safety**5


#: The table Polar Express runs with: :data:`POLAR_EXPRESS_RAW` with the 1.01 safety factor on
#: every row but the last.
POLAR_EXPRESS: tuple[Coefficients, ...] = tuple(
    _with_safety(t, 1.01) for t in POLAR_EXPRESS_RAW[:-1]
) + (POLAR_EXPRESS_RAW[-1],)


def _schedule(table: Sequence[Coefficients], steps: int) -> list[Coefficients]:
    table = list(table)
    return table[:steps] + list(repeat(table[-1], max(0, steps - len(table))))


def _check_matrix(G: torch.Tensor, steps: int, dtype: torch.dtype) -> None:
    if not isinstance(G, torch.Tensor):
        raise TypeError(f"G must be a torch.Tensor, got {type(G).__name__}")
    if G.ndim < 2:
        raise ValueError(f"G must have at least 2 dimensions, got shape {tuple(G.shape)}")
    if not G.is_floating_point():
        raise TypeError(f"G must be floating point, got {G.dtype}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be a non-negative int, got {steps!r}")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")


def odd_polynomial_polar(
    G: torch.Tensor,
    coefficients: Sequence[Coefficients],
    *,
    dtype: torch.dtype = torch.bfloat16,
    norm_safety: float = 1.0,
    eps: float = 1e-7,
    backend: str | None = None,
) -> torch.Tensor:
    """Run the odd-polynomial iteration ``X <- aX + bXX^TX + c(XX^T)^2X`` for each triple.

    Parameters
    ----------
    G : torch.Tensor
        Shape ``(..., m, n)``; leading dimensions are a batch.
    coefficients : sequence of (a, b, c)
        One triple per step.
    dtype : torch.dtype
        Working and output dtype.
    norm_safety : float
        ``X_0 = G / (||G||_F * norm_safety + eps)``, per matrix.
    eps : float
        Guards the division for a zero matrix.
    backend : {"auto", "triton", "torch"}, optional
        Kernel backend for the step.

    Returns
    -------
    torch.Tensor
        Same shape as ``G``, in ``dtype``.
    """
    shape = G.shape
    x = G.to(dtype).reshape(-1, shape[-2], shape[-1])
    tall = shape[-2] > shape[-1]
    if tall:
        # Work on the smaller Gram matrix.
        x = x.mT
    x = x / (torch.linalg.matrix_norm(x.float(), keepdim=True) * norm_safety + eps).to(dtype)
    x = x.contiguous()
    for a, b, c in coefficients:
        x = polar_step(x, a, b, c, backend=backend)
    if tall:
        x = x.mT
    return x.reshape(shape)


def polar_express(
    G: torch.Tensor,
    steps: int = 5,
    dtype: torch.dtype = torch.bfloat16,
    *,
    backend: str | None = None,
) -> torch.Tensor:
    """Approximate the polar factor ``U V^T`` of ``G`` with Polar Express.

    Parameters
    ----------
    G : torch.Tensor
        Matrix or batch of matrices, shape ``(..., m, n)``.
    steps : int
        Number of quintic iterations (the paper uses 5 for GPT-2; steps beyond the table repeat
        the Newton--Schulz limit polynomial).
    dtype : torch.dtype
        Working and output dtype (bf16 as in the paper; fp32 for more accuracy).
    backend : {"auto", "triton", "torch"}, optional
        Kernel backend (Triton on CUDA by default, PyTorch elsewhere).

    Returns
    -------
    torch.Tensor
        Orthogonalised ``G``, same shape, in ``dtype``.

    Notes
    -----
    Normalisation ``X_0 = G / (1.01 ||G||_F + 1e-7)``; tall matrices are transposed first. The
    coefficients are :data:`POLAR_EXPRESS` (greedy minimax quintics for ``l = 1e-3``, cushioned,
    with the 1.01 safety factor), as in the paper's reference code. No deviation from the paper.

    References
    ----------
    .. [1] N. Amsel, D. Persson, C. Musco, R. M. Gower, "The Polar Express: Optimal Matrix Sign
       Methods and Their Application to the Muon Algorithm", ICLR 2026, arXiv:2505.16932.
    """
    _check_matrix(G, steps, dtype)
    return odd_polynomial_polar(
        G, _schedule(POLAR_EXPRESS, steps), dtype=dtype, norm_safety=1.01, backend=backend
    )


def newton_schulz(
    G: torch.Tensor,
    steps: int = 5,
    coefficients: str | Sequence[Coefficients] = "jordan",
    dtype: torch.dtype = torch.bfloat16,
    *,
    backend: str | None = None,
) -> torch.Tensor:
    """Approximate the polar factor with a Newton--Schulz-style quintic iteration.

    Parameters
    ----------
    G : torch.Tensor
        Matrix or batch of matrices, shape ``(..., m, n)``.
    steps : int
        Number of iterations.
    coefficients : {"jordan", "you"} or sequence of (a, b, c)
        ``"jordan"``: Keller Jordan's fixed ``(3.4445, -4.7750, 2.0315)``; ``"you"``: Jiacheng
        You's six per-step triples. A custom table repeats its last row.
    dtype : torch.dtype
        Working and output dtype.
    backend : {"auto", "triton", "torch"}, optional
        Kernel backend.

    Returns
    -------
    torch.Tensor
        Orthogonalised ``G``, same shape, in ``dtype``.

    Notes
    -----
    Normalisation ``X_0 = G / (||G||_F + 1e-7)`` as in KellerJordan/Muon.

    References
    ----------
    .. [1] K. Jordan et al., "Muon: An optimizer for hidden layers in neural networks", 2024,
       https://kellerjordan.github.io/posts/muon/.
    .. [2] N. J. Higham, "Functions of Matrices", SIAM 2008, Ch. 8 (Newton--Schulz iteration).
    """
    _check_matrix(G, steps, dtype)
    if isinstance(coefficients, str):
        if coefficients not in NEWTON_SCHULZ_PRESETS:
            raise ValueError(
                f"coefficients must be one of {sorted(NEWTON_SCHULZ_PRESETS)} or a sequence of "
                f"(a, b, c), got {coefficients!r}"
            )
        table = NEWTON_SCHULZ_PRESETS[coefficients]
    else:
        table = tuple(tuple(float(v) for v in t) for t in coefficients)  # type: ignore[misc]
        if not table or any(len(t) != 3 for t in table):
            raise ValueError("coefficients must be a non-empty sequence of (a, b, c) triples")
    return odd_polynomial_polar(G, _schedule(table, steps), dtype=dtype, backend=backend)


def svd_polar(G: torch.Tensor) -> torch.Tensor:
    """Exact polar factor ``U V^T`` through ``torch.linalg.svd`` (the reference route).

    Parameters
    ----------
    G : torch.Tensor
        Shape ``(..., m, n)``.

    Returns
    -------
    torch.Tensor
        ``U V^T`` in ``G``'s dtype (computed in at least fp32).
    """
    if not isinstance(G, torch.Tensor) or G.ndim < 2:
        raise ValueError("G must be a tensor with at least 2 dimensions")
    work = G if G.dtype in (torch.float32, torch.float64) else G.float()
    u, _, vh = torch.linalg.svd(work, full_matrices=False)
    return (u @ vh).to(G.dtype)
