"""Zeroth-order Riemannian optimization with structure-preserving metrics (Ma & Huang, ICLR 2026).

* :mod:`~optiforge.blackbox.riemannian.manifolds`: simplices (and mesh cells) with the
  conformal barrier metric, intervals, sphere, SPD, products, and geoopt manifolds;
* :mod:`~optiforge.blackbox.riemannian.sampling`: directions of Alg. 1 and the ablation;
* :mod:`~optiforge.blackbox.riemannian.sgd`: the two-point estimator, Thm 2.9's schedules
  and :func:`zo_sgd`;
* :mod:`~optiforge.blackbox.riemannian.space`: a search space as a product manifold (what the
  ``zo-riemannian`` agent optimises).
"""

from __future__ import annotations

from optiforge.blackbox.riemannian.manifolds import (
    SPD,
    Block,
    ConformalBarrier,
    Euclidean,
    Frame,
    GeooptManifold,
    Product,
    RiemannianManifold,
    Simplex,
    Sphere,
    simplex_curvature,
)
from optiforge.blackbox.riemannian.sampling import SAMPLERS, sample_direction
from optiforge.blackbox.riemannian.sgd import (
    SCHEDULES,
    Probe,
    Schedule,
    ZOResult,
    ZORiemannianSGD,
    zo_sgd,
)
from optiforge.blackbox.riemannian.space import SpaceManifold

__all__ = [
    "SAMPLERS", "SCHEDULES", "SPD", "Block", "ConformalBarrier", "Euclidean", "Frame",
    "GeooptManifold", "Probe", "Product", "RiemannianManifold", "Schedule", "Simplex",
    "SpaceManifold", "Sphere", "ZOResult", "ZORiemannianSGD", "sample_direction",
    "simplex_curvature", "zo_sgd",
]
