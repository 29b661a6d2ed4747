"""Bin-packing task benchmark: scoring speed and FunSearch's published anchors.

Prints (and writes docs/img/binpacking_scoring.png):
1. wall time to score one Weibull 5k instance (simulate + trusted validation/count) with the
   vectorised best-fit heuristic; goal <= 1 s;
2. time per instance vs number of items;
3. % excess bins over the L1 bound of first fit, best fit and FunSearch's published Weibull
   heuristic on every dataset, next to the values in FunSearch's Table 1 (Romera-Paredes et
   al., Nature 2024). Our instances are regenerated from the published distributions.

Usage: python benchmarks/binpacking_scoring.py [--repeats 5] [--no-plot]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from optiforge.heuristics import evaluate_in_process, get_task, load_trusted_function
from optiforge.heuristics.binpacking import check_assignment, count_bins, online_pack
from optiforge.heuristics.binpacking.datasets import weibull_items

ROOT = Path(__file__).resolve().parents[1]
FUNSEARCH = ROOT / "tests" / "heuristics" / "binpacking" / "fixtures" / "funsearch_weibull_heuristic.py"

# FunSearch (Nature 2024) Table 1, % excess bins over the L1 lower bound.
PUBLISHED = {
    "first_fit": {"or1": 6.42, "or2": 6.45, "or3": 5.74, "or4": 5.23, "weibull_5k": 4.23, "weibull_10k": 4.20},
    "best_fit": {"or1": 5.81, "or2": 6.06, "or3": 5.37, "or4": 4.94, "weibull_5k": 3.98, "weibull_10k": 3.90},
    "funsearch_weibull": {"weibull_5k": 0.68, "weibull_10k": 0.32},
}


def time_one_instance(fn, items: np.ndarray, capacity: int, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        assignment = online_pack(fn, items, capacity).tolist()
        arr, why = check_assignment(items, assignment, capacity)
        assert why is None
        count_bins(arr)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-plot", action="store_true")
    args = ap.parse_args()

    task = get_task("binpacking")
    best_fit = load_trusted_function(task, task.seeds["best_fit"])
    funsearch = load_trusted_function(task, FUNSEARCH.read_text())
    ds = task.dataset("weibull_5k")
    t5k = time_one_instance(best_fit, ds.instances[0], ds.capacity, args.repeats)
    print(f"score one Weibull 5k instance, best_fit (vectorised): {t5k:.3f} s (median of {args.repeats}); goal <= 1 s")
    t5k_fs = time_one_instance(funsearch, ds.instances[0], ds.capacity, 1)
    print(f"score one Weibull 5k instance, FunSearch heuristic (uses Python max()): {t5k_fs:.3f} s")

    sizes = [1000, 2000, 5000, 10000]
    scaling = {n: time_one_instance(best_fit, weibull_items(99, 0, n), 100, max(1, args.repeats // 2)) for n in sizes}
    print("\nitems  seconds/instance (best_fit)")
    for n, t in scaling.items():
        print(f"{n:>6}  {t:.3f}")

    programs = {"first_fit": task.seeds["first_fit"], "best_fit": task.seeds["best_fit"],
                "funsearch_weibull": FUNSEARCH.read_text()}
    names = ["weibull_5k", "weibull_10k", "or1", "or2", "or3", "or4"]
    print("\n% excess bins over L1 (ours / published FunSearch Table 1)")
    print("| heuristic | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for label, src in programs.items():
        cells = []
        for name in names:
            if label == "funsearch_weibull" and not name.startswith("weibull"):
                cells.append("-")
                continue
            ev = evaluate_in_process(task, src, name)
            pub = PUBLISHED[label].get(name)
            cells.append(f"{ev.score:.2f} / {pub:.2f}" if pub is not None else f"{ev.score:.2f}")
        print(f"| {label} | " + " | ".join(cells) + " |")

    if not args.no_plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3.2))
        ax.plot(list(scaling), list(scaling.values()), "o-", label="best_fit (vectorised)")
        ax.axhline(1.0, color="grey", ls="--", lw=1, label="1 s goal at 5k")
        ax.set_xlabel("items per instance (Weibull)")
        ax.set_ylabel("seconds to score one instance")
        ax.set_title("Online bin packing: simulate + validate")
        ax.legend()
        fig.tight_layout()
        out = ROOT / "docs" / "img" / "binpacking_scoring.png"
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=120)
        print(f"\nwrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
