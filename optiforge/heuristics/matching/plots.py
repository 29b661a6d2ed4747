"""PNG plot of cost / OPT as requests arrive (matplotlib, the ``plots`` extra, imported lazily)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from optiforge.extras import require
from optiforge.heuristics.matching.runner import MatchingRun


def plot_ratio(runs: Sequence[MatchingRun], opt: Sequence[float], path: str | Path,
               title: str = "") -> Path:
    """Plot each run's cost divided by the prefix optimum against the number of requests.

    Parameters
    ----------
    runs : sequence of MatchingRun
        Runs on the same instance with the same checkpoints.
    opt : sequence of float
        The exact optimum at each checkpoint (:func:`~optiforge.heuristics.matching.runner.opt_curve`).
    path : str or Path
        Where to write the PNG.
    title : str
        Plot title.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    MissingExtraError
        If matplotlib is not installed.
    """
    require("plots", "the matching plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    for run in runs:
        ratio = [c / o if o > 0 else 1.0 for c, o in zip(run.costs, opt, strict=True)]
        ax.plot(run.checkpoints, ratio, marker="o", markersize=3, label=run.method)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xlabel("requests arrived")
    ax.set_ylabel("cost / OPT of the prefix")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out
