"""HOLLM vs random search, Optuna TPE and CMA-ES on the paper's synthetic functions.

Budget 100 evaluations, 5 initial points, several seeds; prints the median best value per
method and function (markdown) and writes a convergence plot to docs/img/hollm_convergence.png.

    python benchmarks/hollm_quality.py --seeds 5 [--methods hollm-gp-ts,hollm-sobol,random,tpe,cmaes]
    python benchmarks/hollm_quality.py --methods hollm-llm --functions hartmann-6 --seeds 1 \
        [--llm llamacpp:smollm2?n_ctx=8192] [--llm-options '{"context_points": 10}']

``hollm-llm`` is HOLLM with the LLM proposer and the default (``gp``) predictor, ``hollm-llm-llm``
with the LLM predictor too; both use ``--llm`` (default: the bundled SmolLM2-135M on the
in-process llama.cpp engine). For them the agent's counters (prompts, unparsable answers,
candidates outside the region, duplicates, accepted candidates, points filled in by the agent)
and the seconds per ask are stored under ``"llm_stats"``, and ``--replies`` appends every
prompt and answer to a JSONL file. Results are cached as JSON (``--out``) so methods can be run
separately and plotted together.

``--shift`` runs each function with its minimiser moved (``optiforge.blackbox.shifted``,
instance = seed), stored as ``<function>@shift``: a control for methods that favour the
middle of the box or one value in every coordinate, where the unshifted functions put their
optimum.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from optiforge.agents.hollm import HOLLMAgent  # noqa: E402
from optiforge.blackbox import get_blackbox_task  # noqa: E402

DEFAULT_PLOT = "docs/img/hollm_convergence.png"
FUNCTIONS = ["ackley-20", "levy-10", "rastrigin-10", "rosenbrock-8", "hartmann-6"]
LLM_ARMS = {"hollm-llm": "gp", "hollm-llm-free": "gp", "hollm-llm-llm": "llm"}
"""HOLLM with the LLM proposer, by predictor."""
ARM_OPTIONS = {"hollm-llm-free": {"constrained": False}}
"""hollm-llm decodes under the region constraint (the proposer's default with an in-process
engine); hollm-llm-free lets the model write free text, as the paper's API models do."""
COUNTERS = (
    "llm_prompts",
    "llm_unparsable",
    "llm_outside_region",
    "llm_duplicates",
    "llm_candidates",
    "filled",
)
"""The agent's counters of what the LLM proposer produced (see ``LLMProposer.propose``)."""
NEAR = 0.05
"""Distance (unit coordinates) within which --replies-report counts a coordinate as at the minimiser's."""
SHIFTED = "@shift"
"""Suffix of a function's results key when run with ``--shift``."""
METHODS = ["hollm-gp-ts", "hollm-sobol", "hollm-gaussian", "random", "tpe", "cmaes"]
BUDGET, N_INIT, BATCH = 100, 5, 4
LLM_SPEC = "llamacpp:smollm2?n_ctx=8192"
"""The fastest local engine for the bundled model (docs/benchmarks/llm.md). The M = 5 region
prompts of an ask share their evaluated points, stored once; where their answers would not fit
the 8,192 cells too (Ackley-20), the engine splits the batch."""


def make_task(key: str, seed: int):
    """The task of a results key at a seed (``levy-10``, or ``levy-10@shift``: instance = seed)."""
    return get_blackbox_task(f"{key}{seed}" if key.endswith(SHIFTED) else key)


def unit_argmin(task) -> np.ndarray | None:
    """The task's minimiser in the unit coordinates of the prompts (``None`` if unknown)."""
    if task.argmin is None:
        return None
    return task.space.encode(dict(zip(task.space.names, task.argmin, strict=True)))


def merge(into: dict, other: dict) -> dict:
    """Add the runs of ``other`` (a results file's dict) to ``into``; a run in both takes ``other``'s."""
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = value
    return into


def function_keys(results: dict, methods: list[str]) -> list[str]:
    """The results keys of functions with any run, the shifted ones after the plain ones."""
    keys = [*FUNCTIONS, *(f + SHIFTED for f in FUNCTIONS)]
    return [f for f in keys if any(f in results[m] for m in methods)]


