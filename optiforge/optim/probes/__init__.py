"""Training-dynamics probes: small, exact, batched experiments on how training behaves.

* :mod:`~optiforge.optim.probes.bbp`: the BBP transition of the loss Hessian at a random
  initialization (Annesi, Bocchi & Cammarota, ICLR 2026).
* :mod:`~optiforge.optim.probes.fractal`: large-step GD on scalar-vector factorization, its
  exact critical step, planar reduction and fractal basins (Liang & Montúfar, ICLR 2026).
* :mod:`~optiforge.optim.probes.cco`: correlation crowding-out in a two-key attention model
  (ICLR 2026, OpenReview z8xjWmyQSZ).

Each module has a ``figure(...)`` function that computes the numbers of the probe's figure;
:mod:`~optiforge.optim.probes.plots` draws them (matplotlib, the ``plots`` extra), and
``optiforge probe bbp|fractal|cco`` runs both from the shell.
"""

from . import bbp, cco, fractal

__all__ = ["bbp", "cco", "fractal"]
