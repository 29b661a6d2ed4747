"""Discovery on one CPU: per-operator yield of a small model, and campaigns with and without tune.

Two parts (issue 19, parts 1, 3 and 4):

``operators``: for each evolution operator, ``--prompts`` prompts x ``G`` samples from the
LLM (default: the bundled SmolLM2-135M), parents drawn from the seeded pool; every response is
parsed and the parsable ones are scored in the sandbox on the train split. Per operator it
prints the valid rate, the *new*-program rate (valid, not a hash seen before, and not the score
of a program shown in the prompt: CALM's duplicate test), the rate of new programs that have
tunable constants (what ``tune`` can work on) and the rate that beats the best parent.

``tune``: the tune operator alone on programs of the kind a small model writes (a weight or a
threshold added to best fit), no LLM: train score before and after, the held-out test score
of both against the baseline's, evaluations and seconds.

``campaigns``: full campaigns (the platform's runner, store and sandbox) for each arm and seed:
``evolution`` (``tune_every=0``: no tune, no graft), ``evolution+tune`` (``graft_terms=0``),
``evolution+tune+graft`` (the default), and two controls without the LLM: ``graft-no-llm``
(the default campaign with an LLM that writes no code: what graft + tune find alone) and
``tune-seeds`` (the tune operator on the task's seeds alone). Prints the test score of the
best program against the baseline's and whether it is a discovery (a generated program that
beats the baseline on the held-out split), with the wall time.

Usage::

    python benchmarks/discovery.py operators [--task binpacking] [--prompts 3] [--samples 4]
        [--llm llamacpp:smollm2 llamacpp:gemma3] [--show-new] [--answer-prefix code]
    python benchmarks/discovery.py tune [--budget 24] [--seed 0]
    python benchmarks/discovery.py campaigns [--task binpacking] [--seeds 0 1] [--budget 16]
        [--arms evolution evolution+tune evolution+tune+graft graft-no-llm tune-seeds] [--rl none]
        [--timeout 900]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from optiforge.agents.evolution import (
    OPERATORS,
    EvolutionAgent,
    EvolutionConfig,
    PoolEntry,
    TuneRequest,
    code_hash,
    find_constants,
)
from optiforge.agents.evolution.population import scores_equal
from optiforge.heuristics import get_task

console = Console()


def _llm(spec: str):
    from optiforge.platform.llm.spec import from_spec

    return from_spec(spec)


class AnswerPrefixed:
    """A diagnostic wrapper for a *base* model (no chat template): each prompt is followed by the
    start of the answer, which the model then completes as a document; the start is put back in
    front of every completion before the agent parses it.

    It tests whether a pretrained, not instruction-tuned, model writes heuristics when the answer
    is begun for it. It is not a platform feature: the agent's prompts are unchanged, and a
    chat model (whose prompt is wrapped in a template) is refused, since text appended to its
    user turn is not the start of its answer.
    """

    def __init__(self, llm, prefix: str) -> None:
        if llm.format_prompt("x") != "x":
            raise ValueError("answer prefix: only for a model without a chat template")
        self.llm, self.prefix = llm, prefix

    def generate(self, prompts, n=1, **kwargs):
        out = self.llm.generate([p + self.prefix for p in prompts], n, **kwargs)
        return [[dataclasses.replace(c, text=self.prefix + c.text) for c in row] for row in out]


def answer_prefix(task, choice: str) -> str:
    """``code``: a fenced block opened with the task's imports and the function's first line;
    ``idea``: CALM's description opening; anything else is used as given."""
    if choice == "code":
        from optiforge.agents.evolution.parsing import signature_params

        params = ", ".join(signature_params(task.template, task.entry_point))
        return f"\n\n## Answer\n```python\n{task.imports.strip()}\n\n\ndef {task.entry_point}({params}):\n"
    if choice == "idea":
        return "\n\n## Answer\n{{The idea of the algorithm is to"
    return choice


