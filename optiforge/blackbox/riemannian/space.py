"""A :class:`~optiforge.blackbox.space.Space` seen as one product manifold.

Each parameter becomes a factor: a simplex parameter an open simplex with the
structure-preserving barrier metric, a sphere parameter the round sphere, an spd parameter the
SPD cone with the affine-invariant metric, and a float parameter (linear or log scale, no
``step``) the open interval of its unit-cube encoding, written as the 1-simplex ``(u, 1 - u)``
so it shares the simplex's barrier metric. Int and categorical parameters (and float grids)
have no tangent space, so this adapter refuses them, naming the parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from optiforge.blackbox.riemannian.manifolds import (
    SPD,
    ConformalBarrier,
    Product,
    RiemannianManifold,
    Simplex,
    Sphere,
)
from optiforge.blackbox.space import FloatParam, Param, SimplexParam, Space, SpdParam, SphereParam


def _factor(p: Param, barrier: ConformalBarrier) -> RiemannianManifold:
    if isinstance(p, SimplexParam):
        return Simplex(p.dim, barrier=barrier)
    if isinstance(p, SphereParam):
        return Sphere(p.dim)
    if isinstance(p, SpdParam):
        return SPD(p.n)
    if isinstance(p, FloatParam) and p.step is None:
        return Simplex(2, barrier=barrier)
    kind = p.to_dict()["type"] + (" grid" if isinstance(p, FloatParam) else "")
    raise ValueError(f"space.{p.name}: zeroth-order Riemannian search needs continuous parameters "
                     f"(float without step, simplex, sphere, spd); {p.name!r} is a {kind} parameter")


class SpaceManifold:
    """The product manifold of a space, with conversions between parameter dicts and points.

    Parameters
    ----------
    space : Space
    barrier : ConformalBarrier
        The structure-preserving metric of the simplex and interval factors.

    Raises
    ------
    ValueError
        A parameter without a tangent space (int, categorical, float with ``step``).
    """

    def __init__(self, space: Space, barrier: ConformalBarrier) -> None:
        self.space = space
        self.params = list(space.params.values())
        self.manifold = Product([_factor(p, barrier) for p in self.params])

    def to_point(self, params: Mapping[str, Any]) -> np.ndarray:
        """A validated assignment -> a flat point (floats go to their unit-cube encoding)."""
        parts = []
        for p in self.params:
            v = params[p.name]
            if isinstance(p, FloatParam):
                u = min(max(p.encode(v), 1e-12), 1 - 1e-12)  # a bound value sits just inside
                parts.append(np.array([u, 1.0 - u]))
            else:
                parts.append(np.asarray(v, dtype=float).reshape(-1))
        return np.concatenate(parts)

    def to_params(self, x: np.ndarray) -> dict[str, Any]:
        """A flat point -> an assignment (JSON-able lists, floats decoded from the interval)."""
        out: dict[str, Any] = {}
        for p, xf in zip(self.params, self.manifold.split(x), strict=True):
            if isinstance(p, FloatParam):
                out[p.name] = float(p.decode(xf[0]))
            elif isinstance(p, SpdParam):
                out[p.name] = xf.reshape(p.n, p.n).tolist()
            else:
                out[p.name] = xf.tolist()
        return out
