"""Optimization over a data manifold known only from samples, with a diffusion score (ICLR 2026).

* :mod:`~optiforge.blackbox.manifold.projector`: the Tweedie score projector and
  :func:`empirical_score`;
* :mod:`~optiforge.blackbox.manifold.descent`: DLF (landing) and DRGD (feasible);
* :mod:`~optiforge.blackbox.manifold.nets` / :mod:`~optiforge.blackbox.manifold.training`:
  small score networks, trained in-project by denoising score matching;
* :mod:`~optiforge.blackbox.manifold.data`: synthetic manifolds and simulated trajectories.
"""

from __future__ import annotations

from optiforge.blackbox.manifold.data import (
    SYNTHETIC,
    SYSTEMS,
    DoublePendulum,
    Unicycle,
    figure_reference,
    project_so3,
    synthetic,
    tracking_cost,
    trajectories,
)
from optiforge.blackbox.manifold.descent import DescentResult, dlf, dlf_step, drgd, drgd_step
from optiforge.blackbox.manifold.nets import ScoreMLP, ScoreUNet1D
from optiforge.blackbox.manifold.objectives import (
    brockett_minimum,
    brockett_objective,
    linear_objective,
    tracking_objective,
)
from optiforge.blackbox.manifold.projector import ScoreFn, ScoreProjector, empirical_score
from optiforge.blackbox.manifold.training import ScoreModel, fit_score, model_summary

__all__ = [
    "SYNTHETIC", "SYSTEMS", "DescentResult", "DoublePendulum", "ScoreFn", "ScoreMLP", "ScoreModel",
    "ScoreProjector", "ScoreUNet1D", "Unicycle", "brockett_minimum", "brockett_objective", "dlf", "dlf_step", "drgd", "drgd_step",
    "empirical_score", "figure_reference", "fit_score", "linear_objective", "model_summary", "project_so3", "synthetic",
    "tracking_cost", "tracking_objective", "trajectories",
]
