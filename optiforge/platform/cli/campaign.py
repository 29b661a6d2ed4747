"""``optiforge tasks | evaluate | campaign ...``: discovery campaigns from the shell."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from optiforge import validation as check
from optiforge.platform.campaigns.summary import TRAINING_RUNS, campaign_summary
from optiforge.platform.cli.errors import fail, parse_json, read_text_file, user_errors

campaign_app = typer.Typer(help="Launch, inspect, resume and export discovery campaigns.",
                           no_args_is_help=True)
console = Console()


MAX_TIMEOUT_S = 86_400.0  # a day: longer is a typo, and larger values overflow the clock


def _store():
    from optiforge.platform.store import Store

    return Store()


def _fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def register(app: typer.Typer) -> None:
    app.add_typer(tasks_app, name="tasks")
    app.command("agents", help="List the agents (built-in and plug-ins).")(agents)
    app.command("evaluate", help="Evaluate a heuristic program file on a task (sandboxed).")(evaluate)
    app.add_typer(campaign_app, name="campaign")


def _emit_rows(rows: list[dict], columns: dict[str, str], as_json: bool) -> None:
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(*columns.values())
    for r in rows:
        table.add_row(*(str(r[k]) for k in columns))
    console.print(table)


@user_errors
def agents(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    from optiforge.agents.registry import agent_names, get_agent

    rows = [{"name": n, "kind": get_agent(n).kind, "summary": get_agent(n).summary}
            for n in agent_names()]
    _emit_rows(rows, {"name": "agent", "kind": "kind", "summary": "summary"}, as_json)


tasks_app = typer.Typer(help="List the heuristic and black-box tasks; `tasks show NAME` for one.",
                        invoke_without_command=True)


def task_summary(description: str, width: int = 60) -> str:
    """The first clause of a task's description, cut to ``width`` characters.

    The description is a paragraph written for the LLM; a listing needs one line per task,
    so it keeps what comes before the first colon or full stop (``"Online bin packing"``).
    """
    text = " ".join(description.split())
    for stop in (": ", ". "):
        if stop in text:
            text = text[: text.index(stop)]
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


@tasks_app.callback()
@user_errors
def tasks(ctx: typer.Context,
          as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    if ctx.invoked_subcommand is not None:
        return
    from optiforge.blackbox import blackbox_task_names, get_blackbox_task
    from optiforge.heuristics import get_task, task_names

    rows = []
    for name in task_names():
        t = get_task(name)
        rows.append({"name": name, "kind": "heuristic", "entry_point": t.entry_point,
                     "baseline": t.baseline, "summary": task_summary(t.description),
                     "description": " ".join(t.description.split())})
    for name in blackbox_task_names():
        description = get_blackbox_task(name).description or "black-box function"
        rows.append({"name": name, "kind": "blackbox", "entry_point": "", "baseline": "",
                     "summary": task_summary(description), "description": description})
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    # One line per task whatever the terminal's width: the names keep their width and the
    # summary is cut with "…" to what is left; the long text is `tasks show NAME`'s.
    headers = {"name": "task", "kind": "kind", "entry_point": "implements", "baseline": "baseline"}
    widths = {k: max(len(h), *(len(str(r[k])) for r in rows)) for k, h in headers.items()}
    left = max(12, console.width - sum(widths.values()) - 3 * (len(headers) + 1) - 1)
    table = Table(caption="`optiforge tasks show NAME` prints a task's full description.")
    for key, header in headers.items():
        table.add_column(header, width=widths[key], no_wrap=True)
    table.add_column("summary", width=left, no_wrap=True, overflow="ellipsis")
    for r in rows:
        table.add_row(*(str(r[k]) for k in headers), task_summary(r["description"], left))
    console.print(table)


@tasks_app.command("show", help="Print one task's full description, interface and seeds.")
@user_errors
def tasks_show(name: str = typer.Argument(..., help="Task name (see `optiforge tasks`)."),
               as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    from optiforge.blackbox import get_blackbox_task
    from optiforge.heuristics import get_task, task_names

    if name in task_names():
        from optiforge.agents.evolution.graft import GraftableTask

        t = get_task(name)
        info = {"name": name, "kind": "heuristic", "description": " ".join(t.description.split()),
                "entry_point": t.entry_point, "baseline": t.baseline, "seeds": sorted(t.seeds),
                "template": t.template,
                # what the graft operator builds terms from (None: the task does not graft)
                "graft_features": dict(t.features) if isinstance(t, GraftableTask) else None}
    else:
        try:
            b = get_blackbox_task(name)
        except check.UnknownTaskError:  # anything else names what is wrong with a known task
            raise fail(f"task: unknown task {name!r}; `optiforge tasks` lists them") from None
        info = {"name": b.name, "kind": "blackbox", "description": b.description,
                "dimension": b.dim, "optimum": b.optimum}
    if as_json:
        print(json.dumps(info, indent=2))
        return
    console.print(f"[bold]{info['name']}[/bold] ({info['kind']} task)\n")
    console.print(info["description"] or "(no description)")
    if info["kind"] == "heuristic":
        console.print(f"\nimplements: {info['entry_point']}    baseline: {info['baseline']}    "
                      f"seeds: {', '.join(info['seeds'])}")
        features = info["graft_features"]
        console.print("graft features (expression: typical magnitude): " + (
            ", ".join(f"{k}: {v:g}" for k, v in features.items()) if features else "none (no graft rounds)"),
            markup=False, highlight=False)
        console.print()
        console.print(Syntax(info["template"], "python"))
    else:
        console.print(f"\ndimension: {info['dimension']}    known minimum: {info['optimum']}")


@user_errors
def evaluate(
    task: str = typer.Option(..., help="Task name (see `optiforge tasks`)."),
    program: Path = typer.Option(..., help="Python file defining the task's function."),
    split: str = typer.Option("test", help="Instance split: train | validation | test, or a dataset name the task offers."),
    as_json: bool = typer.Option(False, "--json", help="Print valid, score, metrics, error, runtime_s."),
    timeout: float = typer.Option(120.0, help="Wall-clock limit in seconds."),
) -> None:
    from optiforge.heuristics import get_task
    from optiforge.platform.executors import make_executor
    from optiforge.platform.sandbox import SandboxLimits

    task_obj = get_task(task)
    if not 0 < timeout <= MAX_TIMEOUT_S:
        raise ValueError(f"timeout: must be > 0 and <= {MAX_TIMEOUT_S:g} seconds, got {timeout:g}")
    source = read_text_file(program, "program")
    with make_executor("local", workers=1, limits=SandboxLimits(timeout_s=timeout)) as ex:
        ev = ex.evaluate(task_obj, [source], split)[0]  # the executor checks `split`
    if as_json:
        print(json.dumps(ev.to_dict(), indent=2))
    else:
        status = "[green]valid[/]" if ev.valid else "[red]invalid[/]"
        console.print(f"{status}  score={_fmt(ev.score)}  runtime={ev.runtime_s:.2f}s")
        for k, v in sorted(ev.metrics.items()):
            console.print(f"  {k}: {v:.4g}" if isinstance(v, float) else f"  {k}: {v}")
        if ev.error:
            console.print(f"[red]{ev.error}[/]")
    if not ev.valid:
        raise typer.Exit(1)


TIMEOUT_HELP = ("Seconds of wall clock for this run: no round starts after it (the round under "
                "way finishes), the best so far is reported and the campaign stays resumable.")


class _TimeLeftColumn(ProgressColumn):
    """Wall-clock time left before ``--timeout`` (the bar's clock starts with the run's)."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def render(self, task: Any) -> Text:
        left = int(max(0.0, self.seconds - (task.elapsed or 0.0)))
        return Text(f"{left // 60}:{left % 60:02d} left", style="progress.remaining")


