"""Backend selection shared by every kernel: one rule, one place.

A kernel call resolves its backend as: the explicit ``backend=`` argument, else the process-wide
override set by :func:`set_backend`, else the ``OPTIFORGE_KERNEL_BACKEND`` environment variable,
else ``"auto"``. ``"auto"`` means Triton for CUDA tensors (when Triton imports) and the exact
PyTorch fallback everywhere else. ``"triton"`` on a CPU tensor is only allowed under Triton's
interpreter (``TRITON_INTERPRET=1`` set before the kernel module is first imported), which is how
the tests compare kernels with their fallbacks on a machine without a GPU.
"""

from __future__ import annotations

import importlib.util
import os

import torch

BACKENDS = ("auto", "triton", "torch")
ENV_VAR = "OPTIFORGE_KERNEL_BACKEND"

_override: str | None = None


def set_backend(backend: str | None) -> None:
    """Force every kernel in this process onto one backend.

    Parameters
    ----------
    backend : {"auto", "triton", "torch"} or None
        ``None`` removes the override (the environment variable then applies).
    """
    global _override
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS} or None, got {backend!r}")
    _override = backend


def triton_available() -> bool:
    """Whether the ``triton`` package can be imported."""
    return importlib.util.find_spec("triton") is not None


def interpreter_enabled() -> bool:
    """Whether Triton's CPU interpreter is switched on for this process."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def resolve_backend(tensor: torch.Tensor, backend: str | None = None) -> str:
    """Return ``"triton"`` or ``"torch"`` for a kernel call on ``tensor``.

    Parameters
    ----------
    tensor : torch.Tensor
        The main operand; its device decides the ``"auto"`` choice.
    backend : {"auto", "triton", "torch"} or None
        Explicit choice for this call.

    Returns
    -------
    str
        The backend to run.
    """
    choice = backend if backend is not None else _override
    if choice is None:
        choice = os.environ.get(ENV_VAR, "auto") or "auto"
    if choice not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {choice!r}")
    if choice == "torch":
        return "torch"
    if choice == "auto":
        return "triton" if tensor.is_cuda and triton_available() else "torch"
    if not triton_available():
        raise RuntimeError("backend='triton' requested but the triton package is not installed")
    if not tensor.is_cuda and not interpreter_enabled():
        raise RuntimeError(
            "backend='triton' on a CPU tensor needs Triton's interpreter: set TRITON_INTERPRET=1 "
            "before the first kernel call"
        )
    return "triton"
