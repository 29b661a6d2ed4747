"""Random directions on the unit sphere of a tangent space ``(T_pM, g_p)``: Alg. 1 and its ablation.

With an orthonormal (Euclidean) basis of ``T_pM`` the metric is a Gram matrix
``A = Q Lambda Q^T`` and the ``g``-unit sphere is the ellipsoid ``{v : v^T A v = 1}``. Alg. 1 of
Ma & Huang draws ``s`` uniform on the Euclidean unit sphere, maps it by
``L = Q Lambda^{-1/2}`` (``v = L s``, so ``v^T A v = s^T s = 1``), and then accepts ``v`` with
probability ``sqrt(v^T A^2 v) / lambda_max``.

**The two points the research note flags, settled from the math**

1. *The normaliser.* ``L`` maps the unit sphere onto the ellipsoid; the Euclidean area
   element scales by ``|det L| * ||L^{-T} s||`` and ``||L^{-T} s||^2 = s^T Lambda s = v^T A^2 v``.
   So ``L s`` has area density proportional to ``1 / sqrt(v^T A^2 v)``, and uniform-area
   samples need acceptance proportional to ``sqrt(v^T A^2 v)``, whose maximum on the ellipsoid
   is ``sqrt(lambda_max)``. The acceptance ratio is therefore ``sqrt(v^T A^2 v / lambda_max)``
   (always in ``[sqrt(lambda_min/lambda_max), 1]``); dividing by ``lambda_max`` instead is a
   valid but wasteful bound when ``lambda_max > 1`` and wrong (ratios above 1, a biased
   sampler) when ``lambda_max < 1``. ``"alg1-rejection"`` uses ``sqrt(lambda_max)``.
2. *g-isotropic or Euclidean-uniform.* ``v = L s`` without rejection is uniform for the
   ``g``-induced measure of the ``g``-unit sphere (``L^{-1}`` is an isometry from
   ``(T_pM, g)`` to Euclidean ``R^d``), the intrinsic notion of "uniform on the unit sphere
   of ``T_pM``" that Thm 2.7 is stated in, and it gives ``E[v v^T] = A^{-1} / d``, hence
   ``E[g(grad f, v) v] = grad f / d`` exactly: the mean Thm 2.7 and the SGD analysis use.
   The rejection step makes ``v`` uniform for the *Euclidean* area of the coordinate
   ellipsoid instead, which depends on the chart and biases the mean (``E[v v^T] != A^{-1}/d``
   unless ``A`` is a multiple of ``I``). So the default ``"alg1"`` is Alg. 1's proposal
   ``v = L s`` (rejection omitted); ``"alg1-rejection"`` keeps the transcribed rejection step
   for the ablation, and ``"naive"`` rescales a coordinate Gaussian radially onto the
   ellipsoid (``v = z / sqrt(z^T A z)``), the baseline the paper compares against.

References
----------
.. [1] S. Ma and H. Huang, arXiv:2601.08039 (Alg. 1, Prop. 2.8, Thm 2.7).
"""

from __future__ import annotations

import numpy as np

from optiforge.blackbox.riemannian.manifolds import Frame

SAMPLERS = ("alg1", "alg1-rejection", "naive")
MAX_REJECTIONS = 10_000


def _unit_sphere(rng: np.random.Generator, d: int) -> np.ndarray:
    z = rng.standard_normal(d)
    return z / np.linalg.norm(z)


def sample_direction(frame: Frame, rng: np.random.Generator, method: str = "alg1") -> np.ndarray:
    """One direction ``v`` with ``g(v, v) = 1``, as tangent coordinates in ``frame``.

    Parameters
    ----------
    frame : Frame
        The tangent space's basis and Gram matrix.
    rng : numpy.random.Generator
    method : {"alg1", "alg1-rejection", "naive"}
        See the module docstring.

    Returns
    -------
    ndarray, shape (frame.dim,)
        Coordinates; ``frame.ambient(c)`` is the tangent vector.
    """
    d = frame.dim
    if method == "naive":
        z = rng.standard_normal(d)
        return z / np.sqrt(z @ frame.apply_metric(z))
    if method not in ("alg1", "alg1-rejection"):
        raise ValueError(f"sampler: must be one of {', '.join(SAMPLERS)}; got {method!r}")
    lam = frame.eigenvalues()
    for _ in range(MAX_REJECTIONS):
        s = _unit_sphere(rng, d)
        # v = L s; in the eigenbasis v^T A^2 v = s^T Lambda s (see the module docstring).
        if method == "alg1" or rng.random() < np.sqrt((s * s) @ lam / lam.max()):
            return frame.from_eigen(s, -0.5)
    raise RuntimeError("sampler: rejection sampling accepted nothing (metric too anisotropic)")