def _run_with_progress(store, cid: str, timeout: float | None = None) -> None:
    from optiforge.agents.registry import get_agent
    from optiforge.platform.campaigns import run_campaign

    campaign = store.get_campaign(cid)
    programs = get_agent(campaign.agent).kind == "program"
    console.print(f"campaign [bold]{cid}[/]  task={campaign.task}  agent={campaign.agent}  "
                  f"llm={campaign.llm}  budget={campaign.budget}  executor={campaign.executor}")
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("best {task.fields[best]}"), TimeElapsedColumn())
    if timeout is not None:  # with a time limit the budget bar can sit near empty: show the clock
        columns = (*columns, _TimeLeftColumn(timeout))
    with Progress(*columns, console=console, transient=False) as bar:
        handle = bar.add_task("generating" if programs else "evaluating", total=campaign.budget, best="-")

        def progress(done: int, total: int, best: float | None) -> None:
            bar.update(handle, completed=min(done, total), best=_fmt(best))

        try:
            report = run_campaign(store, cid, progress, timeout=timeout)
        except KeyboardInterrupt:
            console.print(f"\ninterrupted; resume with: optiforge campaign resume {cid}")
            raise typer.Exit(130) from None
    if report.timed_out:
        console.print(f"\ntime limit ({timeout:g} s) reached before the budget was spent: the best "
                      f"so far follows; resume with: optiforge campaign resume {cid}")
    unit = "programs generated" if programs else "evaluations"
    console.print(f"\ncampaign id: [bold]{report.campaign_id}[/]  ({report.generated} {unit})")
    if report.best_code is None and report.best_params is None:
        console.print("[red]no valid candidate found[/]")
        return
    if report.best_params is not None:  # a black-box campaign: the best point and its regret
        console.print(f"best value {_fmt(report.best_train_score, 6)} at "
                      f"{json.dumps(report.best_params, sort_keys=True)}")
        if report.baseline_test_score is not None:
            console.print(f"regret vs the known optimum: {_fmt(report.gap_vs_baseline, 6)}")
        return
    if report.best_idea:
        console.print(f"idea: {report.best_idea}")
    console.print(Syntax(report.best_code, "python", theme="ansi_dark", word_wrap=True))
    console.print(
        f"best: train {_fmt(report.best_train_score)}  {report.test_split} "
        f"{_fmt(report.best_test_score)}  |  baseline {report.baseline}: {report.test_split} "
        f"{_fmt(report.baseline_test_score)}  |  gap vs baseline: {_fmt(report.gap_vs_baseline)} "
        "points (negative = better than the baseline)"
    )
    if len(report.test_by_dataset) > 1:
        console.print(_by_dataset_table(report))
    colour = "green" if report.discovered else "yellow"
    console.print(f"[bold {colour}]{report.verdict()}[/]")


