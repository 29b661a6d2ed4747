"""``optiforge scheduling``: dynamic cloud workflow scheduling from the shell.

::

    optiforge scheduling generate --scale S --gamma 1.5 --out test_S.json
    optiforge scheduling train --method deft --generations 20 30 --out deft.pt --executor ray
    optiforge scheduling train --resume 3f2a9c1b0d4e --out deft.pt     # continue a killed run
    optiforge scheduling evaluate --scale M --gamma 1.5 -m prolis -m heft -m deft:deft.pt --json

``program:FILE`` evaluates a ``priority(task, vms)`` function from FILE **in this process**
(it is your code; LLM output belongs in a sandboxed campaign on the ``workflow`` task).
Training checkpoints are artifacts of a campaign in the store (``--resume`` takes its id).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from optiforge import validation
from optiforge.platform.campaigns.report import campaign_status
from optiforge.platform.campaigns.summary import SCHEDULING_TRAINING
from optiforge.platform.cli.errors import user_errors

scheduling_app = typer.Typer(help="Dynamic cloud workflow scheduling (DEFT, GATES, ProLiS, HEFT).",
                             no_args_is_help=True)

TRAIN_METHODS = {"deft": (4, "graph"), "deft-linear": (4, "linear"), "deft-mlp": (4, "mlp"), "gates": (1, None)}
HEURISTICS = ("prolis", "heft", "cheapest")
_COLUMNS = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())


def register(app: typer.Typer) -> None:
    """Add the ``scheduling`` group to ``app``."""
    app.add_typer(scheduling_app, name="scheduling")


def _scale(scale: str) -> str:
    from optiforge.heuristics.scheduling.instances import check_scale

    return check_scale(scale)


def _gammas(gamma: list[float]) -> list[float]:
    from optiforge.heuristics.scheduling.instances import check_gamma

    return [check_gamma(g) for g in gamma]


def _policy(method: str, penalty: Any) -> Any:
    """Build the scheduler named by ``method`` (validated here, at the boundary)."""
    from optiforge.heuristics.scheduling import BASELINES, PriorityPolicy

    if method in BASELINES:
        return PriorityPolicy(BASELINES[method])
    if method.startswith("deft:"):
        from optiforge.heuristics.scheduling.policy import load_policy

        return load_policy(method.removeprefix("deft:"), penalty=penalty)
    if method.startswith("program:"):
        from optiforge.heuristics import get_task, load_trusted_function

        path = Path(method.removeprefix("program:"))
        if not path.is_file():
            raise ValueError(f"method: no such program file {str(path)!r}")
        return PriorityPolicy(load_trusted_function(get_task("workflow"), path.read_text()))
    raise ValueError(f"method: unknown method {method!r}; use {', '.join(HEURISTICS)}, deft:MODEL.pt "
                     "or program:FILE.py")


@scheduling_app.command("generate")
@user_errors
def generate(
    scale: str = typer.Option("S", help="S | M | L"),
    gamma: float = typer.Option(1.5, help="Deadline coefficient (> 0)."),
    instances: int = typer.Option(30, help="Instances (the fixed test set: 30)."),
    out: Path = typer.Option(None, help="Write the instances as JSON here."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable summary."),
) -> None:
    """Generate the fixed test instances of a scale and gamma; print a summary."""
    from optiforge.heuristics.scheduling import holdout_instances

    _scale(scale)
    _gammas([gamma])
    validation.integer(instances, "instances", minimum=1, maximum=1000)
    if out is not None:
        validation.output_file(out, "out")
    insts = holdout_instances(scale, gamma, n=instances)
    doc = {"scale": scale, "gamma": gamma, "instances": [
        {"workflows": [w.name for w in i.workflows], "arrivals": i.arrivals.tolist()} for i in insts]}
    if out is not None:
        out.write_text(json.dumps(doc))
    rows = [{"instance": k, "workflows": len(i.workflows), "tasks": i.n_tasks,
             "span_s": float(i.arrivals[-1] - i.arrivals[0])} for k, i in enumerate(insts)]
    if as_json:
        print(json.dumps({"scale": scale, "gamma": gamma, "out": None if out is None else str(out), "rows": rows}))
        return
    table = Table("instance", "workflows", "tasks", "arrival span (s)")
    for r in rows:
        table.add_row(str(r["instance"]), str(r["workflows"]), str(r["tasks"]), f"{r['span_s']:.0f}")
    Console(file=sys.stdout).print(table)
    if out is not None:
        print(f"wrote {out}")


@scheduling_app.command("evaluate")
@user_errors
def evaluate(
    scale: str = typer.Option("S", help="S | M | L"),
    gamma: list[float] = typer.Option([1.5], "--gamma", "-g", help="Deadline coefficient(s) (repeatable)."),  # noqa: B006
    method: list[str] = typer.Option(  # noqa: B006 - typer reads the default, never mutates it
        ["prolis"], "--method", "-m", help="prolis | heft | cheapest | deft:MODEL.pt | program:FILE.py (repeatable)."),
    instances: int = typer.Option(30, help="Test instances per gamma (the fixed set has 30)."),
    penalty: str = typer.Option("gates", help="SLA penalty rule: gates (1 + 2 $/h late) | paper (0.24 $/h)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Mean cost (VM rental + SLA penalty) of each method on the fixed test instances."""
    from optiforge.heuristics.scheduling import PENALTIES, holdout_instances, simulate

    _scale(scale)
    gammas = _gammas(gamma)
    validation.integer(instances, "instances", minimum=1, maximum=1000)
    validation.choice(penalty, "penalty", tuple(PENALTIES))
    rule = PENALTIES[penalty]
    policies = {m: _policy(m, rule) for m in method}
    sets = {g: holdout_instances(scale, g, n=instances) for g in gammas}
    rows = []
    with Progress(*_COLUMNS, console=Console(stderr=True), transient=True) as bar:
        for m, policy in policies.items():
            handle = bar.add_task(m, total=instances * len(gammas))
            results, seconds = [], 0.0
            for g in gammas:
                for inst in sets[g]:
                    t0 = time.perf_counter()
                    results.append(simulate(inst, policy, penalty=rule))
                    seconds += time.perf_counter() - t0
                    bar.advance(handle)
            decisions = sum(r.decisions for r in results)
            rows.append({"method": m, "cost": float(sum(r.cost for r in results) / len(results)),
                         "vm_cost": float(sum(r.vm_cost for r in results) / len(results)),
                         "penalty": float(sum(r.penalty for r in results) / len(results)),
                         "late_workflows": int(sum(r.n_late for r in results)),
                         "ms_per_decision": 1000.0 * seconds / max(decisions, 1)})
    report = {"scale": scale, "gammas": gammas, "instances": instances, "penalty": penalty, "results": rows}
    if as_json:
        print(json.dumps(report, indent=2))
        return
    table = Table("method", "cost $", "VM $", "penalty $", "late workflows", "ms/decision")
    for r in rows:
        table.add_row(r["method"], f"{r['cost']:.2f}", f"{r['vm_cost']:.2f}", f"{r['penalty']:.2f}",
                      str(r["late_workflows"]), f"{r['ms_per_decision']:.3f}")
    out = Console(file=sys.stdout)
    out.print(f"scale {scale}, gamma {', '.join(map(str, gammas))}, {instances} instances each, penalty {penalty}")
    out.print(table)


