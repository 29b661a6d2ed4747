"""Message compressors for federated learning, each counting the exact bits of what it sends.

A compressor maps a vector ``x`` (a client's message) to ``Q(x)`` and returns the number of
bits a client would put on the wire to let the server rebuild ``Q(x)`` exactly. Values are
float32 (32 bits); an index into a vector of ``d`` entries costs ``ceil(log2 d)`` bits.

=============  ==========  ==========================================  =======================
compressor     unbiased    ``E||Q(x) - x||^2``                         bits of one message
=============  ==========  ==========================================  =======================
``none``       yes         0                                           ``32 d``
``randk``      yes         ``(d/k - 1) ||x||^2`` (``omega = d/k - 1``)  ``k (32 + ceil(log2 d))``
``natural``    yes         ``<= ||x||^2 / 8`` (``omega = 1/8``)          ``9 d`` (sign + 8-bit exponent)
``topk``       no          ``<= (1 - k/d) ||x||^2`` (contractive)       ``k (32 + ceil(log2 d))``
=============  ==========  ==========================================  =======================

References
----------
- Rand-k: Stich, Cordonnier & Jaggi, "Sparsified SGD with memory", NeurIPS 2018; the
  ``d/k``-scaled unbiased form as in Mishchenko et al. (DIANA, below).
- Natural compression: Horváth, Ho, Horváth, Sahu, Canini & Richtárik, "Natural compression
  for distributed deep learning", MSML 2022 (arXiv 1905.10988): stochastic rounding of each
  entry to one of the two nearest powers of two, ``omega = 1/8``.
- Top-k: Alistarh et al., "The convergence of sparsified gradient methods", NeurIPS 2018.
- DIANA: Mishchenko, Gorbunov, Takáč & Richtárik, "Distributed learning with compressed
  gradient differences", arXiv 1901.09269.

Deviation: rand-k sends its ``k`` indices explicitly (a shared-seed scheme would send one seed
instead); the count is therefore an upper bound on what a seed-sharing client would need.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch

from optiforge import validation as check

FLOAT_BITS = 32
NATURAL_BITS = 9  # 1 sign bit + the 8 exponent bits of a float32; the mantissa is never sent

COMPRESSORS = ("none", "randk", "topk", "natural")


@runtime_checkable
class Compressor(Protocol):
    """``Q(x)`` and the exact bits of the message that carries it.

    ``unbiased`` compressors satisfy ``E Q(x) = x`` and ``E||Q(x) - x||^2 <= omega ||x||^2``;
    biased ones (top-k) are contractive: ``||Q(x) - x||^2 <= (1 - delta) ||x||^2``.
    """

    name: str
    unbiased: bool

    def omega(self, d: int) -> float:
        """The variance bound ``omega`` for vectors of ``d`` entries (unbiased compressors)."""
        ...

    def __call__(self, x: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, int]:
        """Return ``(Q(x), bits)`` for a 1-D ``x``, drawing randomness from ``generator``."""
        ...


def index_bits(d: int) -> int:
    """Bits of one index into a vector of ``d`` entries."""
    return max(1, math.ceil(math.log2(d)))


def _k_of(k: int | None, fraction: float | None, d: int) -> int:
    if k is not None:
        return min(k, d)
    return max(1, min(d, round(fraction * d)))  # type: ignore[operator]


@dataclass(frozen=True)
class Identity:
    """No compression: 32 bits per entry."""

    name: str = "none"
    unbiased: bool = True

    def omega(self, d: int) -> float:
        return 0.0

    def __call__(self, x: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, int]:
        return x.clone(), FLOAT_BITS * x.numel()


@dataclass(frozen=True)
class RandK:
    """Keep ``k`` entries chosen uniformly without replacement, scaled by ``d/k`` (unbiased).

    Give ``k`` (entries) or ``fraction`` (of ``d``, at least one entry).
    """

    k: int | None = None
    fraction: float | None = None
    name: str = "randk"
    unbiased: bool = True

    def __post_init__(self) -> None:
        _check_k(self.k, self.fraction)

    def omega(self, d: int) -> float:
        return d / _k_of(self.k, self.fraction, d) - 1.0

    def __call__(self, x: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, int]:
        d = x.numel()
        k = _k_of(self.k, self.fraction, d)
        idx = torch.randperm(d, generator=generator)[:k]
        out = torch.zeros_like(x)
        out[idx] = x[idx] * (d / k)
        return out, k * (FLOAT_BITS + index_bits(d))


@dataclass(frozen=True)
class TopK:
    """Keep the ``k`` entries of largest magnitude, unscaled (biased, contractive).

    ``||Q(x) - x||^2 <= (1 - k/d) ||x||^2`` for every ``x``: the dropped entries are the
    ``d - k`` smallest, whose squares sum to at most a ``(d-k)/d`` share of the total.
    """

    k: int | None = None
    fraction: float | None = None
    name: str = "topk"
    unbiased: bool = False

    def __post_init__(self) -> None:
        _check_k(self.k, self.fraction)

    def omega(self, d: int) -> float:
        raise ValueError("compressor: top-k is biased and has no variance bound omega")

    def delta(self, d: int) -> float:
        """Contraction: ``||Q(x) - x||^2 <= (1 - delta) ||x||^2`` with ``delta = k/d``."""
        return _k_of(self.k, self.fraction, d) / d

    def __call__(self, x: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, int]:
        d = x.numel()
        k = _k_of(self.k, self.fraction, d)
        idx = torch.topk(x.abs(), k, sorted=False).indices
        out = torch.zeros_like(x)
        out[idx] = x[idx]
        return out, k * (FLOAT_BITS + index_bits(d))


@dataclass(frozen=True)
class Natural:
    """Natural compression: each entry rounds at random to one of its two nearest powers of 2.

    For ``2^e <= |x| < 2^(e+1)`` the entry becomes ``sign(x) 2^(e+1)`` with probability
    ``(|x| - 2^e) / 2^e`` and ``sign(x) 2^e`` otherwise, so ``E Q(x) = x`` and
    ``E (Q(x) - x)^2 <= x^2 / 8`` (Horváth et al., Thm 1). Zeros stay zero. A power of two is
    sent as its sign and float32 exponent: 9 bits per entry.
    """

    name: str = "natural"
    unbiased: bool = True

    def omega(self, d: int) -> float:
        return 1.0 / 8.0

    def __call__(self, x: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, int]:
        mag = x.abs()
        mantissa, exponent = torch.frexp(mag)  # mag = mantissa 2^exponent, mantissa in [0.5, 1)
        low = torch.ldexp(torch.ones_like(mag), exponent - 1)  # 2^e <= |x| < 2^(e+1)
        p_up = mantissa * 2.0 - 1.0  # (|x| - 2^e) / 2^e, exactly, from the mantissa
        up = torch.rand(x.shape, generator=generator, dtype=mag.dtype, device=x.device) < p_up
        out = torch.sign(x) * low * (1.0 + up.to(mag.dtype))
        return out, NATURAL_BITS * x.numel()


def _check_k(k: int | None, fraction: float | None) -> None:
    if (k is None) == (fraction is None):
        raise ValueError("compressor: give exactly one of k and fraction")
    if k is not None:
        check.integer(k, "k", minimum=1)
    else:
        check.real(fraction, "fraction", minimum=0.0, maximum=1.0)
        if fraction == 0.0:
            raise ValueError("fraction: must be > 0, got 0.0")


def make_compressor(name: str, fraction: float = 0.1) -> Compressor:
    """The compressor called ``name`` (``none``, ``randk``, ``topk``, ``natural``).

    ``fraction`` is the share of entries kept by rand-k and top-k.
    """
    check.choice(name, "compressor", COMPRESSORS)
    if name == "randk":
        return RandK(fraction=fraction)
    if name == "topk":
        return TopK(fraction=fraction)
    if name == "natural":
        return Natural()
    return Identity()