class RecordingLLM:
    """The real LLM, with every (prompt, answer) pair kept for the ``--replies`` log."""

    def __init__(self, llm) -> None:
        self.llm = llm
        self.supports_constraints = getattr(llm, "supports_constraints", False)
        self.log: list[dict] = []

    def generate(self, prompts, n=1, **kwargs):
        t0 = time.perf_counter()
        replies = self.llm.generate(prompts, n=n, **kwargs)
        print(
            f"  generate: {len(prompts)} prompts, {sum(c.completion_tokens for r in replies for c in r)} "
            f"tokens, {time.perf_counter() - t0:.1f}s",
            flush=True,
        )
        for prompt, row in zip(prompts, replies, strict=True):
            self.log.append({"prompt": prompt, "answers": [c.text for c in row]})
            if os.environ.get("HOLLM_SHOW_ANSWERS"):
                print("    " + repr(row[0].text[:300]), flush=True)
        return replies


def run_hollm(
    task,
    seed: int,
    proposer: str,
    llm=None,
    predictor: str = "gp",
    options: dict | None = None,
    stats: dict | None = None,
) -> list[float]:
    """One HOLLM run; ``stats`` (if given) receives the agent's counters and the ask times."""
    config = {
        "proposer": proposer,
        "predictor": predictor,
        "n_initial": N_INIT,
        "budget": BUDGET,
        **(options or {}),
    }
    agent = HOLLMAgent(task.space, config, llm=llm, seed=seed)
    values: list[float] = []
    ask_s: list[float] = []
    while len(values) < BUDGET:
        n = N_INIT if not values else min(BATCH, BUDGET - len(values))
        t0 = time.perf_counter()
        points = agent.ask(n)
        if values:  # the initial Sobol design asks no model
            ask_s.append(time.perf_counter() - t0)
        for p in points:
            v = task(p)
            agent.tell(p, v)
            values.append(v)
    if stats is not None:
        stats.update(agent.stats, ask_s=ask_s, options=config)
    return values


def run_random(task, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return [task(p) for p in task.space.sample(rng, BUDGET)]


def run_tpe(task, seed: int) -> list[float]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        sampler=optuna.samplers.TPESampler(seed=seed, n_startup_trials=N_INIT)
    )
    params = task.space.params
    study.optimize(
        lambda t: task({n: t.suggest_float(n, p.low, p.high) for n, p in params.items()}),
        n_trials=BUDGET,
    )
    return [t.value for t in study.trials]


