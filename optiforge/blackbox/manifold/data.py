"""Data the project generates for data-manifold optimization.

* Synthetic manifolds with known nearest-point projections (for tests and the Brockett
  experiment): the unit circle in R^2, the unit sphere in R^3, the flat torus
  ``(cos a, sin a, cos b, sin b)`` in R^4, and SO(3) as 9-vectors (projection: the polar
  factor of the SVD with the determinant fixed to +1).
* Trajectories of controlled systems driven by random smooth inputs, the behaviour manifolds
  of the reference-tracking experiment: a unicycle (inputs: speed and turn rate; outputs: the
  position) and a torque-driven double pendulum (outputs: the two angles). A trajectory is an
  array ``(T, U + Y)``: inputs first, then outputs, per time step (the reference's layout).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


# ---------------------------------------------------------------------------- synthetic
def _circle(n: int, rng: np.random.Generator) -> np.ndarray:
    a = rng.uniform(0, 2 * np.pi, n)
    return np.stack([np.cos(a), np.sin(a)], axis=1)


def _sphere(n: int, rng: np.random.Generator) -> np.ndarray:
    z = rng.standard_normal((n, 3))
    return z / np.linalg.norm(z, axis=1, keepdims=True)


def _torus(n: int, rng: np.random.Generator) -> np.ndarray:
    a, b = rng.uniform(0, 2 * np.pi, (2, n))
    return np.stack([np.cos(a), np.sin(a), np.cos(b), np.sin(b)], axis=1)


def _so3(n: int, rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((n, 3, 3)))
    q = q * np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :]  # Haar on O(3)
    q[np.linalg.det(q) < 0, :, 0] *= -1  # and onto SO(3)
    return q.reshape(n, 9)


def _proj_circle(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _proj_torus(x: np.ndarray) -> np.ndarray:
    return np.concatenate([_proj_circle(x[:, :2]), _proj_circle(x[:, 2:])], axis=1)


def project_so3(x: np.ndarray) -> np.ndarray:
    """Nearest rotations (Frobenius) to the 3x3 matrices in the rows of ``x`` (n, 9)."""
    U, _, Vt = np.linalg.svd(x.reshape(-1, 3, 3))
    d = np.sign(np.linalg.det(U @ Vt))
    U[:, :, 2] *= d[:, None]
    return (U @ Vt).reshape(-1, 9)


@dataclass(frozen=True)
class SyntheticManifold:
    """A sampler and the exact nearest-point projection of a synthetic manifold."""

    name: str
    ambient: int
    sample: Callable[[int, np.random.Generator], np.ndarray]
    project: Callable[[np.ndarray], np.ndarray]


SYNTHETIC: dict[str, SyntheticManifold] = {m.name: m for m in (
    SyntheticManifold("circle", 2, _circle, _proj_circle),
    SyntheticManifold("sphere", 3, _sphere, _proj_circle),
    SyntheticManifold("torus", 4, _torus, _proj_torus),
    SyntheticManifold("so3", 9, _so3, project_so3),
)}


def synthetic(name: str, n: int, seed: int = 0) -> np.ndarray:
    """``n`` uniform samples of the synthetic manifold ``name`` (ValueError naming ``manifold``)."""
    if name not in SYNTHETIC:
        raise ValueError(f"manifold: must be one of {', '.join(SYNTHETIC)}; got {name!r}")
    return SYNTHETIC[name].sample(int(n), np.random.default_rng(seed))


# ---------------------------------------------------------------------------- systems
def smooth_inputs(n: int, T: int, channels: int, rng: np.random.Generator, *, knots: int = 6,
                  low: np.ndarray | float = -1.0, high: np.ndarray | float = 1.0) -> np.ndarray:
    """Random smooth input signals ``(n, T, channels)``: cubic-ish interpolation of uniform knots."""
    grid = np.linspace(0, 1, knots)
    t = np.linspace(0, 1, T)
    vals = rng.uniform(low, high, (n, knots, channels))
    out = np.empty((n, T, channels))
    for c in range(channels):
        for i in range(n):
            out[i, :, c] = np.interp(t, grid, vals[i, :, c])
    # one pass of a moving average removes the interpolation's corners
    k = max(1, T // (2 * knots))
    kernel = np.ones(k) / k
    pad = np.pad(out, ((0, 0), (k // 2, k - 1 - k // 2), (0, 0)), mode="edge")
    return np.stack([np.apply_along_axis(lambda s: np.convolve(s, kernel, "valid"), 1, pad[:, :, c])
                     for c in range(channels)], axis=2)


@dataclass(frozen=True)
class Unicycle:
    """``p' = v (cos th, sin th)``, ``th' = w``; input ``(v, w)``, output the position ``p``.

    Explicit Euler with step ``dt`` from ``(0, 0, 0)``; the output at step ``k`` is the
    position after applying input ``k``.
    """

    dt: float = 0.1
    inputs: int = 2
    outputs: int = 2

    def simulate(self, u: np.ndarray) -> np.ndarray:
        u = np.asarray(u, dtype=float)
        n, T, _ = u.shape
        px, py, th = np.zeros(n), np.zeros(n), np.zeros(n)
        y = np.empty((n, T, 2))
        for k in range(T):
            px = px + self.dt * u[:, k, 0] * np.cos(th)
            py = py + self.dt * u[:, k, 0] * np.sin(th)
            th = th + self.dt * u[:, k, 1]
            y[:, k, 0], y[:, k, 1] = px, py
        return y

    def random_inputs(self, n: int, T: int, rng: np.random.Generator) -> np.ndarray:
        return smooth_inputs(n, T, 2, rng, low=np.array([0.0, -1.5]), high=np.array([2.0, 1.5]))


@dataclass(frozen=True)
class DoublePendulum:
    """A torque-driven double pendulum (unit masses and lengths, g = 9.81), RK4.

    Input: the torques at the two joints; output: the two angles (from hanging down).
    """

    dt: float = 0.05
    substeps: int = 4
    inputs: int = 2
    outputs: int = 2

    @staticmethod
    def _deriv(s: np.ndarray, tau: np.ndarray) -> np.ndarray:
        t1, t2, w1, w2 = s.T
        g, d = 9.81, t1 - t2
        # Mass matrix and the Coriolis/gravity terms of the two-link chain (m = l = 1).
        M11, M12, M22 = 2.0 * np.ones_like(t1), np.cos(d), np.ones_like(t1)
        c1 = -np.sin(d) * w2**2 - 2 * g * np.sin(t1) + tau[:, 0]
        c2 = np.sin(d) * w1**2 - g * np.sin(t2) + tau[:, 1]
        det = M11 * M22 - M12**2
        a1 = (M22 * c1 - M12 * c2) / det
        a2 = (M11 * c2 - M12 * c1) / det
        return np.stack([w1, w2, a1, a2], axis=1)

    def simulate(self, u: np.ndarray) -> np.ndarray:
        u = np.asarray(u, dtype=float)
        n, T, _ = u.shape
        s = np.zeros((n, 4))
        y = np.empty((n, T, 2))
        h = self.dt / self.substeps
        for k in range(T):
            for _ in range(self.substeps):
                k1 = self._deriv(s, u[:, k])
                k2 = self._deriv(s + 0.5 * h * k1, u[:, k])
                k3 = self._deriv(s + 0.5 * h * k2, u[:, k])
                k4 = self._deriv(s + h * k3, u[:, k])
                s = s + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            y[:, k] = s[:, :2]
        return y

    def random_inputs(self, n: int, T: int, rng: np.random.Generator) -> np.ndarray:
        return smooth_inputs(n, T, 2, rng, low=-6.0, high=6.0)


SYSTEMS = {"unicycle": Unicycle, "double-pendulum": DoublePendulum}


def trajectories(system: str, n: int, T: int, seed: int = 0) -> np.ndarray:
    """``n`` trajectories ``(n, T, U + Y)`` of ``system`` under random smooth inputs."""
    if system not in SYSTEMS:
        raise ValueError(f"system: must be one of {', '.join(SYSTEMS)}; got {system!r}")
    if n < 1 or T < 1:
        raise ValueError(f"n, T: must be >= 1, got n={n}, T={T}")
    sys_ = SYSTEMS[system]()
    u = sys_.random_inputs(n, T, np.random.default_rng(seed))
    return np.concatenate([u, sys_.simulate(u)], axis=2)


def tracking_cost(traj: np.ndarray, reference: np.ndarray, r: float = 0.01, q: float = 1.0,
                  inputs: int = 2) -> np.ndarray:
    """``sum_k r |u_k|^2 + q |y_k - r_k|^2`` per trajectory (the paper's finite-horizon cost)."""
    u, y = traj[..., :inputs], traj[..., inputs:]
    return r * np.sum(u**2, axis=(-2, -1)) + q * np.sum((y - reference) ** 2, axis=(-2, -1))


def figure_reference(T: int, dt: float = 0.1, radius: float = 2.0) -> np.ndarray:
    """A circular-arc position reference ``(T, 2)`` a unicycle can follow from the origin."""
    s = np.linspace(dt, T * dt, T) / (T * dt) * math.pi * 0.75
    return np.stack([radius * np.sin(s), radius * (1 - np.cos(s))], axis=1)
