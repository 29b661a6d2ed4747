"""TSP task benchmark: quality and cost of the trusted reference tour, and seed gaps.

Prints:
1. reference (NN + 2-opt + Or-opt, 4 starts) vs exact Held-Karp on random N=10 instances;
2. mean reference length on each test dataset next to published mean optimal lengths for
   uniform random instances (Concorde averages used in the neural-CO literature, e.g.
   Kool et al., ICLR 2019: TSP20 3.83, TSP50 5.69, TSP100 7.76; TSP200 ~10.72), with the
   time to compute the references;
3. the nearest-neighbour seed's % gap on each split.

Usage: python benchmarks/tsp_reference.py
"""

from __future__ import annotations

import time

import numpy as np

from optiforge.heuristics import evaluate_in_process, get_task
from optiforge.heuristics.tsp import distance_matrix, held_karp, reference_tour, tour_length
from optiforge.heuristics.tsp.task import reference_lengths

PUBLISHED_OPT = {"tsp20": 3.83, "tsp50": 5.69, "tsp100": 7.76, "tsp200": 10.72}


def main() -> None:
    rng = np.random.default_rng(123)
    gaps = []
    for _ in range(30):
        dist = distance_matrix(rng.random((10, 2)))
        opt, _ = held_karp(dist)
        gaps.append(100 * (tour_length(dist, reference_tour(dist)) / opt - 1))
    print(f"reference vs Held-Karp, 30 x N=10: mean gap {np.mean(gaps):.3f} %, max {np.max(gaps):.3f} %, "
          f"optimal in {sum(g < 1e-9 for g in gaps)}/30")

    task = get_task("tsp")
    print("\n| dataset | instances | mean reference length | published mean optimum | ref. time (s) |")
    print("|---|---|---|---|---|")
    for name in task.split_datasets("test"):
        t0 = time.perf_counter()
        refs = reference_lengths(name)
        dt = time.perf_counter() - t0
        print(f"| {name} | {len(refs)} | {refs.mean():.3f} | {PUBLISHED_OPT[name]:.2f} | {dt:.2f} |")

    print("\nnearest_neighbor seed, % gap to reference")
    for split in ("train", "validation", "test"):
        t0 = time.perf_counter()
        ev = evaluate_in_process(task, task.seeds["nearest_neighbor"], split)
        per = ", ".join(f"{k.split('/')[0]} {v:.2f}" for k, v in ev.metrics.items() if k.endswith("gap_pct"))
        print(f"{split}: {ev.score:.2f} ({per}); {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