def operators(args: argparse.Namespace) -> None:
    from optiforge.platform.executors import make_executor

    task = get_task(args.task)
    sampling = json.loads(args.sampling)
    rows = []
    with make_executor("local", workers=2) as sandbox, Progress(console=console) as bar:
        job = bar.add_task("operators", total=len(args.llm) * len(args.operators) * args.prompts)
        for spec in args.llm:  # several models side by side: same pool, prompts' seeds and sandbox
            llm = _llm(spec)
            if args.answer_prefix:
                try:
                    llm = AnswerPrefixed(llm, answer_prefix(task, args.answer_prefix))
                except ValueError as exc:
                    print(f"error: --answer-prefix with {spec}: {exc}", file=sys.stderr)
                    raise SystemExit(2) from None
                spec += f" + answer prefix {args.answer_prefix!r}"
            for op in args.operators:
                row = _operator_yield(task, llm, op, sandbox, args, sampling, lambda: bar.advance(job))
                rows.append({"llm": spec, **row})
                print(json.dumps(rows[-1]), flush=True)  # one line per operator: a long run keeps its rows
    table = Table("LLM", "operator", "samples", "valid", "new", "new, with constants", "better than parent",
                  "s / prompt", title=f"{args.task}, G={args.samples}")
    for r in rows:
        table.add_row(r["llm"], r["operator"], str(r["samples"]), f"{r['valid']:.2f}", f"{r['new']:.2f}",
                      f"{r['new_with_constants']:.2f}", f"{r['better_than_parent']:.2f}",
                      f"{r['s_per_prompt']:.1f}")
    console.print(table)


def _operator_yield(task, llm, op: str, sandbox, args: argparse.Namespace, sampling: dict,
                    advance) -> dict:
    """Valid / new / new-with-constants / better-than-parent rates of one operator of one LLM."""
    cfg = EvolutionConfig(samples_per_prompt=args.samples, operator_weights={op: 1.0},
                          max_new_tokens=args.max_new_tokens, answer_format=args.answer_format,
                          operator_sampling={k: v for k, v in sampling.items() if k == op})
    agent = EvolutionAgent(task, llm, cfg, seed=args.seed)
    seeds = agent.propose()
    agent.observe(seeds, sandbox.evaluate(task, [p.code for p in seeds.programs], "train"))
    for extra in args.pool:  # optional extra pool programs (files), to give examples
        code = Path(extra).read_text()
        ev = sandbox.evaluate(task, [code], "train")[0]
        if ev.valid:
            agent.population.add(PoolEntry(code_hash(code), code, "extra", ev.score, "seed", [], 0))
    seen = {e.hash for e in agent.population.ranked()}
    n = valid = new = tunable = better = 0
    why_invalid: dict[str, int] = {}
    t0 = time.perf_counter()
    for _ in range(args.prompts):
        p = agent.propose()
        todo = [x for x in p.programs if x.code is not None]
        evs = dict(zip([id(x) for x in todo],
                       sandbox.evaluate(task, [x.code for x in todo], "train"), strict=True))
        for x in p.programs:
            n += 1
            ev = evs.get(id(x))
            if ev is None or not ev.valid:
                why = (x.error if ev is None else ev.error) or "invalid"
                key = why.split(":")[0][:40]
                why_invalid[key] = why_invalid.get(key, 0) + 1
                continue
            valid += 1
            if x.hash in seen or any(scores_equal(ev.score, s) for s in p.parent_scores):
                continue
            seen.add(x.hash)
            new += 1
            tunable += bool(find_constants(x.code, 1))
            # Initialization from scratch shows no parent: it must beat the baseline seed.
            reference = p.parent_scores or [p.baseline_score if p.baseline_score is not None else np.inf]
            better += ev.score < min(reference)
            if args.show_new:
                console.print(f"[bold]new ({op}, train {ev.score:.3f}):[/bold]\n{x.code}")
        # The round is not observed: every prompt sees the same seeded pool.
        advance()
    return {"operator": op, "samples": n, "valid": valid / n, "new": new / n,
            "new_with_constants": tunable / n, "better_than_parent": better / n,
            "s_per_prompt": (time.perf_counter() - t0) / args.prompts, "why_invalid": why_invalid}


def _tune_seeds(task_name: str, seed: int, budget: int) -> dict:
    """The control: the tune operator on each seed alone (no LLM)."""
    from optiforge.platform.campaigns.tune import tune_constants
    from optiforge.platform.executors import make_executor
    from optiforge.platform.store import Store

    task = get_task(task_name)
    store = Store()
    best_code, best = None, None
    with make_executor("local", workers=2) as sandbox:
        for name, code in task.seeds.items():
            if not find_constants(code, 1):
                console.print(f"  seed {name}: no numeric constants, nothing to tune")
                continue
            ev = sandbox.evaluate(task, [code], "train")[0]
            parent = PoolEntry(code_hash(code), code, name, ev.score, "seed", [], 0)
            r = tune_constants(store, sandbox, task, TuneRequest(parent, budget, 4, 6, seed), "local")
            if r.evaluation is not None and (best is None or r.evaluation.score < best):
                best_code, best = r.code, r.evaluation.score
        if best_code is None:
            return {"best_operator": "seed", "best_test": None, "discovered": False}
        test = sandbox.evaluate(task, [best_code, task.seeds[task.baseline]], "test")
    return {"best_operator": "tune", "best_test": test[0].score, "baseline_test": test[1].score,
            "discovered": test[0].score < test[1].score}


