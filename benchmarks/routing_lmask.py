"""LMask's headline on CPU, at small scale, plus the decoder's throughput (the mask kernel: routing_mask_kernel.py).

1. Train LMask's policy (RIE on, and an ablation with RIE off) on TSPTW-hard and TSPDL-hard;
   evaluate on the fixed test set: LMask (LazyMask, budget R), the same model with one-step
   masking and no backtracking (PIP-like), greedy-C, greedy-C inside LazyMask, PyVRP (TSPTW) and
   CP-SAT (where it finishes). PIP's columns; gaps vs PyVRP (TSPTW) or CP-SAT (TSPDL).
2. Decoding throughput (instances/s) at n = 50 and 100 with the budget R swept.

    OMP_NUM_THREADS=2 python benchmarks/routing_lmask.py --out docs/benchmarks/routing.json

Results and the machine are recorded in docs/benchmarks/routing.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from optiforge.heuristics.routing import lazymask as lm
from optiforge.heuristics.routing.evaluate import run_method
from optiforge.heuristics.routing.instances import fixed_set
from optiforge.heuristics.routing.policy import PolicyConfig
from optiforge.heuristics.routing.train import TrainConfig, train
from optiforge.heuristics.routing.validate import best_feasible, table_row


def headline(problem: str, n: int, args: argparse.Namespace, models: Path) -> dict:
    arch = PolicyConfig(problem, args.embed_dim, args.layers, args.heads, args.ff_dim)
    results: dict = {"problem": problem, "hardness": "hard", "n": n, "instances": args.instances,
                     "train": {}, "rows": []}
    paths = {}
    for rie in (True, False):
        path = models / f"{problem}{n}_{'rie' if rie else 'norie'}.pt"
        cfg = TrainConfig(problem=problem, hardness="hard", n=n, epochs=args.epochs,
                          steps_per_epoch=args.steps, batch_size=args.batch_size, lr=args.lr,
                          budget=args.train_budget, seed=0,
                          policy=PolicyConfig(**{**arch.__dict__, "rie": rie}))
        t0 = time.perf_counter()
        history = train(cfg, path, progress=lambda s, total, st, name=path.name: print(
            f"\r{name} {s}/{total} reward {st['reward']:.3f} feas {st['feasible_pct']:.0f}%",
            end="", flush=True))
        print()
        results["train"][path.name] = {"seconds": time.perf_counter() - t0, "history": history}
        paths[rie] = path
    ins = fixed_set(problem, "hard", n, "test").subset(slice(0, args.instances))
    ref_method = "pyvrp" if problem == "tsptw" else "cpsat"
    methods = [ref_method, f"lmask:{paths[True]}", f"lmask:{paths[False]}", f"pip:{paths[True]}",
               "greedy-c", "lmask-greedy-c"]
    if problem == "tsptw" and n <= 20:
        methods.append("cpsat")
    runs = {}
    for m in methods:
        t0 = time.perf_counter()
        runs[m] = run_method(ins, m, budget=args.test_budget, time_limit_s=args.ref_time)
        print(f"{m}: {time.perf_counter() - t0:.1f}s", flush=True)
    ref = best_feasible(runs[ref_method].checks)
    names = {f"lmask:{paths[True]}": "LMask (RIE)", f"lmask:{paths[False]}": "LMask, RIE off",
             f"pip:{paths[True]}": "same model, no backtracking (PIP-like)",
             "lmask-greedy-c": "greedy-C in LazyMask"}
    for m, run in runs.items():
        row = table_row(names.get(m, m), run.checks, run.time_s, ref).as_dict()
        if run.proven_infeasible is not None:
            row["proven_infeasible"] = int(run.proven_infeasible.sum())
        results["rows"].append(row)
    results["reference"] = ref_method
    return results


def throughput(ns: tuple[int, ...], budgets: tuple[float | None, ...], count: int) -> list[dict]:
    out = []
    for n in ns:
        ins = fixed_set("tsptw", "hard", n, "test").subset(slice(0, count))
        for R in budgets:
            t0 = time.perf_counter()
            res = lm.decode(ins, lm.constraint_chooser(ins), budget=R)
            dt = time.perf_counter() - t0
            out.append({"n": n, "budget": "inf" if R is None else R, "instances_per_s": count / dt,
                        "complete_pct": 100.0 * float((res.status == lm.COMPLETE).mean()),
                        "mean_backtracks": float(res.backtracks.mean())})
            print(out[-1], flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=Path("docs/benchmarks/routing.json"))
    p.add_argument("--models", type=Path, default=Path("/tmp/optiforge-routing-models"))
    p.add_argument("--sizes", type=int, nargs="+", default=[20])
    p.add_argument("--problems", nargs="+", default=["tsptw", "tspdl"])
    p.add_argument("--instances", type=int, default=200)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--steps", type=int, default=25)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--embed-dim", type=int, default=64)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ff-dim", type=int, default=256)
    p.add_argument("--train-budget", type=int, default=50)
    p.add_argument("--test-budget", type=int, default=300)
    p.add_argument("--ref-time", type=float, default=1.0)
    p.add_argument("--skip-headline", action="store_true")
    args = p.parse_args()
    args.models.mkdir(parents=True, exist_ok=True)
    report: dict = {"machine": f"{platform.processor() or platform.machine()}, 2-core CPU, no GPU",
                    "args": {k: str(v) for k, v in vars(args).items()}}
    report["throughput"] = throughput((50, 100), (0, 50, 200, 600, None), 128)
    report["headline"] = []
    if not args.skip_headline:
        for problem in args.problems:
            for n in args.sizes:
                report["headline"].append(headline(problem, n, args, args.models))
                args.out.write_text(json.dumps(report, indent=2, default=str))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
