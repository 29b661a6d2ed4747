"""HOLLM (LLM-free proposers) vs Optuna TPE, CMA-ES, SMAC3, BoTorch and random search on COCO/BBOB.

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
``[-4, 4]^d``, as in COCO's example experiment), ``smac`` (SMAC3's random-forest facade,
``run_smac``), ``botorch-turbo`` (TuRBO-1 from BoTorch's GP and Thompson sampling,
``run_turbo``), ``random``. SMAC3 and BoTorch are in the ``bench`` extra.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

# Run as a script, this folder is first on sys.path, and its distributed.py would hide dask's
# ``distributed`` package, which SMAC imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from optiforge.agents.hollm import HOLLMAgent  # noqa: E402
from optiforge.blackbox.bbob import GROUPS, bbob_task, function_group, int_ranges  # noqa: E402
from optiforge.extras import missing_extra  # noqa: E402

HERE = Path(__file__).resolve().parent.parent
OUT = HERE / "docs" / "benchmarks" / "bbob.jsonl"
IMG = HERE / "docs" / "img"
TARGETS = 10.0 ** np.linspace(2, -8, 51)
METHODS = [
    "hollm-gp-ts",
    "hollm-cmaes",
    "hollm-mix",
    "hollm-sobol",
    "tpe",
    "cmaes",
    "smac",
    "botorch-turbo",
    "random",
]
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
    dists = {
        n: optuna.distributions.FloatDistribution(p.low, p.high)
        for n, p in task.space.params.items()
    }
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
        es = cma.CMAEvolutionStrategy(
            rng.uniform(-4, 4, d),
            2.0,
            {
                "bounds": [-5, 5],
                "seed": int(rng.integers(1, 2**31 - 1)),
                "verbose": -9,
                "popsize": popsize,
                "maxfevals": rec.budget - rec.n,
            },
        )
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


def _require(module: str, method: str):
    """Import ``module`` for ``method``, or stop with one line naming the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing_extra("bench", f"the '{method}' BBOB method", module) from exc


def run_smac(task, rec: Recorder, seed: int) -> tuple[float, int]:
    """SMAC3's ``HyperparameterOptimizationFacade`` (random forest + log EI) through ask/tell.

    Lindauer et al., "SMAC3: A Versatile Bayesian Optimization Package for Hyperparameter
    Optimization", JMLR 23 (2022). The facade's defaults are kept (Sobol initial design,
    random-forest surrogate, local and random search of the acquisition, 20 % random
    configurations) except that each configuration is run once: the functions are
    deterministic. SMAC's output directory is a temporary one. Deviation from the issue's
    "SMAC3": the GP facade (``BlackBoxFacade``) took 2.5 s per ask already at 100 evaluations in
    5-D on this machine (load 6.7), too slow for 500-1,000 evaluations per run here.
    """
    import tempfile

    _require("smac", "smac")
    from ConfigSpace import ConfigurationSpace, Float
    from smac import HyperparameterOptimizationFacade as Facade
    from smac import Scenario
    from smac.runhistory.dataclasses import TrialValue

    space = ConfigurationSpace(seed=seed)
    space.add([Float(n, (p.low, p.high)) for n, p in task.space.params.items()])
    spent, asks = 0.0, 0
    with tempfile.TemporaryDirectory(prefix="bbob-smac-") as tmp:
        scenario = Scenario(
            space,
            deterministic=True,
            n_trials=rec.budget,
            seed=seed,
            output_directory=Path(tmp) / "smac",
        )
        smac = Facade(
            scenario,
            lambda config, seed=0: 0.0,
            overwrite=True,
            logging_level=40,
            intensifier=Facade.get_intensifier(scenario, max_config_calls=1),
        )
        while not rec.done:
            t0 = time.perf_counter()
            info = smac.ask()
            spent += time.perf_counter() - t0
            asks += 1
            value = rec(np.array([info.config[n] for n in task.space.names]))
            t0 = time.perf_counter()
            smac.tell(info, TrialValue(cost=value))
            spent += time.perf_counter() - t0
    return spent, asks


