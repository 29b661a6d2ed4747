"""HOLLM (LLM-free proposers) vs Optuna TPE, CMA-ES and random search on COCO/BBOB.

The 24 noiseless ``bbob`` functions from COCO's own implementation (``cocoex``, the ``bench``
extra), budget ``100 d`` evaluations, COCO instances, one or more runs per instance. Each run
records, for COCO's 51 targets ``f_opt + 10^k`` (k = 2, 1.8, ..., -8), the evaluation at which
the target was first reached, the final regret, and the optimizer's wall time per suggested
point. Results are appended to a JSON-lines file as they finish (a killed run resumes).

    python benchmarks/bbob.py run --dims 2,5 --instances 1,2 --runs 1 --workers 2
    python benchmarks/bbob.py report          # tables (markdown) + ECDF plots from the results

Methods: ``hollm-<proposer>`` (proposer one of sobol, gaussian, gp-ts, cmaes, mix; GP
predictor, other settings HOLLM's defaults, 4 points per ask), ``tpe`` (Optuna's default
``TPESampler``), ``cmaes`` (``cma`` with IPOP restarts, sigma0 = 2, x0 uniform in
``[-4, 4]^d``, as in COCO's example experiment), ``random``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from optiforge.agents.hollm import HOLLMAgent  # noqa: E402
from optiforge.blackbox.bbob import GROUPS, bbob_task, function_group  # noqa: E402

HERE = Path(__file__).resolve().parent.parent
OUT = HERE / "docs" / "benchmarks" / "bbob.jsonl"
IMG = HERE / "docs" / "img"
TARGETS = 10.0 ** np.linspace(2, -8, 51)
METHODS = ["hollm-gp-ts", "hollm-cmaes", "hollm-mix", "hollm-sobol", "tpe", "cmaes", "random"]
BATCH = 4


class Recorder:
    """Counts evaluations and the first evaluation that reached each target."""

    def __init__(self, task, budget: int) -> None:
        self.task, self.budget = task, budget
        self.n = 0
        self.best = np.inf
        self.hits: list[int | None] = [None] * len(TARGETS)
        self.checkpoints: dict[str, float] = {}

    def __call__(self, x: np.ndarray) -> float:
        v = self.task.evaluate_array(x)
        self.n += 1
        r = self.task.regret(v)
        if r < self.best:
            self.best = r
            for j, t in enumerate(TARGETS):
                if self.hits[j] is None and r <= t:
                    self.hits[j] = self.n
        for frac in (0.1, 0.25, 0.5, 1.0):
            if self.n == max(1, int(frac * self.budget)):
                self.checkpoints[str(frac)] = float(self.best)
        return v

    @property
    def done(self) -> bool:
        return self.n >= self.budget


def run_hollm(task, rec: Recorder, seed: int, proposer: str) -> tuple[float, int]:
    agent = HOLLMAgent(task.space, {"proposer": proposer, "budget": rec.budget}, seed=seed)
    spent, asks = 0.0, 0
    while not rec.done:
        t0 = time.perf_counter()
        points = agent.ask(min(BATCH, rec.budget - rec.n))
        spent += time.perf_counter() - t0
        asks += len(points)
        for p in points:
            agent.tell(p, rec(np.array([p[n] for n in task.space.names])))
    return spent, asks


def run_tpe(task, rec: Recorder, seed: int) -> tuple[float, int]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed))
    dists = {n: optuna.distributions.FloatDistribution(p.low, p.high) for n, p in task.space.params.items()}
    spent, asks = 0.0, 0
    while not rec.done:
        t0 = time.perf_counter()
        trial = study.ask(dists)
        spent += time.perf_counter() - t0
        asks += 1
        study.tell(trial, rec(np.array([trial.params[n] for n in task.space.names])))
    return spent, asks


def run_cmaes(task, rec: Recorder, seed: int) -> tuple[float, int]:
    import cma

    d = task.dim
    rng = np.random.default_rng(seed)
    spent, asks, popsize = 0.0, 0, 4 + int(3 * np.log(d))
    while not rec.done:  # IPOP: restart with a doubled population until the budget is spent
        es = cma.CMAEvolutionStrategy(rng.uniform(-4, 4, d), 2.0, {
            "bounds": [-5, 5], "seed": int(rng.integers(1, 2**31 - 1)), "verbose": -9,
            "popsize": popsize, "maxfevals": rec.budget - rec.n})
        while not es.stop() and not rec.done:
            t0 = time.perf_counter()
            xs = es.ask()
            spent += time.perf_counter() - t0
            asks += len(xs)
            fs = [rec(np.clip(x, -5, 5)) for x in xs[: rec.budget - rec.n]]
            if len(fs) < len(xs):
                break
            t0 = time.perf_counter()
            es.tell(xs, fs)
            spent += time.perf_counter() - t0
        popsize *= 2
    return spent, asks


def run_random(task, rec: Recorder, seed: int) -> tuple[float, int]:
    rng = np.random.default_rng(seed)
    while not rec.done:
        rec(rng.uniform(-5, 5, task.dim))
    return 0.0, rec.budget


def run_one(job: tuple[str, int, int, int, int]) -> dict:
    method, f, d, inst, run = job
    task = bbob_task(f, d, inst)
    budget = 100 * d
    rec = Recorder(task, budget)
    seed = 1000 * inst + run
    t0 = time.perf_counter()
    if method.startswith("hollm-"):
        spent, asks = run_hollm(task, rec, seed, method.removeprefix("hollm-"))
    else:
        spent, asks = {"tpe": run_tpe, "cmaes": run_cmaes, "random": run_random}[method](task, rec, seed)
    return {"method": method, "f": f, "d": d, "instance": inst, "run": run, "budget": budget,
            "final_regret": float(rec.best), "checkpoints": rec.checkpoints, "hits": rec.hits,
            "ask_ms": 1000 * spent / max(asks, 1), "wall_s": time.perf_counter() - t0}


def _key(r: dict) -> tuple:
    return (r["method"], r["f"], r["d"], r["instance"], r["run"])


def load(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def cmd_run(args: argparse.Namespace) -> None:
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from rich.progress import Progress

    done = {_key(r) for r in load(args.out)}
    jobs = [(m, f, d, i, r) for d in args.dims for i in args.instances for r in range(args.runs)
            for f in args.functions for m in args.methods]
    jobs = [j for j in jobs if j not in done]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with Progress() as bar, ProcessPoolExecutor(args.workers) as pool, args.out.open("a") as fh:
        task = bar.add_task("bbob runs", total=len(jobs))
        futures = [pool.submit(run_one, j) for j in jobs]
        for fut in as_completed(futures):
            fh.write(json.dumps(fut.result()) + "\n")
            fh.flush()
            bar.advance(task)


def _median_regret(rows: list[dict], method: str, f: int, d: int) -> float | None:
    vals = [r["final_regret"] for r in rows if r["method"] == method and r["f"] == f and r["d"] == d]
    return float(np.median(vals)) if vals else None


def cmd_report(args: argparse.Namespace) -> None:
    rows = load(args.out)
    methods = [m for m in METHODS if any(r["method"] == m for r in rows)]
    dims = sorted({r["d"] for r in rows})
    summary: dict = {}
    for d in dims:
        runs = {m: sorted({(r["instance"], r["run"]) for r in rows if r["method"] == m and r["d"] == d})
                for m in methods}
        print(f"\n#### d = {d} (budget {100 * d}; runs per function: "
              + ", ".join(f"{m} {len(v)}" for m, v in runs.items()) + ")\n")
        print("| f | group | " + " | ".join(methods) + " |")
        print("|---|---|" + "---|" * len(methods))
        wins: dict = {}
        for f in range(1, 25):
            med = {m: _median_regret(rows, m, f, d) for m in methods}
            if med.get("tpe") is None or all(v is None for m, v in med.items() if m.startswith("hollm-")):
                continue  # a row needs TPE and at least one HOLLM variant
            best = min(v for v in med.values() if v is not None)
            cells = [("**%.3g**" if v == best else "%.3g") % v if v is not None else "–" for v in med.values()]
            print(f"| f{f} | {function_group(f)} | " + " | ".join(cells) + " |")
            if med.get("tpe") is not None:
                for m in methods:
                    if m.startswith("hollm-") and med[m] is not None:
                        w = wins.setdefault(m, {g: [0, 0] for g in GROUPS})
                        w[function_group(f)][1] += 1
                        w[function_group(f)][0] += int(med[m] < med["tpe"])
        print("\nMedian final regret per function group (over the group's functions and runs):\n")
        print("| method | " + " | ".join(GROUPS) + " |")
        print("|---|" + "---|" * len(GROUPS))
        for m in methods:
            cells = []
            for fids in GROUPS.values():
                vals = [r["final_regret"] for r in rows if r["method"] == m and r["d"] == d and r["f"] in fids]
                cells.append(f"{np.median(vals):.3g}" if vals else "–")
            print(f"| {m} | " + " | ".join(cells) + " |")
        print("\nHOLLM ahead of TPE in median final regret (functions won / compared), per group:\n")
        print("| variant | " + " | ".join(GROUPS) + " | f15–f24 |")
        print("|---|" + "---|" * (len(GROUPS) + 1))
        for m, w in wins.items():
            hard = [sum(w[g][i] for g in ("multimodal", "weakly-structured")) for i in (0, 1)]
            print(f"| {m} | " + " | ".join(f"{a}/{b}" for a, b in w.values()) + f" | {hard[0]}/{hard[1]} |")
        ask = {m: float(np.median([r["ask_ms"] for r in rows if r["method"] == m and r["d"] == d]))
               for m in methods}
        print("\nMedian wall time per suggested point (ms): "
              + ", ".join(f"{m} {v:.2f}" for m, v in ask.items()))
        summary[str(d)] = {"wins_vs_tpe": wins, "ask_ms": ask}
    (args.out.parent / "bbob_summary.json").write_text(json.dumps(summary, indent=1))
    _plot(rows, methods, dims)


def _ecdf(rows: list[dict], method: str, d: int, fids: tuple[int, ...], grid: np.ndarray) -> np.ndarray:
    """COCO's runtime ECDF: fraction of (run, target) pairs solved by ``grid`` evaluations / d."""
    hits = [h for r in rows if r["method"] == method and r["d"] == d and r["f"] in fids for h in r["hits"]]
    if not hits:
        return np.full(len(grid), np.nan)
    when = np.array([np.inf if h is None else h / d for h in hits])
    return np.array([(when <= g).mean() for g in grid])


