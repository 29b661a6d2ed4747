"""Incremental matching benchmark: final cost / OPT and time per request, per dataset and method.

For each data family and seed: one instance of n servers and n requests, the exact optimum
(``linear_sum_assignment``), then each method in arrival order. Prints, per family and method,
the mean and standard deviation of final cost / OPT over the seeds, the mean and p99 time per
request, and the paper's question: is push-relabel below greedy on every family? With
``--plot-dir`` it also writes the cost / OPT curve of the first seed as requests arrive.

Usage::

    python benchmarks/matching_quality.py --n 2000 --seeds 10 --methods greedy quadtree opt
    python benchmarks/matching_quality.py --n 2000 --seeds 1 --methods greedy pushrelabel --bid
    python benchmarks/matching_quality.py --n 10000 --seeds 1 --data uniform --methods greedy opt

Cost: OPT takes ~1 s at n = 2,000 and ~1-2 min at 10,000 (2 shared cores); the numpy
push-relabel reference with --bid ~1-4 min per instance at 2,000 (see docs/benchmarks/matching.md).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from optiforge.heuristics.matching import (
    FAMILIES,
    METHODS,
    PushRelabelParams,
    make_instance,
    run_method,
)
from optiforge.heuristics.matching.runner import default_checkpoints, opt_curve


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--data", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    ap.add_argument("--methods", nargs="+", default=["greedy", "quadtree", "pushrelabel"], choices=list(METHODS))
    ap.add_argument("--bid", action="store_true", help="push-relabel with auction bids (not in the paper)")
    ap.add_argument("--delta", type=float, default=0.001)
    ap.add_argument("--batch-size", type=int, default=200)
    ap.add_argument("--plot-dir", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help="also write every run's summary here")
    args = ap.parse_args()
    params = PushRelabelParams(delta=args.delta, bid=args.bid)
    rows, dump = [], []
    for family in args.data:
        ratios: dict[str, list[float]] = {m: [] for m in args.methods}
        times: dict[str, list[np.ndarray]] = {m: [] for m in args.methods}
        for seed in range(args.seeds):
            inst = make_instance(family, args.n, seed)
            points = default_checkpoints(inst.n_requests, args.batch_size)
            start = time.perf_counter()
            opt_at = opt_curve(inst, points) if args.plot_dir and seed == 0 else None
            opt = opt_at[-1] if opt_at else opt_curve(inst, [inst.n_requests])[0]
            opt_s = time.perf_counter() - start
            runs = []
            for m in args.methods:
                if m == "quadtree" and inst.dim != 2:
                    continue
                run = run_method(inst, m, params=params, batch_size=args.batch_size, seed=seed,
                                 checkpoints=points)
                runs.append(run)
                ratios[m].append(run.cost / opt)
                times[m].append(run.request_times)
                dump.append({"data": family, "n": args.n, "seed": seed, "opt": opt, "opt_s": opt_s,
                             **run.summary(opt)})
                print(f"{family} seed {seed}: {m} cost {run.cost:.6g} OPT {opt:.6g} ratio {run.cost / opt:.4f} "
                      f"({run.request_times.sum():.1f} s; OPT {opt_s:.1f} s)", flush=True)
            if opt_at is not None:
                from optiforge.heuristics.matching.plots import plot_ratio

                args.plot_dir.mkdir(parents=True, exist_ok=True)
                plot_ratio(runs, opt_at, args.plot_dir / f"matching_{family}_{args.n}.png",
                           title=f"{family}, n = {args.n}, seed 0")
        for m in args.methods:
            if ratios[m]:
                t = np.concatenate(times[m])
                rows.append((family, m, np.mean(ratios[m]), np.std(ratios[m]), len(ratios[m]),
                             t.mean() * 1e3, np.percentile(t, 99) * 1e3))
    print(f"\nn = {args.n}, delta = {args.delta}, bid = {args.bid}")
    print("| data | method | cost / OPT (mean ± sd) | seeds | ms/request mean | ms/request p99 |")
    print("|---|---|---|---|---|---|")
    for fam, m, mu, sd, k, tm, tp in rows:
        print(f"| {fam} | {m} | {mu:.4f} ± {sd:.4f} | {k} | {tm:.3f} | {tp:.3f} |")
    by = {(fam, m): mu for fam, m, mu, *_ in rows}
    for pr in ("pushrelabel", "pushrelabel-batched"):
        fams = [f for f in args.data if (f, pr) in by and (f, "greedy") in by]
        if fams:
            below = all(by[(f, pr)] < by[(f, "greedy")] for f in fams)
            print(f"{pr} below greedy on every dataset ({', '.join(fams)}): {below}")
    if args.json:
        args.json.write_text(json.dumps(dump, indent=1))


if __name__ == "__main__":
    main()