def _by_dataset_table(report: Any) -> Table:
    """The held-out score per dataset, best against the baseline: the mean can hide a loss."""
    table = Table("dataset", "best", report.baseline or "baseline", "difference",
                  title=f"{report.test_split} split by dataset (lower is better)", title_justify="left")
    for name, v in report.test_by_dataset.items():
        diff = v["best"] - v["baseline"]
        table.add_row(name, _fmt(v["best"]), _fmt(v["baseline"]),
                      Text(f"{diff:+.3f}", style="green" if diff < 0 else "red" if diff > 0 else ""))
    return table


@campaign_app.command("run")
@user_errors
def run(
    task: str = typer.Option(..., help="Task name (see `optiforge tasks`)."),
    agent: str = typer.Option("evolution", help="evolution | hollm | random (see `optiforge agents`)."),
    budget: int = typer.Option(..., help="LLM-written programs (evolution) or evaluations (hollm)."),
    llm: str | None = typer.Option(
        None, help="LLM spec: llamacpp:qwen-coder-1.5b (default for evolution; `optiforge models fetch` it), llamacpp:qwen-coder-0.5b, smollm2, hf:<id>, openai:<url>#<model>, "
                   "vllm:<model>, replay:<file>. HOLLM runs LLM-free unless given."),
    seed: int = typer.Option(0, help="Random seed (agent and sampling)."),
    executor: str = typer.Option("local", help="local | ray"),
    workers: int = typer.Option(2, help="Parallel sandbox workers."),
    rl: str = typer.Option(
        "auto", help="auto | none | grpo: fine-tune the LLM (LoRA, GRPO) on heuristic quality; "
                     "auto = grpo where the model trains in process (the Qwen coders, smollm2, hf:...)."),
    samples: int = typer.Option(4, help="G: LLM samples per prompt."),
    max_new_tokens: int = typer.Option(384, help="Generation length limit per sample."),
    rl_every: int = typer.Option(2, help="With --rl grpo: one RL update every K rounds."),
    lora: str | None = typer.Option(
        None, help="With --rl grpo: lora (default) | bilora (Bi-LoRA: an auxiliary adversarial "
                   "adapter trained by ascent, dropped at save: the versions stay plain LoRA)."),
    options: str | None = typer.Option(
        None, help='Agent options as JSON, e.g. \'{"proposer": "sobol", "b": 4}\' (hollm) or '
                   '\'{"pool_size": 8}\' (evolution; --samples/--max-new-tokens override).'),
    name: str | None = typer.Option(None, help="A label for the campaign."),
    owner: str = typer.Option("local", help="Who sees the campaign on the dashboard (a token's owner)."),
    timeout: float | None = typer.Option(None, help=TIMEOUT_HELP),
) -> None:
    from optiforge.agents.registry import get_agent
    from optiforge.platform.campaigns import create_campaign

    if timeout is not None:
        check.positive(timeout, "timeout")  # before anything is stored
    store = _store()
    agent_options = parse_json(options, "options") if options else {}
    if not isinstance(agent_options, dict):
        raise ValueError("options: expected a JSON object")
    config: dict = {"agent_options": agent_options}
    if get_agent(agent).kind == "program":
        agent_options.update({"samples_per_prompt": samples, "max_new_tokens": max_new_tokens})
        config["rl_every"] = rl_every
    if lora is not None:
        config["rl_options"] = {"lora": lora}
    cid = create_campaign(store, task=task, agent=agent, budget=budget, llm=llm, seed=seed,
                          executor=executor, rl=rl, workers=workers, config=config, name=name,
                          owner=owner)
    _run_with_progress(store, cid, timeout)