def run_turbo(task, rec: Recorder, seed: int) -> tuple[float, int]:
    """TuRBO-1 built from BoTorch's components: a local GP's Thompson sampling in a trust region.

    Eriksson et al., "Scalable Global Optimization via Local Bayesian Optimization", NeurIPS 2019.
    Inputs are scaled to ``[0, 1]^d``; a ``SingleTaskGP`` (BoTorch's default kernel and priors,
    outcomes standardised) is fitted by ``fit_gpytorch_mll`` to the observations since the last
    restart; the trust region is a box around the best of them with side ``L`` per dimension
    scaled by the GP's ARD lengthscales (geometric mean 1); ``BATCH`` points per ask are drawn
    by ``MaxPosteriorSampling`` (Thompson sampling) from ``min(5000, 200 d)`` Sobol candidates in
    the region, each perturbing a coordinate of the centre with probability ``min(1, 20/d)``.
    ``L`` starts at 0.8, doubles after 3 successive improving batches (to at most 1.6), halves
    after ``ceil(max(4, d) / BATCH)`` failures, and below ``0.5^7`` the run restarts with a fresh
    Sobol design. Deviations: the initial design has ``2 d + 1`` points (the paper's is ``2 d``),
    and the batch is 4 points, as HOLLM's, so one ask fits the GP once for 4 points. The time
    per ask covers the fit and the Thompson sampling; the Sobol designs are neither timed nor
    counted as asked points.
    """
    _require("botorch", "botorch")
    import math

    import torch
    from botorch.fit import fit_gpytorch_mll
    from botorch.generation import MaxPosteriorSampling
    from botorch.models import SingleTaskGP
    from botorch.models.transforms import Standardize
    from gpytorch.mlls import ExactMarginalLogLikelihood
    from torch.quasirandom import SobolEngine

    torch.set_num_threads(1)
    d = task.dim
    lo = np.array([p.low for p in task.space.params.values()])
    hi = np.array([p.high for p in task.space.params.values()])
    gen = torch.Generator().manual_seed(seed)
    sobol_seed = iter(range(seed, seed + 10**6))
    fail_tol, succ_tol, length_min, length_max = math.ceil(max(4, d) / BATCH), 3, 0.5**7, 1.6
    n_cand = min(5000, 200 * d)
    spent, asks = 0.0, 0

    def evaluate(unit: torch.Tensor) -> torch.Tensor:
        xs = unit.numpy()[: rec.budget - rec.n]
        return torch.tensor([[-rec(lo + x * (hi - lo))] for x in xs], dtype=torch.double)

    while not rec.done:  # one TuRBO run per restart
        X = SobolEngine(d, scramble=True, seed=next(sobol_seed)).draw(2 * d + 1).double()
        Y = evaluate(X)
        X = X[: len(Y)]
        length, succ, fail = 0.8, 0, 0
        while not rec.done and length >= length_min:
            t0 = time.perf_counter()
            model = SingleTaskGP(X, Y, outcome_transform=Standardize(1))
            with warnings.catch_warnings():  # a non-converged fit still gives a usable GP
                warnings.simplefilter("ignore")
                fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
            centre = X[Y.argmax()]
            scale = model.covar_module.lengthscale.detach().view(-1)
            scale = scale / scale.log().mean().exp()
            lb = (centre - scale * length / 2).clamp(0, 1)
            ub = (centre + scale * length / 2).clamp(0, 1)
            pert = (
                lb
                + (ub - lb)
                * SobolEngine(d, scramble=True, seed=next(sobol_seed)).draw(n_cand).double()
            )
            mask = torch.rand(n_cand, d, generator=gen, dtype=torch.double) <= min(1.0, 20.0 / d)
            mask[
                mask.sum(1) == 0, torch.randint(d, (int((mask.sum(1) == 0).sum()),), generator=gen)
            ] = True
            cand = torch.where(mask, pert, centre.expand(n_cand, d))
            with torch.no_grad():
                x_next = MaxPosteriorSampling(model=model, replacement=False)(
                    cand, num_samples=BATCH
                )
            spent += time.perf_counter() - t0
            asks += len(x_next)
            y_next = evaluate(x_next)
            if y_next.max() > Y.max() + 1e-3 * Y.max().abs():
                succ, fail = succ + 1, 0
            else:
                succ, fail = 0, fail + 1
            if succ == succ_tol:
                length, succ = min(2 * length, length_max), 0
            elif fail == fail_tol:
                length, fail = length / 2, 0
            X, Y = torch.cat([X, x_next[: len(y_next)]]), torch.cat([Y, y_next])
    return spent, asks


def run_random(task, rec: Recorder, seed: int) -> tuple[float, int]:
    rng = np.random.default_rng(seed)
    while not rec.done:
        rec(rng.uniform(-5, 5, task.dim))
    return 0.0, rec.budget


