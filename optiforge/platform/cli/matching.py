"""``optiforge matching run``: incremental metric matching on generated data, from the shell.

::

    optiforge matching run --data uniform --n 2000 --method greedy --method pushrelabel
    optiforge matching run --data road --n 500 --method pushrelabel-batched --plot road.png --json
    optiforge matching run --data taxi --n 300 --method program:my_rule.py

``program:FILE`` runs a ``select_server`` function from FILE **in this process** (it is your
code; LLM output belongs in a sandboxed campaign).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from optiforge import validation
from optiforge.platform.cli.errors import user_errors

matching_app = typer.Typer(help="Incremental metric bipartite matching (push-relabel, greedy, exact).",
                           no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add the ``matching`` group to ``app``."""
    app.add_typer(matching_app, name="matching")


def _program(spec: str) -> Any:
    from optiforge.heuristics import get_task, load_trusted_function

    path = Path(spec.removeprefix("program:"))
    if not path.is_file():
        raise ValueError(f"method: no such program file {str(path)!r}")
    return load_trusted_function(get_task("matching"), path.read_text())


@matching_app.command("run")
@user_errors
def run(
    data: str = typer.Option("uniform", help="uniform | taxi | digits | road"),
    n: int = typer.Option(2000, "--n", help="Servers = requests."),
    method: list[str] = typer.Option(  # noqa: B006 - typer reads the default, never mutates it
        ["pushrelabel"], "--method", "-m",
        help="pushrelabel | pushrelabel-batched | greedy | quadtree | opt | program:FILE (repeatable)."),
    seed: int = typer.Option(0, help="Seed of the data and of the methods' randomness."),
    batch_size: int = typer.Option(200, "--batch-size", help="Requests per batch (pushrelabel-batched)."),
    delta: float = typer.Option(0.001, help="Push-relabel's delta in (0, 1)."),
    bid: bool = typer.Option(False, "--bid", help="Push-relabel with auction bids (faster; not in the paper)."),
    exact_tail: int = typer.Option(0, "--exact-tail", help="Solve the last K servers' requests exactly (authors' code: 50)."),
    device: str = typer.Option(None, help="Torch device of pushrelabel-batched (default: cuda if available)."),
    no_opt: bool = typer.Option(False, "--no-opt", help="Skip the exact optimum (slow for large n)."),
    plot: Path = typer.Option(None, help="Write a PNG of cost/OPT as requests arrive."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Match n requests to n servers online; print cost, cost/OPT and time per request."""
    from optiforge.heuristics.matching import (
        FAMILIES,
        METHODS,
        PushRelabelParams,
        make_instance,
        run_method,
    )
    from optiforge.heuristics.matching.runner import default_checkpoints, opt_curve

    validation.choice(data, "data", FAMILIES)
    for m in method:
        if not m.startswith("program:"):
            validation.choice(m, "method", (*METHODS, "program:FILE"))
    if no_opt and plot is not None:
        raise ValueError("plot: needs the optimum; drop --no-opt")
    params = PushRelabelParams(delta=delta, bid=bid, exact_tail=exact_tail)
    programs = {m: _program(m) for m in method if m.startswith("program:")}
    instance = make_instance(data, n, seed)
    checkpoints = default_checkpoints(instance.n_requests, batch_size)
    err = Console(stderr=True)
    runs = []
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        for m in method:
            handle = bar.add_task(m, total=instance.n_requests)
            runs.append(run_method(
                instance, "program" if m in programs else m, params=params, batch_size=batch_size,
                seed=seed, checkpoints=checkpoints, program=programs.get(m), device=device,
                progress=lambda done, total, h=handle: bar.update(h, completed=done)))
            if m in programs:
                runs[-1].method = m
        if not no_opt:
            handle = bar.add_task("exact optimum", total=None)
            opt_at = opt_curve(instance, checkpoints) if plot is not None else None
            opt = opt_at[-1] if opt_at else opt_curve(instance, [instance.n_requests])[0]
            bar.update(handle, completed=1, total=1)
    opt = None if no_opt else opt
    if plot is not None:
        from optiforge.heuristics.matching.plots import plot_ratio

        plot_ratio(runs, opt_at, plot, title=f"{data}, n = {n}, seed {seed}")
    report = {"data": data, "n": n, "seed": seed, "opt": opt, "instance": instance.description,
              "results": [r.summary(opt) for r in runs]}
    if as_json:
        print(json.dumps(report, indent=2))
        return
    table = Table("method", "cost", "cost / OPT", "ms/request mean", "ms/request p99", "total s")
    for s in report["results"]:
        ratio = "-" if s["ratio_to_opt"] is None else f"{s['ratio_to_opt']:.3f}"
        table.add_row(s["method"], f"{s['cost']:.6g}", ratio, f"{s['ms_per_request_mean']:.3f}",
                      f"{s['ms_per_request_p99']:.3f}", f"{s['total_s']:.2f}")
    out = Console(file=sys.stdout)
    out.print(f"{instance.description}" + ("" if opt is None else f"\nOPT = {opt:.6g}"))
    out.print(table)
    if plot is not None:
        out.print(f"plot: {plot}")
