"""Training optimizers usable in any PyTorch training loop."""

from .polar import newton_schulz, polar_express, polar_express_coefficients, svd_polar

__all__ = ["newton_schulz", "polar_express", "polar_express_coefficients", "svd_polar"]
