"""Training optimizers usable in any PyTorch training loop.

Public API: :func:`polar_express`, :func:`newton_schulz`, :class:`Muon`, :class:`ALIAS`,
:class:`EGD`, the :mod:`~optiforge.optim.lowprec` module (``quantize``, ``Quantized``), the
:mod:`~optiforge.optim.policy_gradient` losses (GRPO, REINFORCE with a shared baseline), the
:mod:`~optiforge.optim.distributed` training schemes (decentralized SGD with scheduled
communication and a global merge; federated ADI, DIANA, EF21, FedAvg with compression) and the
single-model schemes :class:`BiLoRA` (sharpness-aware LoRA at one gradient per step), :class:`PDT`
(DMD weight prediction around any optimizer) and :class:`GaussNewton` (full / layerwise /
prox-linear Gauss--Newton with inner Muon steps).
"""

from . import distributed, lowprec, policy_gradient
from .alias import ALIAS, majority_vote
from .bilora import BiLoRA
from .egd import EGD
from .gauss_newton import GaussNewton
from .muon import Muon, muon_param_groups
from .pdt import PDT
from .polar import newton_schulz, polar_express, polar_express_coefficients, svd_polar

__all__ = [
    "ALIAS",
    "BiLoRA",
    "EGD",
    "GaussNewton",
    "Muon",
    "PDT",
    "distributed",
    "lowprec",
    "majority_vote",
    "muon_param_groups",
    "newton_schulz",
    "polar_express",
    "polar_express_coefficients",
    "policy_gradient",
    "svd_polar",
]