RUNNERS = {
    "tpe": run_tpe,
    "cmaes": run_cmaes,
    "smac": run_smac,
    "botorch-turbo": run_turbo,
    "random": run_random,
}


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
        spent, asks = RUNNERS[method](task, rec, seed)
    return {
        "method": method,
        "f": f,
        "d": d,
        "instance": inst,
        "run": run,
        "budget": budget,
        "final_regret": float(rec.best),
        "checkpoints": rec.checkpoints,
        "hits": rec.hits,
        "ask_ms": 1000 * spent / max(asks, 1),
        "wall_s": time.perf_counter() - t0,
        "load1": os.getloadavg()[0],
    }  # wall times depend on the machine's load: keep it beside them


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
    jobs = [
        (m, f, d, i, r)
        for d in args.dims
        for i in args.instances
        for r in range(args.runs)
        for f in args.functions
        for m in args.methods
    ]
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
    vals = [
        r["final_regret"] for r in rows if r["method"] == method and r["f"] == f and r["d"] == d
    ]
    return float(np.median(vals)) if vals else None


# The goal is stated on the multimodal and weakly structured f15-f24.
HARD = tuple(range(15, 25))


def _wins(med: dict[int, dict[str, float | None]], a: str, b: str, fids) -> tuple[int, int]:
    """Functions of ``fids`` where ``a``'s median final regret is below ``b``'s (ties go to ``b``)."""
    both = [f for f in fids if f in med and med[f].get(a) is not None and med[f].get(b) is not None]
    return sum(med[f][a] < med[f][b] for f in both), len(both)


def _load_range(rows: list[dict], method: str, d: int) -> str:
    loads = [r["load1"] for r in rows if r["method"] == method and r["d"] == d and "load1" in r]
    return f"{min(loads):.1f}–{max(loads):.1f}" if loads else "–"


def _frac(won_compared: tuple[int, int]) -> str:
    return f"{won_compared[0]}/{won_compared[1]}" if won_compared[1] else "–"


def cmd_report(args: argparse.Namespace) -> None:
    rows = load(args.out)
    if not rows:
        raise SystemExit(f"bbob report: no results in {args.out}")
    methods = [m for m in METHODS if any(r["method"] == m for r in rows)]
    dims = sorted({r["d"] for r in rows})
    summary: dict = {}
    for d in dims:
        here = [m for m in methods if any(r["method"] == m and r["d"] == d for r in rows)]
        hollm = [m for m in here if m.startswith("hollm-")]
        others = [m for m in here if not m.startswith("hollm-")]
        runs = {
            m: len(
                {
                    (r["f"], r["instance"], r["run"])
                    for r in rows
                    if r["method"] == m and r["d"] == d
                }
            )
            for m in here
        }
        print(
            f"\n#### d = {d} (budget {100 * d}; runs in all: "
            + ", ".join(f"{m} {n}" for m, n in runs.items())
            + ")\n"
        )
        print("| f | group | " + " | ".join(here) + " | runs per method |")
        print("|---|---|" + "---|" * (len(here) + 1))
        med: dict[int, dict[str, float | None]] = {}
        for f in range(1, 25):
            med[f] = {m: _median_regret(rows, m, f, d) for m in here}
            if all(v is None for v in med[f].values()):
                continue
            best = min(v for v in med[f].values() if v is not None)
            cells = [
                ("**%.3g**" if v == best else "%.3g") % v if v is not None else "–"
                for v in med[f].values()
            ]
            counts = sorted(
                {sum(r["method"] == m and r["f"] == f and r["d"] == d for r in rows) for m in here}
                - {0}
            )
            print(
                f"| f{f} | {function_group(f)} | "
                + " | ".join(cells)
                + f" | {'/'.join(map(str, counts))} |"
            )
        print(
            "\nMedian final regret per function group (over the group's functions and runs; "
            "a method's cell covers only the functions it ran):\n"
        )
        print("| method | " + " | ".join(GROUPS) + " |")
        print("|---|" + "---|" * len(GROUPS))
        for m in here:
            cells = []
            for fids in GROUPS.values():
                vals = [
                    r["final_regret"]
                    for r in rows
                    if r["method"] == m and r["d"] == d and r["f"] in fids
                ]
                cells.append(f"{np.median(vals):.3g}" if vals else "–")
            print(f"| {m} | " + " | ".join(cells) + " |")
        wins = {m: {g: _wins(med, m, "tpe", fids) for g, fids in GROUPS.items()} for m in hollm}
        if "tpe" in here and hollm:
            print(
                "\nHOLLM ahead of TPE in median final regret (functions won / compared), per group:\n"
            )
            print("| variant | " + " | ".join(GROUPS) + " | f15–f24 |")
            print("|---|" + "---|" * (len(GROUPS) + 1))
            for m in hollm:
                print(
                    f"| {m} | "
                    + " | ".join(_frac(wins[m][g]) for g in GROUPS)
                    + f" | {_frac(_wins(med, m, 'tpe', HARD))} |"
                )
        versus = {m: {o: _wins(med, m, o, HARD) for o in others} for m in hollm}
        if hollm and others:
            print("\nHOLLM ahead of each competitor on f15–f24 (functions won / compared):\n")
            print("| variant | " + " | ".join(others) + " |")
            print("|---|" + "---|" * len(others))
            for m in hollm:
                print(f"| {m} | " + " | ".join(_frac(versus[m][o]) for o in others) + " |")
        ask = {
            m: float(np.median([r["ask_ms"] for r in rows if r["method"] == m and r["d"] == d]))
            for m in here
        }
        print(
            "\nMedian wall time per suggested point (ms; median over runs of each run's mean), and"
            " the range of the 1-min load average at the end of those runs (– where not recorded):\n"
        )
        print("| | " + " | ".join(here) + " |")
        print("|---|" + "---|" * len(here))
        print("| ms per point | " + " | ".join(f"{v:.1f}" for v in ask.values()) + " |")
        print("| load average | " + " | ".join(_load_range(rows, m, d) for m in here) + " |")
        reached = {m: float(_ecdf(rows, m, d, HARD, np.array([100.0]))[0]) for m in here}
        print(
            "\nShare of (run, target) pairs reached within 100·d evaluations on f15–f24 "
            "(the ECDF's right end): "
            + ", ".join(f"{m} {v:.3f}" for m, v in reached.items() if not np.isnan(v))
        )
        summary[str(d)] = {
            "wins_vs_tpe": {m: {g: list(w) for g, w in wins[m].items()} for m in hollm},
            "wins_f15_f24": {m: {o: list(w) for o, w in versus[m].items()} for m in hollm},
            "median_regret": {
                f"f{f}": v for f, v in med.items() if any(x is not None for x in v.values())
            },
            "ask_ms": ask,
            "targets_reached_f15_f24": reached,
            "runs": runs,
        }
    (args.out.parent / "bbob_summary.json").write_text(json.dumps(summary, indent=1))
    _plot(rows, methods, dims)


