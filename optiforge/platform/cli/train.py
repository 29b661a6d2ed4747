"""``optiforge train decentralized | federated``: distributed training schemes, in process or on Ray.

::

    optiforge train decentralized --agents 16 --alpha 0.1 --topology gossip --r 0.2 \\
        --schedule late --budget 0.1 --merge final --engine local --data digits
    optiforge train federated --agents 16 --alpha 0.1 -m adi -m diana --compressor randk \\
        --fraction 0.1 --participation 0.5 --engine ray --json

Each command shows a progress bar and writes ``<out>/<kind>.json`` (config, final figures and
every curve) and ``<out>/<kind>.png``; ``--json`` prints the final figures (accuracy of the
merged / server model, bits sent) on stdout. The algorithms are
:mod:`optiforge.optim.distributed`; ``--engine ray`` runs each agent in a Ray actor.
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

from optiforge import validation as check
from optiforge.platform.cli.errors import parse_json, read_text_file, user_errors
from optiforge.platform.cli.safe_write import prepare_folder, write_file

train_app = typer.Typer(help="Distributed training: decentralized SGD, federated learning with "
                             "compression (in process or on Ray).", no_args_is_help=True)
console = Console(stderr=True)

TOPOLOGIES = ("gossip", "ring", "graph", "allreduce", "none")
SCHEDULES = ("none", "early", "late", "uniform")
MERGES = ("final", "none")
METHODS = ("adi", "diana", "ef21", "fedavg")

# Options both commands share.
AGENTS = typer.Option(16, "--agents", help="Agents (decentralized) or clients (federated).")
ALPHA = typer.Option(0.1, "--alpha", help="Dirichlet concentration of the non-IID split (inf: IID).")
DATA = typer.Option("digits", "--data", help="digits (scikit-learn's bundled) | synthetic.")
HIDDEN_HELP = "MLP hidden widths, comma-separated ('' = softmax regression)."
ENGINE = typer.Option("local", "--engine", help="local (in process, vmap) | ray (one actor per agent).")
ADDRESS = typer.Option(None, "--address", help="Ray cluster address (default: start a local Ray).")
NUM_CPUS = typer.Option(None, "--num-cpus", help="CPUs of a locally started Ray.")
SEED = typer.Option(0, "--seed", help="Seed of the split, the model and every random draw.")
EVAL_EVERY = typer.Option(10, "--eval-every", help="Measure every this many rounds.")
FORCE = typer.Option(False, "--force", help="Write into a non-empty --out folder.")
AS_JSON = typer.Option(False, "--json", help="Print the final figures as JSON on stdout.")


def register(app: typer.Typer) -> None:
    """Add the ``train`` group to ``app``."""
    app.add_typer(train_app, name="train")


def _hidden(text: str) -> tuple[int, ...]:
    try:
        widths = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise ValueError(f"hidden: expected comma-separated integers, got {check.shown(text)}") from None
    for w in widths:
        check.integer(w, "hidden", minimum=1)
    return widths


def _setup(data: str, agents: int, alpha: float, hidden: str, seed: int, engine: str,
           address: str | None, num_cpus: int | None) -> tuple[Any, Any, list, Any]:
    """Validate the shared options, then build (data, model, shards) — the engine last."""
    import numpy as np

    from optiforge.optim.distributed import FlatModel, dirichlet_partition, mlp
    from optiforge.platform.distributed import ENGINES, load_dataset, make_engine

    check.choice(engine, "engine", ENGINES)
    check.integer(agents, "agents", minimum=1)
    if num_cpus is not None:
        check.integer(num_cpus, "num_cpus", minimum=1)
    widths = _hidden(hidden)
    dataset = load_dataset(data, seed)
    model = FlatModel(mlp(dataset.n_features, dataset.n_classes, widths, seed))
    shards = dirichlet_partition(dataset.y_train, agents, alpha, np.random.default_rng(seed))
    return dataset, model, shards, lambda: make_engine(engine, address=address, num_cpus=num_cpus)


def _progress() -> Progress:
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    return Progress(*columns, console=console, transient=True)


def _write(out: Path, force: bool, kind: str, report: dict[str, Any], draw: Any) -> dict[str, str]:
    folder = prepare_folder(out, force=force)
    json_name, png_name = f"{kind}.json", f"{kind}.png"
    write_file(folder, json_name, json.dumps(report, indent=1).encode())
    png = draw(folder / png_name)
    return {"json": str(folder / json_name), "png": str(png)}


def _print(report: dict[str, Any], files: dict[str, str], as_json: bool, keys: list[str]) -> None:
    if as_json:
        print(json.dumps({"final": {r["label"]: r["final"] for r in report["runs"]},
                          "wall_s": report["wall_s"], **files}, indent=1))
        return
    table = Table("run", *keys)
    for r in report["runs"]:
        table.add_row(r["label"], *[_fmt(r["final"][k]) for k in keys])
    out = Console(file=sys.stdout)
    out.print(table)
    out.print(f"wrote {files['json']} and {files['png']} ({report['wall_s']} s)")


def _fmt(v: Any) -> str:
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:.4f}"


@train_app.command("decentralized")
@user_errors
def decentralized(
    agents: int = AGENTS,
    alpha: float = ALPHA,
    data: str = DATA,
    hidden: str = typer.Option("128,128", "--hidden", help=HIDDEN_HELP),
    rounds: int = typer.Option(200, "--rounds", help="Communication rounds."),
    local_steps: int = typer.Option(5, "--local-steps", help="SGD steps per agent per round."),
    batch_size: int = typer.Option(32, "--batch-size", help="Mini-batch per agent."),
    lr: float = typer.Option(0.2, "--lr", help="SGD learning rate."),
    momentum: float = typer.Option(0.0, "--momentum", help="Heavy-ball momentum (kept local)."),
    topology: str = typer.Option("gossip", "--topology", help="gossip | ring | graph | allreduce | none: ordinary rounds."),
    r: float = typer.Option(0.2, "--r", help="Gossip: probability that an agent talks to one random peer per round."),
    graph: Path = typer.Option(None, "--graph", help="JSON adjacency matrix (agents x agents) for --topology graph."),
    schedule: str = typer.Option("none", "--schedule", help="none | early | late | uniform: where the all-reduce windows go."),
    budget: float = typer.Option(0.1, "--budget", help="Share of rounds in windows (equal for every placement)."),
    window_start: float = typer.Option(None, "--window-start", help="Start early/late windows at this fraction of training."),
    merge: str = typer.Option("final", "--merge", help="final: one global merge after the last round | none."),
    init: str = typer.Option("shared", "--init", help="shared | independent: the agents' starting points."),
    engine: str = ENGINE,
    address: str = ADDRESS,
    num_cpus: int = NUM_CPUS,
    seed: int = SEED,
    eval_every: int = EVAL_EVERY,
    out: Path = typer.Option(Path("runs/decentralized"), "--out", help="Folder for decentralized.json/.png."),
    force: bool = FORCE,
    as_json: bool = AS_JSON,
) -> None:
    """Decentralized SGD: gossip / ring / graph, communication windows, a final global merge."""
    from optiforge.optim.distributed import (
        AllReduce,
        DecentralizedConfig,
        Gossip,
        Graph,
        NoCommunication,
        Ring,
        Schedule,
        Windows,
        train_decentralized,
    )
    from optiforge.platform.distributed.plots import plot_decentralized

    check.choice(topology, "topology", TOPOLOGIES)
    check.choice(schedule, "schedule", SCHEDULES)
    check.choice(merge, "merge", MERGES)
    if (graph is not None) != (topology == "graph"):
        raise ValueError("graph: give --graph FILE exactly when --topology graph")
    if topology == "graph":
        base = Graph.from_adjacency(parse_json(read_text_file(graph, "graph"), "graph"))
    else:
        base = {"gossip": lambda: Gossip(r), "ring": Ring, "allreduce": AllReduce,
                "none": NoCommunication}[topology]()
    windows = None if schedule == "none" else Windows(schedule, budget, window_start)
    config = DecentralizedConfig(rounds=rounds, local_steps=local_steps, batch_size=batch_size,
                                 lr=lr, momentum=momentum,
                                 schedule=Schedule(base, windows, final_merge=merge == "final"),
                                 eval_every=eval_every, seed=seed)
    dataset, model, shards, make = _setup(data, agents, alpha, hidden, seed, engine, address, num_cpus)
    if topology == "graph" and len(base.adjacency) != agents:
        raise ValueError(f"graph: has {len(base.adjacency)} nodes for {agents} agents")
    label = f"{topology}" + (f" R={r}" if topology == "gossip" else "") + \
        ("" if windows is None else f", {schedule} windows {budget}") + f", merge {merge}"
    start = time.perf_counter()
    eng = make()
    try:
        with _progress() as bar:
            handle = bar.add_task(label, total=rounds)
            result = train_decentralized(eng, model, dataset, shards, config, init=init,
                                         progress=lambda done, total: bar.update(handle, completed=done))
    finally:
        eng.close()
    wall = round(time.perf_counter() - start, 2)
    report = {"kind": "decentralized", "data": data, "agents": agents, "alpha": alpha,
              "engine": engine, "wall_s": wall,
              "runs": [{"label": label, **result.to_dict()}]}
    files = _write(out, force, "decentralized", report,
                   lambda p: plot_decentralized({label: result}, p,
                                                f"{data}, {agents} agents, Dirichlet α = {alpha}"))
    _print(report, files, as_json, ["accuracy", "merged_acc", "local_acc_mean", "bits"])


@train_app.command("federated")
@user_errors
def federated(
    agents: int = AGENTS,
    alpha: float = ALPHA,
    data: str = DATA,
    hidden: str = typer.Option("", "--hidden", help=HIDDEN_HELP + " Default: softmax regression, "
                               "convex as in ADI's theory."),
    method: list[str] = typer.Option(  # noqa: B006 - typer reads the default, never mutates it
        ["adi"], "--method", "-m", help="adi | diana | ef21 | fedavg (repeatable: compared in one plot)."),
    rounds: int = typer.Option(300, "--rounds", help="Communication rounds."),
    lr: float = typer.Option(0.5, "--lr", help="Server step (ADI, DIANA, EF21)."),
    compressor: str = typer.Option("randk", "--compressor", help="none | randk | topk | natural."),
    fraction: float = typer.Option(0.1, "--fraction", help="Share of entries kept by randk / topk."),
    participation: float = typer.Option(1.0, "--participation", help="Probability that a client takes part in a round."),
    a: float = typer.Option(4.0, "--a", help="ADI: weight cap a/M, 1 <= a <= agents (1 = plain averaging)."),
    pi_lr: float = typer.Option(0.2, "--pi-lr", help="ADI: mirror-ascent step on the client weights."),
    optimism: float = typer.Option(1.0, "--optimism", help="ADI: optimism α of the server step (0: plain)."),
    batch_size: int = typer.Option(None, "--batch-size", help="Client mini-batch (default: whole shard; FedAvg: 32)."),
    local_steps: int = typer.Option(5, "--local-steps", help="FedAvg: local SGD steps."),
    client_lr: float = typer.Option(0.1, "--client-lr", help="FedAvg: local SGD learning rate."),
    engine: str = ENGINE,
    address: str = ADDRESS,
    num_cpus: int = NUM_CPUS,
    seed: int = SEED,
    eval_every: int = EVAL_EVERY,
    out: Path = typer.Option(Path("runs/federated"), "--out", help="Folder for federated.json/.png."),
    force: bool = FORCE,
    as_json: bool = AS_JSON,
) -> None:
    """Federated learning with compressed uploads: ADI (agnostic DIANA), DIANA, EF21, FedAvg."""
    from optiforge.optim.distributed import (
        ADI,
        DIANA,
        EF21,
        FedAvg,
        FederatedConfig,
        make_compressor,
        train_federated,
    )
    from optiforge.platform.distributed.plots import plot_federated

    for name in method:
        check.choice(name, "method", METHODS)
    if len(set(method)) != len(method):
        raise ValueError("method: each method at most once")
    comp = make_compressor(compressor, fraction)

    def build(name: str) -> Any:
        if name == "adi":
            return ADI(lr=lr, pi_lr=pi_lr, a=a, alpha=optimism, compressor=comp, batch_size=batch_size)
        if name == "diana":
            return DIANA(lr=lr, compressor=comp, batch_size=batch_size)
        if name == "ef21":
            return EF21(lr=lr, compressor=comp, batch_size=batch_size)
        return FedAvg(client_lr=client_lr, local_steps=local_steps,
                      batch_size=32 if batch_size is None else batch_size, compressor=comp)

    methods = {name: build(name) for name in method}  # every method's options checked up front
    config = FederatedConfig(rounds=rounds, participation=participation, eval_every=eval_every, seed=seed)
    dataset, model, shards, make = _setup(data, agents, alpha, hidden, seed, engine, address, num_cpus)
    if "adi" in methods and a > agents:
        raise ValueError(f"a: must be <= agents ({agents}), got {a}")
    start = time.perf_counter()
    results = {}
    eng = make()
    try:
        with _progress() as bar:
            for name, meth in methods.items():
                handle = bar.add_task(f"{name} ({compressor})", total=rounds)
                results[name] = train_federated(
                    eng, model, dataset, shards, meth, config,
                    progress=lambda done, total, h=handle: bar.update(h, completed=done))
    finally:
        eng.close()
    wall = round(time.perf_counter() - start, 2)
    report = {"kind": "federated", "data": data, "agents": agents, "alpha": alpha,
              "engine": engine, "wall_s": wall,
              "runs": [{"label": name, **res.to_dict()} for name, res in results.items()]}
    files = _write(out, force, "federated", report,
                   lambda p: plot_federated(results, p, f"{data}, {agents} clients, Dirichlet α = "
                                                        f"{alpha}, {compressor}, p = {participation}"))
    _print(report, files, as_json, ["accuracy", "worst_client_loss", "mean_client_loss", "bits_up"])