def run_cmaes(task, seed: int) -> list[float]:
    import cma

    d = task.dim
    lo = np.array([p.low for p in task.space.params.values()])
    hi = np.array([p.high for p in task.space.params.values()])
    rng = np.random.default_rng(seed)
    es = cma.CMAEvolutionStrategy(
        rng.random(d), 0.3, {"bounds": [0, 1], "seed": seed + 1, "verbose": -9, "maxfevals": BUDGET}
    )
    values: list[float] = []
    while len(values) < BUDGET:
        xs = es.ask()
        fs = [task.evaluate_array(lo + np.clip(x, 0, 1) * (hi - lo)) for x in xs]
        es.tell(xs, fs)
        values.extend(fs)
    return values[:BUDGET]


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budget", type=int, default=BUDGET, help=f"evaluations per run (default {BUDGET}, the paper's)")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--functions", default=",".join(FUNCTIONS))
    ap.add_argument("--out", default="docs/benchmarks/hollm_quality.json")
    ap.add_argument(
        "--plot",
        help=f"convergence plot to write (default {DEFAULT_PLOT}; --report-only alone writes none)",
    )
    ap.add_argument(
        "--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + seeds - 1"
    )
    ap.add_argument(
        "--llm", default=LLM_SPEC, help=f"LLM spec of the hollm-llm arms (default {LLM_SPEC})"
    )
    ap.add_argument(
        "--llm-options", default="{}", help="JSON of extra agent options for the LLM arms"
    )
    ap.add_argument(
        "--shift", action="store_true", help="move each function's minimiser (instance = seed)"
    )
    ap.add_argument(
        "--merge", nargs="+", metavar="JSON", default=[],
        help="add the runs of these results files (e.g. of parallel runs) to --out first",
    )
    ap.add_argument("--replies", help="append the LLM arms' prompts and answers to this JSONL file")
    ap.add_argument(
        "--report-only", action="store_true", help="print the tables of --out, run nothing"
    )
    ap.add_argument(
        "--replies-report",
        nargs="+",
        metavar="JSONL",
        help="read --replies files (or their .gz): where the model put its points, and what it "
        "copied; run nothing",
    )
    args = ap.parse_args()
    if args.budget != BUDGET:
        if args.budget <= N_INIT:
            ap.error(f"--budget must exceed the {N_INIT} initial points")
        globals()["BUDGET"] = args.budget  # a short run (e.g. to measure the answer format)
    if args.replies_report:
        report_replies([Path(p) for p in args.replies_report])
        return
    try:
        llm_options = json.loads(args.llm_options)
        if not isinstance(llm_options, dict):
            raise ValueError
    except ValueError:
        ap.error(f"--llm-options: expected a JSON object, got {args.llm_options!r}")
    out = Path(args.out)
    results = json.loads(out.read_text()) if out.exists() else {}
    for extra in args.merge:
        merge(results, json.loads(Path(extra).read_text()))
    if args.merge:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results))
    llm = None
    for method in [m for m in args.methods.split(",") if m and not args.report_only]:
        if method in LLM_ARMS and llm is None:
            from optiforge.platform.llm import from_spec

            llm = RecordingLLM(from_spec(args.llm))  # OMP_NUM_THREADS sets its threads
        for fname in [f + SHIFTED if args.shift else f for f in args.functions.split(",")]:
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                task = make_task(fname, seed)
                t0 = time.perf_counter()
                if method in LLM_ARMS:
                    stats: dict = {"llm": args.llm}
                    vals = run_hollm(task, seed, "llm", llm, LLM_ARMS[method],
                                     {**ARM_OPTIONS.get(method, {}), **llm_options}, stats)
                    results.setdefault("llm_stats", {}).setdefault(method, {}).setdefault(
                        fname, {}
                    )[str(seed)] = stats
                    if args.replies:
                        with open(args.replies, "a", encoding="utf-8") as fh:
                            for row in llm.log:
                                fh.write(
                                    json.dumps(
                                        {"method": method, "function": fname, "seed": seed, **row}
                                    )
                                    + "\n"
                                )
                    llm.log.clear()
                elif method.startswith("hollm-"):
                    vals = run_hollm(task, seed, method.split("-", 1)[1])
                else:
                    vals = {"random": run_random, "tpe": run_tpe, "cmaes": run_cmaes}[method](
                        task, seed
                    )
                results.setdefault(method, {}).setdefault(fname, {})[str(seed)] = vals
                print(
                    f"{method:15s} {fname:13s} seed {seed}: best {min(vals):9.4f} "
                    f"({time.perf_counter() - t0:.1f}s)",
                    flush=True,
                )
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(json.dumps(results))
    report(results)
    report_llm(results)
    # A look at the tables (--report-only without --merge) leaves the recorded plot alone.
    plot_path = args.plot or (None if args.report_only and not args.merge else DEFAULT_PLOT)
    if plot_path:
        plot(results, Path(plot_path))


def report(results: dict) -> None:
    methods = [m for m in [*LLM_ARMS, *METHODS] if m in results]
    fns = function_keys(results, methods)
    print("\n| function | " + " | ".join(methods) + " |")
    print("|---" * (len(methods) + 1) + "|")
    for f in fns:
        cells = []
        for m in methods:
            runs = results[m].get(f, {})
            cells.append(
                f"{np.median([min(v) for v in runs.values()]):.3f} (n={len(runs)})" if runs else "-"
            )
        print(f"| {f} | " + " | ".join(cells) + " |")


