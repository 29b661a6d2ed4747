"""Simulated low-precision training: round weights, gradients and optimizer states to M mantissa bits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.optim import Optimizer

ROUNDINGS = ("stochastic", "nearest", "truncate")
_FP32_MANTISSA = 23


def _check_bits(name: str, bits: int | None) -> None:
    if bits is None:
        return
    if isinstance(bits, bool) or not isinstance(bits, int) or not 0 <= bits <= _FP32_MANTISSA:
        raise ValueError(f"{name} must be None or an int in [0, {_FP32_MANTISSA}], got {bits!r}")


def quantize(
    x: torch.Tensor,
    mantissa_bits: int,
    rounding: str = "stochastic",
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Round every entry to ``mantissa_bits`` explicit mantissa bits, keeping sign and exponent.

    The relative error is at most ``2^-M`` (nearest: ``2^-(M+1)``), the model of Tang, Li and
    Zou (``|x^Q - x| <= q |x|`` with ``q = Theta(2^-M)``). The exponent range stays fp32's.
    Their analysis is about *biased* floating-point rounding (they argue that unbiased
    quantisation does not describe hardware); ``"truncate"`` (drop the low mantissa bits, i.e.
    round toward zero) matches their description of cutting the mantissa, and is the mode that
    reproduces their Adam-vs-Muon ordering in ``benchmarks/optim_lowprec.py``.

    Parameters
    ----------
    x : torch.Tensor
        Floating tensor (computed in fp32, returned in ``x``'s dtype).
    mantissa_bits : int
        ``M`` in ``[0, 23]``; 23 returns ``x`` unchanged (fp32).
    rounding : {"stochastic", "nearest", "truncate"}
        Stochastic rounding (unbiased), round-half-away-from-zero, or truncation (round toward
        zero; biased, as hardware casts that drop mantissa bits).
    generator : torch.Generator, optional
        Random source for stochastic rounding (on ``x``'s device).

    Returns
    -------
    torch.Tensor
        New tensor of ``x``'s shape and dtype.

    References
    ----------
    .. [1] X. Tang, Y. Li, D. Zou, "Adam and Muon under Floating-Point Quantization" (ICLR 2026),
       arXiv:2510.21314.
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError("x must be a floating torch.Tensor")
    _check_bits("mantissa_bits", mantissa_bits)
    if mantissa_bits is None:
        raise ValueError("mantissa_bits must be an int in [0, 23], got None")
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding must be one of {ROUNDINGS}, got {rounding!r}")
    if mantissa_bits == _FP32_MANTISSA:
        return x.clone()
    xf = x.float()
    bits = xf.view(torch.int32)
    drop = _FP32_MANTISSA - mantissa_bits
    if rounding == "truncate":
        noise = torch.zeros_like(bits)
    elif rounding == "nearest":
        noise = torch.full_like(bits, 1 << (drop - 1))
    else:
        noise = torch.randint(0, 1 << drop, bits.shape, dtype=torch.int32, device=x.device, generator=generator)
    # The magnitude sits in the low 31 bits for both signs, so adding to the pattern rounds the
    # magnitude up (a mantissa carry correctly bumps the exponent); masking truncates.
    rounded = ((bits + noise) & ~((1 << drop) - 1)).view(torch.float32)
    out = torch.where(torch.isfinite(xf), rounded, xf)
    return out.to(x.dtype)


class Quantized:
    """Wrap an optimizer so weights, gradients and optimizer states live at reduced precision.

    Follows the analysis model of Tang, Li and Zou: a master copy keeps full-precision weights;
    the model sees ``W^Q = Q_w(W)`` (forward and backward run on it); gradients are rounded to
    ``Q_g`` before the update; after the update every floating optimizer state (Adam's moments,
    Muon's momentum) is rounded to ``Q_s``.

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
        The optimizer to wrap (built on the model's parameters).
    weights, grads, states : int or None
        Mantissa bits for each component; ``None`` keeps fp32.
    rounding : {"stochastic", "nearest", "truncate"}
        Rounding mode (see :func:`quantize`).
    seed : int
        Seed of the stochastic-rounding generator.

    Notes
    -----
    Use it like the wrapped optimizer: ``zero_grad()``, backward, ``step()``. The parameters
    hold the quantised weights between steps; :meth:`master_weights` returns the fp32 copies.
    No deviation from the paper's simulation model (a single quantiser ``Q_s`` serves both Adam
    moments; set ``states`` to the tighter of the two to mimic per-moment precision).

    References
    ----------
    .. [1] X. Tang, Y. Li, D. Zou, "Adam and Muon under Floating-Point Quantization" (ICLR 2026),
       arXiv:2510.21314.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        weights: int | None = None,
        grads: int | None = None,
        states: int | None = None,
        rounding: str = "stochastic",
        seed: int = 0,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
        for name, bits in (("weights", weights), ("grads", grads), ("states", states)):
            _check_bits(name, bits)
        if rounding not in ROUNDINGS:
            raise ValueError(f"rounding must be one of {ROUNDINGS}, got {rounding!r}")
        self.optimizer = optimizer
        self.bits = {"weights": weights, "grads": grads, "states": states}
        self.rounding = rounding
        self._gen = torch.Generator().manual_seed(seed)
        self._params = [p for g in optimizer.param_groups for p in g["params"]]
        self._master = [p.detach().clone().float() for p in self._params]
        self._publish()

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return self.optimizer.param_groups

    @property
    def state(self) -> Any:
        return self.optimizer.state

    def master_weights(self) -> list[torch.Tensor]:
        """The full-precision weights."""
        return list(self._master)

    def _q(self, x: torch.Tensor, bits: int | None) -> torch.Tensor:
        if bits is None:
            return x
        gen = self._gen if x.device.type == "cpu" else None
        return quantize(x, bits, self.rounding, gen)

    @torch.no_grad()
    def _publish(self) -> None:
        for p, m in zip(self._params, self._master, strict=True):
            p.copy_(self._q(m, self.bits["weights"]))

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """Quantise gradients, update the master weights, quantise states and publish ``W^Q``.

        Parameters
        ----------
        closure : callable, optional
            Re-evaluates the model (at the quantised weights) and returns the loss.

        Returns
        -------
        float or None
            The closure's loss, if given.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for p, m in zip(self._params, self._master, strict=True):
            if p.grad is not None and self.bits["grads"] is not None:
                p.grad.copy_(self._q(p.grad, self.bits["grads"]))
            p.copy_(m)
        self.optimizer.step()
        for p, m in zip(self._params, self._master, strict=True):
            m.copy_(p)
        if self.bits["states"] is not None:
            for st in self.optimizer.state.values():
                for val in st.values():
                    if isinstance(val, torch.Tensor) and val.is_floating_point() and val.ndim > 0:
                        val.copy_(self._q(val, self.bits["states"]))
        self._publish()
        return loss

    def state_dict(self) -> dict[str, Any]:
        """Inner optimizer state plus the master weights and the quantisation settings."""
        return {
            "optimizer": self.optimizer.state_dict(),
            "master": [m.clone() for m in self._master],
            "bits": dict(self.bits),
            "rounding": self.rounding,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved."""
        master = state_dict["master"]
        if len(master) != len(self._master):
            raise ValueError(f"state_dict has {len(master)} master weights, expected {len(self._master)}")
        self.optimizer.load_state_dict(state_dict["optimizer"])
        for m, saved in zip(self._master, master, strict=True):
            m.copy_(saved)
        self.bits = dict(state_dict["bits"])
        self.rounding = state_dict["rounding"]
        self._publish()