# Best fit with one added weight or threshold: the edits a 135M model makes (docs/benchmarks/rl.md).
SMALL_EDITS = {
    "gap penalty": "    r = bins - item\n    return -r - 3.0 * ((r > 0) & (r < 3))",
    "near-fit bonus": "    r = bins - item\n    return -r + 0.5 * (r < item) * (r > 0)",
    "weighted free space": "    return -(bins - item) + 1.5 * bins",
    "squared slack + size": "    return -(bins - item) ** 2 + 0.1 * bins",
    "exact-fit bonus": "    r = bins - item\n    return -r + 10.0 * (r < 1.0)",
}


def tune(args: argparse.Namespace) -> None:
    from optiforge.platform.campaigns.tune import tune_constants
    from optiforge.platform.executors import make_executor
    from optiforge.platform.store import Store

    os.environ.setdefault("OPTIFORGE_HOME", tempfile.mkdtemp(prefix="optiforge-tune-"))
    task = get_task("binpacking")
    store = Store()
    table = Table("program", "constants", "train before", "train after", "test before", "test after",
                  "best fit test", "evals", "s", title=f"tune alone, budget {args.budget}")
    rows = []
    with make_executor("local", workers=2) as sandbox:
        base_test = sandbox.evaluate(task, [task.seeds[task.baseline]], "test")[0].score
        for name, body in SMALL_EDITS.items():
            code = f"import numpy as np\n\n\ndef priority(item, bins):\n{body}\n"
            ev = sandbox.evaluate(task, [code], "train")[0]
            parent = PoolEntry(code_hash(code), code, name, ev.score, "tweak", [], 0)
            t0 = time.perf_counter()
            r = tune_constants(store, sandbox, task, TuneRequest(parent, args.budget, 4, 6, args.seed), "local")
            secs = time.perf_counter() - t0
            child = r.code or code
            tests = sandbox.evaluate(task, [code, child], "test")
            row = {"program": name, "constants": r.parent_constants, "tuned": r.constants,
                   "train_before": ev.score, "train_after": r.evaluation.score if r.evaluation else ev.score,
                   "test_before": tests[0].score, "test_after": tests[1].score, "best_fit_test": base_test,
                   "evaluations": r.evaluations, "seconds": secs}
            rows.append(row)
            table.add_row(name, str(len(r.parent_constants)), f"{row['train_before']:.3f}",
                          f"{row['train_after']:.3f}", f"{row['test_before']:.3f}", f"{row['test_after']:.3f}",
                          f"{base_test:.3f}", str(r.evaluations), f"{secs:.0f}")
    console.print(table)
    print(json.dumps(rows))


ARM_OPTIONS: dict[str, dict] = {
    "evolution": {"tune_every": 0},               # the LLM alone: no tune, no graft
    "evolution+tune": {"graft_terms": 0},         # + HOLLM on the constants the LLM wrote
    "evolution+tune+graft": {},                    # the default
    "graft-no-llm": {},                            # the default with an LLM that writes nothing
    "tune-seeds": {},
}


