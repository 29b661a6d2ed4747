"""GPU kernels with exact PyTorch fallbacks and one dispatch point each.

Every public function takes ``backend=None|"auto"|"triton"|"torch"``. ``"auto"`` (the default)
runs Triton on CUDA tensors and PyTorch everywhere else. Force a backend for a whole process with
:func:`set_backend` or the ``OPTIFORGE_KERNEL_BACKEND`` environment variable. To run the Triton
kernels on a CPU (as the tests do), set ``TRITON_INTERPRET=1`` before the first kernel call and
pass ``backend="triton"``.

This package imports only torch (and triton, lazily).
"""

from ._backend import BACKENDS, interpreter_enabled, resolve_backend, set_backend, triton_available
from .matching import slack_scan
from .polar import polar_step
from .routing_mask import lookahead2_mask
from .sign import BUF_COPY, BUF_EMA, BUF_NONE, sign_stats, sign_update_

__all__ = [
    "BACKENDS",
    "BUF_COPY",
    "BUF_EMA",
    "BUF_NONE",
    "interpreter_enabled",
    "lookahead2_mask",
    "polar_step",
    "resolve_backend",
    "set_backend",
    "sign_stats",
    "sign_update_",
    "slack_scan",
    "triton_available",
]