@campaign_app.command("resume")
@user_errors
def resume(campaign_id: str = typer.Argument(..., help="Campaign id."),
           timeout: float | None = typer.Option(None, help=TIMEOUT_HELP)) -> None:
    if timeout is not None:
        check.positive(timeout, "timeout")
    store = _store()
    c = store.get_campaign(campaign_id)
    if c.agent in TRAINING_RUNS:
        raise fail(f"campaign {campaign_id} is a training run: resume it with "
                   f"`{TRAINING_RUNS[c.agent]} --resume {campaign_id}`")
    if c.status == "finished":
        raise fail(f"campaign {campaign_id} is already finished")
    from optiforge.platform.store.runners import check_free

    check_free(c.id, c.status, c.runner)  # before the model loads
    _run_with_progress(store, campaign_id, timeout)


@campaign_app.command("list")
@user_errors
def list_(as_json: bool = typer.Option(False, "--json")) -> None:
    store = _store()
    rows = []
    for c in store.list_campaigns():
        s = campaign_summary(store, c.id)
        best = s["best"][0] if s["best"] else None
        rows.append({"id": c.id, "task": c.task, "agent": c.agent, "llm": c.llm, "status": c.status,
                     "budget": c.budget, "evaluations": s["evaluations"],
                     "best_score": None if best is None else best.get("score", best.get("value")),
                     "created_at": str(c.created_at)})
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table("id", "task", "agent", "llm", "status", "budget", "evals", "best", "created")
    for r in rows:
        table.add_row(r["id"], r["task"], r["agent"], r["llm"], r["status"], str(r["budget"]),
                      str(r["evaluations"]), _fmt(r["best_score"]), r["created_at"][:19])
    console.print(table)