def report_llm(results: dict) -> None:
    """What the LLM arms' proposers produced, summed over seeds (from the agent's counters)."""
    print(
        "\n| arm | function | runs | prompts | answers with a point | points parsed "
        "| outside the region | duplicates | accepted / requested | points filled in by the agent "
        "| s per ask (median) |"
    )
    print("|---" * 11 + "|")
    for method, by_fn in results.get("llm_stats", {}).items():
        for fname, runs in by_fn.items():
            tot = {k: sum(r.get(k, 0) for r in runs.values()) for k in COUNTERS}
            requested = sum(
                r["options"].get("k", 5) * r.get("llm_prompts", 0) for r in runs.values()
            )
            parsed = tot["llm_candidates"] + tot["llm_outside_region"] + tot["llm_duplicates"]
            asked = sum(BUDGET - N_INIT for _ in runs)
            ask_s = np.median([t for r in runs.values() for t in r["ask_s"]])
            print(
                f"| {method} | {fname} | {len(runs)} | {tot['llm_prompts']} "
                f"| {tot['llm_prompts'] - tot['llm_unparsable']} | {parsed} "
                f"| {tot['llm_outside_region']} | {tot['llm_duplicates']} "
                f"| {tot['llm_candidates']} / {requested} ({tot['llm_candidates'] / max(requested, 1):.1%}) "
                f"| {tot['filled']} / {asked} ({tot['filled'] / asked:.0%}) | {ask_s:.1f} |"
            )


_ASKED = re.compile(r"Suggest (\d+) new points")
_RANGE = re.compile(r"^- [^:]+: \[([-0-9.e]+), ([-0-9.e]+)\]$", re.M)


def _answer_points(text: str, d: int) -> list[list[float]]:
    rows = []
    for line in text.strip().splitlines():
        line = re.sub(r"^\s*[pP]\d+:\s*", "", line)  # the constrained format's line label
        try:
            row = [float(v) for v in line.split(",")]
        except ValueError:
            continue
        if len(row) in (d, d + 1):  # coordinates, or coordinates and a predicted value
            rows.append(row[:d])
    return rows