@scheduling_app.command("train")
@user_errors
def train(
    method: str = typer.Option("deft", help="deft | deft-linear | deft-mlp | gates (single expert)."),
    generations: tuple[int, int] = typer.Option((20, 30), help="ES generations: per stage-1 expert, stage 2."),
    population: int = typer.Option(40, help="ES population (even)."),
    sigma: float = typer.Option(0.05, help="ES noise scale."),
    lr: float = typer.Option(0.01, help="Adam step size."),
    workflows: int = typer.Option(10, help="Workflows per training instance."),
    executor: str = typer.Option("local", help="Where the population is evaluated: local | ray."),
    workers: int = typer.Option(2, help="Parallel fitness evaluations."),
    seed: int = typer.Option(0),
    out: Path = typer.Option(Path("deft.pt"), help="Where to write the trained policy."),
    resume: str = typer.Option(None, help="Continue the training campaign with this id."),
) -> None:
    """Train DEFT (or an ablation, or the single-expert GATES policy) by OpenAI-ES."""
    from optiforge.heuristics.scheduling.policy import DeftConfig
    from optiforge.heuristics.scheduling.train import ESConfig, train_deft
    from optiforge.platform.executors import EXECUTORS, make_executor
    from optiforge.platform.store import Store
    from optiforge.platform.store.checkpoints import StoreCheckpointer

    validation.choice(executor, "executor", EXECUTORS)
    validation.integer(workers, "workers", minimum=1, maximum=1024)
    if resume is None:  # check everything before the store is opened
        validation.choice(method, "method", tuple(TRAIN_METHODS))
        if len(generations) != 2 or min(generations) < 0:
            raise ValueError(f"generations: two counts >= 0 expected, got {generations!r}")
        es = ESConfig(population=population, sigma=sigma, lr=lr, workflows=workflows, seed=seed)
    validation.output_file(out, "out")
    store = Store()
    if resume is not None:
        campaign = store.get_campaign(resume)
        if campaign.agent != SCHEDULING_TRAINING:
            raise ValueError(f"resume: campaign {resume} is not a scheduling training run")
        cfg = campaign.config
        method, generations = cfg["method"], tuple(cfg["generations"])
        es = ESConfig(**cfg["es"])
    else:
        cfg = {"method": method, "generations": list(generations), "es": es.__dict__}
        resume = store.create_campaign(task="workflow", agent=SCHEDULING_TRAINING, llm="none",
                                       budget=max(1, sum(generations)), seed=seed, executor=executor,
                                       config=cfg, name=f"scheduling train {method}")
    experts, gate = TRAIN_METHODS[method]
    err = Console(stderr=True)
    err.print(f"training campaign {resume} ({method}); resume with --resume {resume}")
    with campaign_status(store, resume):
        with make_executor(executor, workers=workers) as ex, \
                Progress(*_COLUMNS, TextColumn("{task.fields[info]}"), console=err) as bar:
            handle = bar.add_task("ES", total=None, info="")
            policy = train_deft(
                DeftConfig(experts, gate), generations, es, executor=ex,
                checkpointer=StoreCheckpointer(store, resume),
                progress=lambda done, total, s: bar.update(
                    handle, completed=done, total=total,
                    info=f"stage {'2' if s['stage'] >= experts or experts == 1 else '1'} "
                         f"mean cost {s['cost_mean']:.2f}"))
        policy.save(str(out))
    store.set_campaign_status(resume, "finished")
    print(json.dumps({"campaign": resume, "method": method, "out": str(out)}))
