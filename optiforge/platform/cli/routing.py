"""``optiforge routing``: constrained routing (TSPTW, TSPDL) with LazyMask, from the shell.

::

    optiforge routing generate --problem tsptw --hardness hard --n 50 --instances 1000 --out hard50.npz
    optiforge routing evaluate --data hard50.npz --method greedy-c --method lmask-greedy-c --method pyvrp
    optiforge routing evaluate --problem tspdl --hardness hard --n 20 --method cpsat --method program:mine.py
    optiforge routing train --problem tsptw --hardness hard --n 20 --epochs 10 --out model.pt
    optiforge routing train --resume 3f2a9c1b0d4e --epochs 20 --out model.pt      # continue (or extend) a run
    optiforge routing evaluate --problem tsptw --n 20 --method lmask:model.pt --method pip:model.pt --method pyvrp

The table has PIP's columns: Sol.Inf % (infeasible solutions), Inst.Inf % (instances with no
feasible solution), Obj (mean best feasible length), Gap % (vs ``--reference``), Time (s).
``program:FILE`` runs a ``score_nodes`` function from FILE **in this process** (it is your code;
LLM output belongs in a sandboxed campaign). Training checkpoints are artifacts of a campaign
in the store (``--resume`` takes its id); ``--out`` is the trained model.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from optiforge import validation
from optiforge.platform.campaigns.report import campaign_status
from optiforge.platform.campaigns.summary import ROUTING_TRAINING as TRAIN_AGENT
from optiforge.platform.cli.errors import user_errors

routing_app = typer.Typer(help="Constrained routing (TSPTW, TSPDL): LazyMask, greedy rules, PyVRP, CP-SAT.",
                          no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add the ``routing`` group to ``app``."""
    app.add_typer(routing_app, name="routing")


def _instances(data: Path | None, problem: str | None, hardness: str, n: int, count: int | None,
               seed: int | None) -> Any:
    from optiforge.heuristics.routing.instances import fixed_set, generate, load_instances

    if data is not None:
        ins = load_instances(data)
        if problem is not None and problem != ins.problem:
            raise ValueError(f"problem: --problem {problem} but {str(data)!r} holds {ins.problem} instances")
    else:
        if problem is None:
            raise ValueError("problem: give --problem (tsptw | tspdl) or --data FILE")
        ins = fixed_set(problem, hardness, n, "test") if seed is None else \
            generate(problem, hardness, n, count or 1000, seed=seed)
    if count is not None:
        validation.integer(count, "instances", minimum=1)
        ins = ins.subset(slice(0, count))
    return ins


@routing_app.command("generate")
@user_errors
def generate_cmd(
    problem: str = typer.Option(..., help="tsptw | tspdl"),
    hardness: str = typer.Option("hard", help="tsptw: easy | medium | hard; tspdl: medium | hard"),
    n: int = typer.Option(50, "--n", help="Nodes per instance, the depot included (PIP's convention)."),
    instances: int = typer.Option(1000, help="Number of instances."),
    seed: int = typer.Option(0, help="Generator seed."),
    out: Path = typer.Option(..., help="Output .npz file."),
) -> None:
    """Generate instances with PIP's generators and save them as .npz."""
    from optiforge.heuristics.routing.instances import generate

    validation.integer(instances, "instances", minimum=1)
    validation.output_file(out, "out")
    ins = generate(problem, hardness, n, instances, seed=seed)
    ins.save(out)
    print(f"wrote {ins.size} {problem} ({hardness}) instances, n = {ins.n}, to {out}")


TRAIN_DEFAULTS: dict[str, Any] = {
    "hardness": "hard", "n": 20, "epochs": 10, "steps": 20, "batch_size": 16, "samples": None, "budget": 50,
    "lr": 1e-4, "embed_dim": 128, "layers": 6, "heads": 8, "ff_dim": 512, "rie": True, "seed": 0,
}
"""Training options of a new run (``None`` on the command line means: this default, or on
``--resume`` the campaign's value)."""


