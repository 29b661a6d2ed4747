"""Sweep of HOLLM's defaults (M regions, k candidates per region, alpha schedule) on BBOB.

LLM-free HOLLM (``gp-ts`` proposer, GP predictor, 4 points per ask, budget ``100 d``) on COCO's
``bbob`` functions with one setting changed at a time. Run it on *tuning* instances (default
3 and 4), not on the instances the results are reported on (1 and 2 in ``bbob.py``), so the
chosen defaults are not fitted to the reported figures. Results are appended to a JSON-lines
file as they finish (a killed sweep resumes).

    python benchmarks/hollm_sweep.py run --configs default,m3,m8,k3,k10,amax0.5
    python benchmarks/hollm_sweep.py report

Report: per setting, the geometric mean of the final regret over all (function, instance)
pairs, its ratio to the default's, and on how many pairs it is better / worse than the default.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from optiforge.agents.hollm import HOLLMAgent  # noqa: E402
from optiforge.blackbox.bbob import bbob_task, int_ranges  # noqa: E402

HERE = Path(__file__).resolve().parent.parent
OUT = HERE / "docs" / "benchmarks" / "hollm_sweep.jsonl"
BATCH = 4
CONFIGS: dict[str, dict[str, float]] = {
    "default": {},
    "m3": {"m": 3},
    "m8": {"m": 8},
    "k3": {"k": 3},
    "k10": {"k": 10},
    "amax0.5": {"alpha_max": 0.5},
    "amin0.1": {"alpha_min": 0.1},
}
"""Settings changed from HOLLM's defaults (M = 5, k = 5, alpha 1.0 -> 0.01)."""


def run_one(config: str, f: int, d: int, instance: int, run: int) -> dict:
    """One optimisation run: final regret and wall time per suggested point."""
    task = bbob_task(f, d, instance)
    budget = 100 * d
    options = {"proposer": "gp-ts", "budget": budget, **CONFIGS[config]}
    agent = HOLLMAgent(task.space, options, seed=1000 * instance + run)
    best, n, spent = math.inf, 0, 0.0
    while n < budget:
        t0 = time.perf_counter()
        points = agent.ask(min(BATCH, budget - n))
        spent += time.perf_counter() - t0
        for p in points:
            value = task.evaluate_array(np.array([p[name] for name in task.space.names]))
            agent.tell(p, value)
            best = min(best, task.regret(value))
            n += 1
    return {
        "config": config,
        "options": CONFIGS[config],
        "f": f,
        "d": d,
        "instance": instance,
        "run": run,
        "budget": budget,
        "final_regret": float(best),
        "ask_ms": 1000 * spent / budget,
    }


def load(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def cmd_run(args: argparse.Namespace) -> None:
    done = {(r["config"], r["f"], r["d"], r["instance"], r["run"]) for r in load(args.out)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as fh:
        for config in args.configs:
            for d in args.dims:
                for instance in args.instances:
                    for run in range(args.runs):
                        for f in args.functions:
                            if (config, f, d, instance, run) in done:
                                continue
                            fh.write(json.dumps(run_one(config, f, d, instance, run)) + "\n")
                            fh.flush()
            print(f"done: {config}", flush=True)


def cmd_report(args: argparse.Namespace) -> None:
    rows = load(args.out)
    floor = 1e-8  # COCO's final target: regrets below it count as solved
    by = {
        (r["config"], r["f"], r["d"], r["instance"], r["run"]): max(r["final_regret"], floor)
        for r in rows
    }
    base = {k[1:]: v for k, v in by.items() if k[0] == "default"}
    print(
        "| setting | options | pairs | geometric mean regret | ratio to default | better | worse |"
    )
    print("|---|---|---|---|---|---|---|")
    for config in dict.fromkeys(r["config"] for r in rows):
        pairs = [(v, base[k[1:]]) for k, v in by.items() if k[0] == config and k[1:] in base]
        if not pairs:
            continue
        mine, ref = np.array(pairs).T
        gm = float(np.exp(np.mean(np.log(mine))))
        ratio = float(np.exp(np.mean(np.log(mine) - np.log(ref))))
        print(
            f"| {config} | {json.dumps(CONFIGS.get(config, {}))} | {len(pairs)} | {gm:.3g} | {ratio:.2f} "
            f"| {int(np.sum(mine < ref))} | {int(np.sum(mine > ref))} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["run", "report"])
    ap.add_argument("--configs", type=lambda s: s.split(","), default=list(CONFIGS))
    ap.add_argument("--dims", type=int_ranges, default=[5])
    ap.add_argument("--functions", type=int_ranges, default=list(range(15, 25)))
    ap.add_argument("--instances", type=int_ranges, default=[3, 4])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    unknown = [c for c in args.configs if c not in CONFIGS]
    if unknown:
        ap.error(
            f"--configs: unknown setting(s) {', '.join(unknown)}; choose from {', '.join(CONFIGS)}"
        )
    cmd_run(args) if args.command == "run" else cmd_report(args)


if __name__ == "__main__":
    main()
