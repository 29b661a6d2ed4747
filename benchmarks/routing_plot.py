"""Figures for docs/benchmarks/routing.md from routing_lmask.py's JSON (needs the ``plots`` extra).

    python benchmarks/routing_plot.py docs/benchmarks/routing.json docs/benchmarks/routing.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src: Path, dst: Path) -> None:
    report = json.loads(src.read_text())
    sets = report["headline"]
    fig, axes = plt.subplots(len(sets), 2, figsize=(11, 3.2 * len(sets)), squeeze=False)
    for row, h in zip(axes, sets, strict=True):
        names = [r["method"] for r in h["rows"]]
        sol = [r["sol_inf_pct"] for r in h["rows"]]
        gap = [r["gap_pct"] if r["gap_pct"] is not None else 0.0 for r in h["rows"]]
        row[0].barh(names, sol, color="tab:red")
        row[0].set_xlabel("Sol.Inf % (infeasible solutions)")
        row[0].set_title(f"{h['problem'].upper()}-hard, n = {h['n']}, {h['instances']} instances")
        row[1].barh(names, gap, color="tab:blue")
        row[1].set_xlabel(f"gap % vs {h['reference']} (feasible instances)")
        for ax in row:
            ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