def _train_options(given: dict[str, Any], resume: str | None, store: Any) -> dict[str, Any]:
    """The run's options: ``given`` over the defaults, or on resume the campaign's.

    A resumed run keeps everything it was started with except ``epochs`` (a larger count
    trains on; without it, the count its newest checkpoint aimed for); any other option given
    that differs is an error, not silently ignored.
    """
    if resume is None:
        if given["problem"] is None:
            raise ValueError("problem: give --problem (tsptw | tspdl), or --resume ID")
        return {**TRAIN_DEFAULTS, **{k: v for k, v in given.items() if v is not None}}
    campaign = store.get_campaign(resume)
    if campaign.agent != TRAIN_AGENT:
        raise ValueError(f"resume: campaign {resume} is not a routing training run (agent {campaign.agent})")
    stored = campaign.config
    for key, value in given.items():
        if key != "epochs" and value is not None and value != stored[key]:
            flag = "--no-rie" if key == "rie" else f"--{key.replace('_', '-')} {value!r}"
            raise ValueError(f"resume: campaign {resume} trains {key} = {stored[key]!r}; "
                             f"{flag} differs (start a new run instead)")
    epochs = given["epochs"]
    if epochs is None:
        # A run extended by an earlier --resume --epochs and stopped again aims where its
        # newest checkpoint aimed, not at the count the campaign was created with.
        from optiforge.heuristics.routing.train import read_state
        from optiforge.platform.store.checkpoints import StoreCheckpointer

        data = StoreCheckpointer(store, resume).latest()
        epochs = stored["epochs"] if data is None else int(read_state(data)["train_config"]["epochs"])
    return {**stored, "epochs": epochs}