def report_replies(paths: list[Path], decimals: int = 3) -> None:
    """Where the proposer's answers put their points, against uniform points in the same boxes.

    Reads one or more ``--replies`` logs (``.jsonl`` or ``.jsonl.gz``). From each logged
    prompt: the region box (its "Allowed ranges") and the evaluated points; from each answer:
    its lines of ``d`` coordinates. Per (method, function): the points'
    relative position ``t = (x - lo) / (hi - lo)`` in the box (mean, and the share on an edge),
    the share of coordinates that repeat a value of the same column among the evaluated points
    ("copied"), the share within ``NEAR`` of the function's minimiser (unit coordinates, where
    it is known), whole evaluated points repeated, and points repeated within one answer. The
    "uniform" row is the same statistics for uniform points in the same boxes, rounded to
    ``decimals``: what an answer with no preference would show.

    A second table, pooled over every row read, counts coordinates at their box's upper edge:
    the first coordinate against the other coordinates of the same points whose side is like
    x1's, apart for points whose x1 side reaches 1 and those where it ends below 1. It shows
    the constrained format's x1 = 1.000 bias (docs/benchmarks/hollm.md).
    """
    rng = np.random.default_rng(0)
    by_arm: dict[tuple[str, str], dict[str, list]] = {}
    minimisers: dict[tuple[str, int], np.ndarray | None] = {}
    # (source, first coordinate?, side reaches 1?) -> [at the upper edge, coordinates]
    upper: dict[tuple[str, bool, bool], list[int]] = {}
    lines = [
        ln
        for path in paths
        for ln in (gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz"
                   else path.read_text()).splitlines()
    ]
    for line in lines:
        row = json.loads(line)
        prompt = row["prompt"]
        key = (row["function"], row["seed"])
        if key not in minimisers:
            minimisers[key] = unit_argmin(make_task(*key))
        best = minimisers[key]
        bounds = np.array([[float(a), float(b)] for a, b in _RANGE.findall(prompt)])
        if bounds.size == 0:
            continue  # a surrogate prompt (hollm-llm-llm): no box
        lo, hi = bounds[:, 0], bounds[:, 1]
        d = lo.size
        body = prompt.split("):\n", 1)[1].split("\n\n", 1)[0]
        seen = np.array([[float(v) for v in ln.split(",")[:d]] for ln in body.splitlines()])
        columns = [set(np.round(seen[:, j], decimals)) for j in range(d)]
        whole = {tuple(np.round(r, decimals)) for r in seen}
        for name, answers in (
            ("model", row["answers"]),
            ("uniform", [None] * len(row["answers"])),
        ):
            acc = by_arm.setdefault(
                (row["method"], row["function"], name),
                {"t": [], "edge": [], "copied": [], "near": [], "whole": [], "repeat": [], "points": []},
            )
            for text in answers:
                if text is None:
                    k = int(_ASKED.search(prompt).group(1))
                    pts = np.round(lo + (hi - lo) * rng.random((k, d)), decimals)
                else:
                    pts = np.array(_answer_points(text, d)).reshape(-1, d)
                acc["points"].append(len(pts))
                if not len(pts):
                    continue
                width = np.where(hi > lo, hi - lo, 1.0)
                t = (pts - lo) / width
                acc["t"].extend(t.ravel())
                step = 10.0**-decimals
                at_top = hi - pts < step / 2
                acc["edge"].extend(((pts - lo < step / 2) | at_top).ravel())
                reaches = hi >= 1 - 1e-9
                for j in range(d):
                    if reaches[j] != reaches[0]:
                        continue  # x1 is compared with the coordinates whose side is like its own
                    tally = upper.setdefault((name, j == 0, bool(reaches[0])), [0, 0])
                    tally[0] += int(at_top[:, j].sum())
                    tally[1] += len(pts)
                if best is not None:
                    acc["near"].extend((np.abs(pts - best) <= NEAR).ravel())
                acc["copied"].extend(
                    [round(v, decimals) in columns[j] for p in pts for j, v in enumerate(p)]
                )
                keys = [tuple(np.round(p, decimals)) for p in pts]
                acc["whole"].extend(k in whole for k in keys)
                acc["repeat"].append(len(keys) - len(set(keys)))
    print(
        "\n| arm | function | source | answers | points | mean t in box | on an edge "
        f"| coordinates copied from the column | coordinates within {NEAR} of the minimiser's "
        "| evaluated points repeated | repeats within an answer |"
    )
    print("|---" * 11 + "|")
    for (method, fname, name), acc in by_arm.items():
        if not acc["t"]:
            print(f"| {method} | {fname} | {name} | {len(acc['points'])} | 0 |" + " - |" * 6)
            continue
        near = f"{np.mean(acc['near']):.1%}" if acc["near"] else "-"
        print(
            f"| {method} | {fname} | {name} | {len(acc['points'])} | {sum(acc['points'])} "
            f"| {np.mean(acc['t']):.2f} | {np.mean(acc['edge']):.1%} | {np.mean(acc['copied']):.1%} "
            f"| {near} "
            f"| {sum(acc['whole'])} | {sum(acc['repeat'])} |"
        )
    print("\n| source | x1's side | x1 at its upper edge (points) "
          "| x2.. with a side like x1's, at their upper edge (coordinates) |")
    print("|---" * 4 + "|")
    for name in dict.fromkeys(key[0] for key in upper):
        for reaches, side in ((True, "reaches 1"), (False, "ends below 1")):
            cells = []
            for first in (True, False):
                hits, n = upper.get((name, first, reaches), (0, 0))
                cells.append(f"{hits / n:.1%} of {n:,}" if n else "-")
            print(f"| {name} | {side} | {cells[0]} | {cells[1]} |")


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = [m for m in [*LLM_ARMS, *METHODS] if m in results]
    fns = function_keys(results, methods)
    cols = min(len(fns), len(FUNCTIONS))  # the shifted functions on a second row
    rows = -(-len(fns) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.4 * rows), squeeze=False)
    axes = axes.ravel()
    for ax in axes[len(fns):]:
        ax.set_visible(False)
    colour = {m: f"C{i}" for i, m in enumerate(methods)}  # one colour per method in every panel
    for ax, f in zip(axes, fns, strict=False):
        for m in [m for m in methods if f in results[m]]:
            curves = np.array([np.minimum.accumulate(v) for v in results[m][f].values()])
            med = np.median(curves, axis=0)
            x = np.arange(1, curves.shape[1] + 1)
            ax.plot(x, med, color=colour[m], label=m)
            if len(curves) > 1:
                ax.fill_between(
                    x,
                    np.quantile(curves, 0.25, axis=0),
                    np.quantile(curves, 0.75, axis=0),
                    color=colour[m],
                    alpha=0.15,
                )
        ax.set_title(f)
        ax.set_xlabel("evaluations")
        ax.set_yscale("symlog")
    for ax in axes[::cols]:
        ax.set_ylabel("best value (median, IQR)")
    handles = [plt.Line2D([], [], color=colour[m], label=m) for m in methods]
    fig.legend(handles=handles, loc="upper center", ncol=len(methods), fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