def campaigns(args: argparse.Namespace) -> None:
    from optiforge.platform.campaigns import create_campaign, run_campaign
    from optiforge.platform.campaigns.summary import NOT_LLM_WRITTEN
    from optiforge.platform.store import Store

    results = []
    for arm in args.arms:
        for seed in args.seeds:
            os.environ["OPTIFORGE_HOME"] = tempfile.mkdtemp(prefix="optiforge-discovery-")
            t0 = time.perf_counter()
            if arm == "tune-seeds":
                out = _tune_seeds(args.task, seed, args.tune_budget)
            else:
                store = Store()
                options = {"max_new_tokens": args.max_new_tokens, **ARM_OPTIONS[arm],
                           **json.loads(args.options)}
                llm, rl = args.llm, args.rl
                if arm == "graft-no-llm":
                    # The control: the same runner, rounds and budget, but an "LLM" that never
                    # writes code (each of its programs is stored as invalid).
                    silent = Path(os.environ["OPTIFORGE_HOME"]) / "silent.jsonl"
                    silent.write_text(json.dumps({"text": "(no program)"}) + "\n")
                    llm, rl = f"replay:{silent}", "none"
                cid = create_campaign(store, task=args.task, budget=args.budget, llm=llm,
                                      seed=seed, rl=rl, config={"agent_options": options})
                rep = run_campaign(store, cid, timeout=args.timeout)
                stored = store.candidates(cid)
                ops: dict[str, int] = {}
                for c in stored:
                    ops[c.operator] = ops.get(c.operator, 0) + 1
                llm_valid = [c for c in stored if c.operator not in NOT_LLM_WRITTEN and c.valid]
                out = {"best_operator": rep.best_operator, "best_train": rep.best_train_score,
                       "best_test": rep.best_test_score, "baseline_test": rep.baseline_test_score,
                       "discovered": rep.discovered, "candidates_by_operator": ops,
                       "llm_written": rep.generated, "llm_valid": len(llm_valid),
                       "timed_out": rep.timed_out, "test_by_dataset": rep.test_by_dataset,
                       "best_code": rep.best_code}
            out.update(arm=arm, seed=seed, wall_s=time.perf_counter() - t0)
            results.append(out)
            console.print(f"{arm} seed {seed}: best {out['best_operator']} test {out.get('best_test')} "
                          f"vs baseline {out.get('baseline_test')}  discovered={out['discovered']}  "
                          f"{out['wall_s']:.0f} s")
            print(json.dumps(out), flush=True)
    table = Table("arm", "runs", "discoveries", "mean test gap", "mean wall s")
    for arm in args.arms:
        rs = [r for r in results if r["arm"] == arm]
        gaps = [r["best_test"] - r["baseline_test"] for r in rs
                if r.get("best_test") is not None and r.get("baseline_test") is not None]
        table.add_row(arm, str(len(rs)), str(sum(r["discovered"] for r in rs)),
                      f"{np.mean(gaps):+.3f}" if gaps else "0 (seed)",
                      f"{np.mean([r['wall_s'] for r in rs]):.0f}")
    console.print(table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="part", required=True)
    o = sub.add_parser("operators")
    o.add_argument("--task", default="binpacking")
    o.add_argument("--llm", nargs="+", default=["smollm2"], help="one or more LLM specs, measured side by side")
    o.add_argument("--operators", nargs="+", default=list(OPERATORS))
    o.add_argument("--prompts", type=int, default=3)
    o.add_argument("--samples", type=int, default=4)
    o.add_argument("--max-new-tokens", type=int, default=320)
    o.add_argument("--seed", type=int, default=0)
    o.add_argument("--sampling", default="{}", help='per-operator overrides, e.g. {"tweak": {"temperature": 0.6}}')
    o.add_argument("--pool", nargs="*", default=[], help="extra pool programs (files)")
    o.add_argument("--show-new", action="store_true", help="print every new valid program")
    o.add_argument("--answer-format", choices=["calm", "code"], default="calm",
                   help="how prompts ask for the answer (EvolutionConfig.answer_format)")
    o.add_argument("--answer-prefix", default="",
                   help="base models only: begin the answer (code | idea | literal text); see AnswerPrefixed")
    t = sub.add_parser("tune")
    t.add_argument("--budget", type=int, default=24)
    t.add_argument("--seed", type=int, default=0)
    c = sub.add_parser("campaigns")
    c.add_argument("--task", default="binpacking")
    c.add_argument("--llm", default="smollm2")
    c.add_argument("--seeds", type=int, nargs="+", default=[0])
    c.add_argument("--budget", type=int, default=16)
    c.add_argument("--timeout", type=float, default=None,
                   help="seconds of wall clock per campaign (an equal-time comparison: give a "
                        "budget it cannot spend, e.g. --budget 10000 --timeout 900)")
    c.add_argument("--arms", nargs="+", choices=list(ARM_OPTIONS),
                   default=["evolution", "evolution+tune+graft", "graft-no-llm", "tune-seeds"])
    c.add_argument("--rl", default="none")
    c.add_argument("--max-new-tokens", type=int, default=320)
    c.add_argument("--tune-budget", type=int, default=24)
    c.add_argument("--options", default="{}", help="extra agent options (JSON)")
    args = ap.parse_args()
    {"operators": operators, "tune": tune, "campaigns": campaigns}[args.part](args)


if __name__ == "__main__":
    main()