def _ecdf(
    rows: list[dict], method: str, d: int, fids: tuple[int, ...], grid: np.ndarray
) -> np.ndarray:
    """COCO's runtime ECDF: fraction of (run, target) pairs solved by ``grid`` evaluations / d."""
    hits = [
        h
        for r in rows
        if r["method"] == method and r["d"] == d and r["f"] in fids
        for h in r["hits"]
    ]
    if not hits:
        return np.full(len(grid), np.nan)
    when = np.array([np.inf if h is None else h / d for h in hits])
    return np.array([(when <= g).mean() for g in grid])


def _plot(rows: list[dict], methods: list[str], dims: list[int]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = {"f15–f24": HARD, **GROUPS}
    grid = np.logspace(0, 2, 60)
    fig, axes = plt.subplots(
        len(dims),
        len(groups),
        figsize=(3.2 * len(groups), 2.8 * len(dims)),
        squeeze=False,
        sharey=True,
    )
    for a, d in enumerate(dims):
        for b, (g, fids) in enumerate(groups.items()):
            ax = axes[a][b]
            if not any(r["d"] == d and r["f"] in fids for r in rows):
                ax.set_axis_off()
                ax.set_title(f"{g}, d={d}: not run", fontsize=9)
                continue
            for m in methods:
                ax.plot(
                    grid,
                    _ecdf(rows, m, d, fids, grid),
                    label=m,
                    lw=1.6 if m.startswith("hollm") else 1.0,
                    ls="-" if m.startswith("hollm") else "--",
                )
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["run", "report"])
    ap.add_argument("--dims", type=int_ranges, default=[2, 5])
    ap.add_argument("--functions", type=int_ranges, default=list(range(1, 25)))
    ap.add_argument("--instances", type=int_ranges, default=[1, 2])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--methods", type=lambda s: s.split(","), default=METHODS)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    cmd_run(args) if args.command == "run" else cmd_report(args)


if __name__ == "__main__":
    main()
