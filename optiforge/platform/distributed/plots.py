"""PNG figures of distributed runs (matplotlib, the optional ``plots`` extra, imported lazily)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optiforge.extras import require
from optiforge.optim.distributed import RunResult


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (a clear error if the extra is missing)."""
    require("plots", "training plots")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig: Any, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    pyplot().close(fig)
    return path


def _panels(runs: dict[str, RunResult], panels: list[tuple[str, str, str, bool]], path: str | Path,
            title: str) -> Path:
    """One panel per ``(x metric, y metric, y label, log y)``, one line per run."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.8))
    for ax, (x, y, label, logy) in zip(axes, panels, strict=True):
        for name, run in runs.items():
            ys = [max(v, 1e-12) for v in run.curves[y]] if logy else run.curves[y]  # 0 after a merge
            ax.plot(run.curves[x], ys, marker="o", ms=2.5, label=name)
        ax.set(xlabel="bits sent" if x.startswith("bits") else "round", ylabel=label)
        if logy:
            ax.set_yscale("log")
        if x.startswith("bits"):
            ax.set_xscale("log")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return save(fig, path)


def plot_decentralized(runs: dict[str, RunResult], path: str | Path, title: str = "") -> Path:
    """Merged-model accuracy, mean local accuracy and consensus distance against rounds."""
    return _panels(runs, [("round", "merged_acc", "merged model: test accuracy", False),
                          ("round", "local_acc_mean", "local models: mean test accuracy", False),
                          ("round", "consensus", "consensus distance", True)], path, title)


def plot_federated(runs: dict[str, RunResult], path: str | Path, title: str = "") -> Path:
    """Test accuracy and worst client's loss against rounds, accuracy against uplink bits."""
    return _panels(runs, [("round", "test_acc", "server model: test accuracy", False),
                          ("round", "worst_client_loss", "worst client's loss", True),
                          ("bits_up", "test_acc", "test accuracy", False),
                          ("round", "pi_max", "largest client weight π", False)], path, title)