def _plot(rows: list[dict], methods: list[str], dims: list[int]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = {"all measured": tuple(range(1, 25)), **GROUPS}
    grid = np.logspace(0, 2, 60)
    fig, axes = plt.subplots(len(dims), len(groups), figsize=(3.2 * len(groups), 2.8 * len(dims)),
                             squeeze=False, sharey=True)
    for a, d in enumerate(dims):
        for b, (g, fids) in enumerate(groups.items()):
            ax = axes[a][b]
            if not any(r["d"] == d and r["f"] in fids for r in rows):
                ax.set_axis_off()
                ax.set_title(f"{g}, d={d}: not run", fontsize=9)
                continue
            for m in methods:
                ax.plot(grid, _ecdf(rows, m, d, fids, grid), label=m, lw=1.6 if m.startswith("hollm") else 1.0,
                        ls="-" if m.startswith("hollm") else "--")
            ax.set_xscale("log")
            ax.set_title(f"{g}, d={d}", fontsize=9)
            ax.grid(alpha=0.3)
            if a == len(dims) - 1:
                ax.set_xlabel("evaluations / d")
            if b == 0:
                ax.set_ylabel("fraction of targets")
    axes[0][0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    IMG.mkdir(parents=True, exist_ok=True)
    fig.savefig(IMG / "bbob_ecdf.png", dpi=110)
    print(f"\nplot: {IMG / 'bbob_ecdf.png'}")


def _ints(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["run", "report"])
    ap.add_argument("--dims", type=_ints, default=[2, 5])
    ap.add_argument("--functions", type=_ints, default=list(range(1, 25)))
    ap.add_argument("--instances", type=_ints, default=[1, 2])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--methods", type=lambda s: s.split(","), default=METHODS)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    cmd_run(args) if args.command == "run" else cmd_report(args)


if __name__ == "__main__":
    main()