@routing_app.command("train")
@user_errors
def train_cmd(
    problem: str = typer.Option(None, help="tsptw | tspdl (required unless --resume)."),
    hardness: str = typer.Option(None, help="Generator level of the training instances (default hard)."),
    n: int = typer.Option(None, "--n", help="Nodes per instance, the depot included (default 20)."),
    epochs: int = typer.Option(None, help="Epochs, a checkpoint after each (default 10); on --resume, "
                                          "a larger count trains on."),
    steps: int = typer.Option(None, help="Updates per epoch (default 20)."),
    batch_size: int = typer.Option(None, "--batch-size", help="Fresh instances per update (default 16)."),
    samples: int = typer.Option(None, help="Rollouts per instance for the shared baseline (default min(n-1, 16))."),
    budget: int = typer.Option(None, help="Backtracking budget R during training, then the relaxation "
                                          "(default 50)."),
    lr: float = typer.Option(None, help="Adam's learning rate (default 1e-4)."),
    embed_dim: int = typer.Option(None, "--embed-dim", help="Encoder width (default 128)."),
    layers: int = typer.Option(None, help="Encoder layers (default 6)."),
    heads: int = typer.Option(None, help="Attention heads, dividing --embed-dim (default 8)."),
    ff_dim: int = typer.Option(None, "--ff-dim", help="Feed-forward width (default 512)."),
    no_rie: bool = typer.Option(False, "--no-rie", help="Ablation: drop the refinement-intensity embedding."),
    seed: int = typer.Option(None, help="Seed of the initial weights and the training instances (default 0)."),
    out: Path = typer.Option(..., help="Where to write the trained model (for `evaluate -m lmask:FILE`)."),
    resume: str = typer.Option(None, help="Continue the training campaign with this id."),
) -> None:
    """Train LMask's policy (REINFORCE, shared baseline, penalised reward).

    Every epoch's checkpoint is an artifact of a campaign in the store; --resume ID continues
    campaign ID from its newest checkpoint.
    """
    from optiforge.heuristics.routing.train import train
    from optiforge.platform.store import Store
    from optiforge.platform.store.checkpoints import StoreCheckpointer

    given = {"problem": problem, "hardness": hardness, "n": n, "epochs": epochs, "steps": steps,
             "batch_size": batch_size, "samples": samples, "budget": budget, "lr": lr, "embed_dim": embed_dim,
             "layers": layers, "heads": heads, "ff_dim": ff_dim, "rie": False if no_rie else None, "seed": seed}
    if resume is None:  # check everything before the store is opened
        opts = _train_options(given, None, None)
        config = _train_config(opts)
    validation.output_file(out, "out")
    store = Store()
    if resume is None:
        resume = store.create_campaign(task=config.problem, agent=TRAIN_AGENT, llm="none", budget=config.epochs,
                                       seed=config.seed, executor="local", config=opts,
                                       name=f"routing train {config.problem} n={config.n}")
    else:
        config = _train_config(_train_options(given, resume, store))
    err = Console(stderr=True)
    err.print(f"training campaign {resume} ({config.problem}, n = {config.n}); resume with --resume {resume}")
    columns = (TextColumn("[bold]training"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[stats]}"))
    with campaign_status(store, resume), Progress(*columns, console=err) as bar:
        handle = bar.add_task("train", total=config.epochs * config.steps_per_epoch, stats="")

        def show(step: int, total: int, stats: dict[str, float]) -> None:
            bar.update(handle, completed=step, stats=f"reward {stats['reward']:.3f} "
                                                     f"feasible {stats['feasible_pct']:.0f}%")

        history = train(config, out, checkpointer=StoreCheckpointer(store, resume), progress=show)
    store.set_campaign_status(resume, "finished")
    last = history[-1]
    print(f"wrote {out}: {len(history)} epochs (campaign {resume}); last epoch reward {last['reward']:.4f}, "
          f"feasible {last['feasible_pct']:.1f}%")


def _train_config(opts: dict[str, Any]) -> Any:
    """Validate the options of a run (see :data:`TRAIN_DEFAULTS`) and build its ``TrainConfig``."""
    from optiforge.heuristics.routing.policy import PolicyConfig
    from optiforge.heuristics.routing.train import TrainConfig

    validation.real(opts["lr"], "lr", minimum=1e-12)
    validation.integer(opts["budget"], "budget", minimum=0)
    validation.integer(opts["epochs"], "epochs", minimum=1)
    embed_dim = validation.integer(opts["embed_dim"], "embed_dim", minimum=1)
    heads = validation.integer(opts["heads"], "heads", minimum=1)
    if embed_dim % heads:
        raise ValueError(f"heads: must divide embed_dim ({embed_dim}), got {heads}")
    policy = PolicyConfig(opts["problem"], embed_dim, validation.integer(opts["layers"], "layers", minimum=1),
                          heads, validation.integer(opts["ff_dim"], "ff_dim", minimum=1), rie=opts["rie"])
    return TrainConfig(problem=opts["problem"], hardness=opts["hardness"], n=opts["n"], epochs=opts["epochs"],
                       steps_per_epoch=opts["steps"], batch_size=opts["batch_size"], samples=opts["samples"],
                       lr=opts["lr"], budget=opts["budget"], seed=opts["seed"], policy=policy)


@routing_app.command("evaluate")
@user_errors
def evaluate_cmd(
    method: list[str] = typer.Option(  # noqa: B006 - typer reads the default, never mutates it
        ["greedy-c", "lmask-greedy-c"], "--method", "-m",
        help="greedy-l | greedy-c | lmask-greedy-c | pyvrp | cpsat | program:FILE | lmask:MODEL | "
             "pip:MODEL (repeatable)."),
    data: Path = typer.Option(None, help="Instances (.npz from `routing generate`)."),
    problem: str = typer.Option(None, help="tsptw | tspdl (without --data: the fixed test set)."),
    hardness: str = typer.Option("hard", help="Generator level (without --data)."),
    n: int = typer.Option(50, "--n", help="Nodes per instance (without --data)."),
    instances: int = typer.Option(None, help="Use only the first N instances."),
    seed: int = typer.Option(None, help="Generate fresh instances with this seed instead of the fixed test set."),
    reference: str = typer.Option("auto", help="Method whose lengths the gap is measured against "
                                               "(auto: pyvrp or cpsat if run; none: no gap)."),
    budget: int = typer.Option(600, help="LazyMask's backtracking budget R (-1: unlimited)."),
    time_limit: float = typer.Option(2.0, "--time-limit", help="Per-instance seconds of pyvrp / cpsat."),
    device: str = typer.Option(None, help="Torch device of a trained policy (default: cuda if available)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Run methods on the same instances and print PIP's table."""
    from optiforge.heuristics import get_task, load_trusted_function
    from optiforge.heuristics.routing.evaluate import METHODS, run_method
    from optiforge.heuristics.routing.validate import best_feasible, table_row

    fixed = [m for m in METHODS if ":" not in m]
    for m in method:
        if m not in fixed and not m.startswith(("program:", "lmask:", "pip:")):
            validation.choice(m, "method", METHODS)
        if m.startswith(("lmask:", "pip:")) and not Path(m.partition(":")[2]).is_file():
            raise ValueError(f"method: no such model file {m.partition(':')[2]!r}")
    if reference not in ("auto", "none") and reference not in method:
        raise ValueError(f"reference: {reference!r} is not among the --method values")
    validation.real(time_limit, "time_limit", minimum=0.01)
    ins = _instances(data, problem, hardness, n, instances, seed)
    programs = {}
    for m in method:
        if m.startswith("program:"):
            path = Path(m.removeprefix("program:"))
            if not path.is_file():
                raise ValueError(f"method: no such program file {str(path)!r}")
            programs[m] = load_trusted_function(get_task(ins.problem), path.read_text())
    if reference == "auto":
        reference = next((m for m in ("pyvrp", "cpsat") if m in method), "none")
    err = Console(stderr=True)
    runs = []
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        for m in method:
            handle = bar.add_task(m, total=ins.size)
            runs.append(run_method(ins, m, budget=None if budget < 0 else budget, time_limit_s=time_limit,
                                   program=programs.get(m), device=device,
                                   progress=lambda done, total, h=handle: bar.update(h, completed=done)))
    ref = None
    if reference != "none":
        ref = best_feasible(next(r for r in runs if r.method == reference).checks)
    rows = [table_row(r.method, r.checks, r.time_s, ref) for r in runs]
    report = {"problem": ins.problem, "hardness": ins.hardness, "n": ins.n, "instances": ins.size,
              "reference": reference, "budget": budget,
              "results": [{**row.as_dict(), **_proven(r)} for row, r in zip(rows, runs, strict=True)]}
    if as_json:
        print(json.dumps(_nan_to_none(report), indent=2))
        return
    table = Table("method", "Sol.Inf %", "Inst.Inf %", "Obj", "Gap %", "Time s", "proven inf.")
    for row, r in zip(rows, runs, strict=True):
        table.add_row(row.method, f"{row.sol_inf:.2f}", f"{row.inst_inf:.2f}", _num(row.obj),
                      _num(row.gap, ".2f"), f"{row.time_s:.2f}", str(_proven(r).get("proven_infeasible", "-")))
    out = Console(file=sys.stdout)
    out.print(f"{ins.problem} ({ins.hardness}), n = {ins.n}, {ins.size} instances; gap vs {reference}")
    out.print(table)


def _proven(run: Any) -> dict[str, int]:
    return {} if run.proven_infeasible is None else {"proven_infeasible": int(run.proven_infeasible.sum())}


def _num(x: float, fmt: str = ".4f") -> str:
    return "-" if math.isnan(x) else format(x, fmt)


def _nan_to_none(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_nan_to_none(v) for v in obj]
    return obj