@campaign_app.command("show")
@user_errors
def show(campaign_id: str = typer.Argument(...), as_json: bool = typer.Option(False, "--json")) -> None:
    s = campaign_summary(_store(), campaign_id)
    if as_json:
        print(json.dumps(s, indent=2, default=str))
        return
    console.print(f"[bold]{s['id']}[/]  {s['status']}  task={s['task']}  agent={s['agent']}  "
                  f"llm={s['llm']}  seed={s['seed']}  executor={s['executor']}")
    if "study_id" in s:  # a black-box campaign: its study's trials
        console.print(f"study {s['study_id']}  evaluations {s['evaluations']}/{s['budget']}  "
                      f"failed {s['failed']}  running {s['running']}")
        for k, b in enumerate(s["best"]):
            console.print(f"#{k + 1} value {_fmt(b['value'], 6)} at {json.dumps(b['params'], sort_keys=True)}")
        return
    console.print(f"rounds {s['rounds']}  LLM-written {s['llm_written']}/{s['budget']}  "
                  f"generated {s['generated']}  "
                  f"valid rate {_fmt(s['valid_rate'], 2)}  RL steps {s['rl_steps']}")
    ops = Table("operator", "generated", "valid")
    for op, d in sorted(s["operators"].items()):
        ops.add_row(op, str(d["generated"]), str(d["valid"]))
    console.print(ops)
    if s["reward_trend"]:
        trend = "  ".join(f"r{t['round']}:{t['mean_reward']:+.2f}" for t in s["reward_trend"][-12:])
        console.print(f"mean reward by round: {trend}")
    for a in s["adapters"]:
        console.print(f"adapter {a['name']}: " + ", ".join(
            f"{k}={v:.4g}" for k, v in a.items() if isinstance(v, float)))
    for i, b in enumerate(s["best"]):
        console.print(f"\n#{i + 1} score {_fmt(b['score'])} (test {_fmt(b['test_score'])}) "
                      f"[{b['operator']}, round {b['round']}] {b['idea'] or ''}")
        if i == 0 and b["code"]:
            console.print(Syntax(b["code"], "python", theme="ansi_dark", word_wrap=True))


MAX_EXPORT_TOP = 10_000


@campaign_app.command("export")
@user_errors
def export(
    campaign_id: str = typer.Argument(...),
    out: str | None = typer.Option(None, help="Output folder (default ./<id>-export)."),
    top: int = typer.Option(5, help="How many best candidates to write (best_<i>.py or .json)."),
    force: bool = typer.Option(
        False, "--force", help="Write into a folder that already holds files (files of the same "
                               "names are replaced; nothing else is touched or deleted)."),
) -> None:
    from optiforge.platform.campaigns import export_records
    from optiforge.platform.cli import safe_write

    if out is not None and not out.strip():
        raise ValueError("out: must be a folder path, got an empty string")
    if not 1 <= top <= MAX_EXPORT_TOP:
        raise ValueError(f"top: must be between 1 and {MAX_EXPORT_TOP}, got {top}")
    # Everything is gathered, and the folder checked, before the first byte is written.
    records = export_records(_store(), campaign_id, top)
    files = {name: text.encode("utf-8") for name, text in records.best_files}
    table = io.StringIO(newline="")
    w = csv.writer(table)
    w.writerow(records.fields)
    for row in records.rows:
        w.writerow([json.dumps(row[k]) if isinstance(row[k], dict) else row[k]
                    for k in records.fields])
    files["evaluations.csv"] = table.getvalue().encode("utf-8")
    files["evaluations.json"] = json.dumps(records.rows, indent=1, default=str).encode("utf-8")
    files["campaign.json"] = json.dumps(records.summary, indent=2, default=str).encode("utf-8")
    adapter = records.adapter
    folder = safe_write.prepare_folder(Path(out or f"{campaign_id}-export"), force=force)
    if adapter is not None and not adapter.exists():
        print(f"warning: the adapter {adapter} is no longer in the store; exported without it",
              file=sys.stderr)
        adapter = None
    skip = safe_write.check_names(folder, files, {} if adapter is None else {"adapter": adapter})
    for name, data in files.items():
        safe_write.write_file(folder, name, data)
    if adapter is not None and "adapter" not in skip:
        safe_write.copy_in(folder, "adapter", adapter)
    print(str(folder), file=sys.stdout)
