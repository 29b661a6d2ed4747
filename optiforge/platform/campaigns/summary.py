"""What ``campaign show`` and ``campaign export`` report, for either agent kind.

A program campaign's record is its candidates (with evaluations, LLM calls, adapters); a
black-box campaign's record is its study's trials. Both are read from the store only: no LLM,
sandbox or agent is built to show or export a campaign.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optiforge.agents.evolution import GRAFT_OPERATOR, TUNE_OPERATOR
from optiforge.platform.store import Campaign, CandidateOutline, Store

SEED_OPERATOR = "seed"
"""The operator of a task's seed heuristics: stored candidates no LLM wrote (not budget)."""
NOT_LLM_WRITTEN = (SEED_OPERATOR, TUNE_OPERATOR, GRAFT_OPERATOR)
"""Operators of candidates that no LLM wrote: they do not count against the budget."""
BASELINE_PREFIX = "baseline:"
"""The ``candidate_hash`` of the baseline's held-out evaluation (see ``ProgramCampaign.report``)."""
PROGRAM_FIELDS = ("round", "operator", "hash", "split", "valid", "score", "reward", "error",
                  "runtime_s")
TRIAL_FIELDS = ("id", "state", "value", "params")


ROUTING_TRAINING = "lmask-reinforce"
"""The agent name of an ``optiforge routing train`` campaign (LMask policy, REINFORCE)."""
SCHEDULING_TRAINING = "deft-es"
"""The agent name of an ``optiforge scheduling train`` campaign (DEFT / GATES, OpenAI-ES)."""
TRAINING_RUNS = {ROUTING_TRAINING: "optiforge routing train",
                 SCHEDULING_TRAINING: "optiforge scheduling train"}
"""Campaigns that train a policy instead of running an agent, and the command that resumes each.
Their record is their checkpoints; they share the store, ``campaign list`` and the dashboard."""


def _is_blackbox(config: dict[str, Any] | None) -> bool:
    """Whether a campaign drives a study, read from its stored config (a black-box campaign
    names its study there). Read from the record, not the agent registry, so that campaigns
    whose agent is no registered agent (training runs, an uninstalled plug-in) still show."""
    return isinstance(config, dict) and "study_id" in config


def campaign_summary(store: Store, campaign_id: str, owner: str | None = None,
                     history: bool = False) -> dict[str, Any]:
    """Everything ``campaign show`` reports, as a JSON-able dict (also its ``--json``).

    Parameters
    ----------
    store : Store
    campaign_id : str
    owner : str, optional
        When given, another owner's campaign is a :class:`NotFoundError`, like a missing one.
    history : bool
        Add ``"history"``, the best-so-far curve the dashboard draws (read from the same
        records, so it costs no second pass over the store).
    """
    c = store.get_campaign(campaign_id, owner=owner)
    head = {"id": c.id, "owner": c.owner, "name": c.name, "task": c.task, "agent": c.agent,
            "llm": c.llm, "status": c.status, "budget": c.budget, "seed": c.seed,
            "executor": c.executor, "config": c.config}
    if _is_blackbox(c.config):
        return {**head, **_blackbox_summary(store, c.config["study_id"], history)}
    return {**head, **_program_summary(store, campaign_id, history)}


def campaign_progress(store: Store, campaign: Campaign) -> int:
    """Budget spent so far, counted in the store: LLM-written programs or finished trials."""
    if _is_blackbox(campaign.config):
        return store.count_trials(campaign.config["study_id"], ("complete", "failed"))
    return store.count_candidates(campaign.id, exclude_operator=NOT_LLM_WRITTEN)


def llm_ancestor(store: Store, campaign_id: str, candidate: Any) -> str | None:
    """The operator of the nearest LLM-written program in ``candidate``'s lineage, or ``None``.

    ``candidate`` itself counts; a ``tune`` or ``graft`` child (no LLM wrote it) is traced back
    through its parents, as stored, until an LLM-written program or a seed. A seed and a chain
    of tunes and grafts of seeds have no LLM ancestry: the verdict must never credit the LLM
    with what graft + tune found alone.
    """
    frontier, seen = [candidate], {candidate.hash}
    while frontier:
        current = frontier.pop(0)
        if current.operator not in NOT_LLM_WRITTEN:
            return current.operator
        for parent_hash in current.parents:
            if parent_hash in seen:
                continue
            seen.add(parent_hash)
            parent = store.first_candidate_with_hash(campaign_id, parent_hash)
            if parent is not None:
                frontier.append(parent)
    return None


def best_so_far(values: Iterable[float | None], maximize: bool = False) -> list[float | None]:
    """The running best of ``values`` (``None`` = no value: failed, invalid or still running)."""
    out: list[float | None] = []
    best: float | None = None
    for v in values:
        if v is not None and (best is None or (v > best if maximize else v < best)):
            best = v
        out.append(best)
    return out


def _blackbox_summary(store: Store, study_id: str, history: bool = False) -> dict[str, Any]:
    trials = store.trials(study_id)
    done = [t for t in trials if t.state in ("complete", "failed")]
    complete = sorted((t for t in trials if t.state == "complete"), key=lambda t: t.value)
    out = {
        "study_id": study_id,
        "evaluations": len(done),
        "failed": sum(t.state == "failed" for t in trials),
        "running": sum(t.state in ("running", "waiting") for t in trials),
        "best": [{"id": t.number, "value": t.value, "params": t.params} for t in complete[:3]],
    }
    if history:  # black-box campaigns minimise; x counts evaluations, like the budget
        out["history"] = {"generated": list(range(1, len(done) + 1)),
                          "best": best_so_far(t.value for t in done), "collapse_rounds": []}
    return out


def _history(cands: list[CandidateOutline], collapse_rounds: list[int]) -> dict[str, Any]:
    """The best valid score after each stored candidate, against LLM-written programs so far
    (the seeds sit at 0), and where each collapse happened on that axis."""
    generated, after_round, n = [], {}, 0
    for x in cands:
        n += x.operator != SEED_OPERATOR
        generated.append(n)
        after_round[x.round] = n
    return {"generated": generated,
            "best": best_so_far(x.score if x.valid else None for x in cands),
            "collapse_rounds": [{"round": r, "generated": after_round.get(r)} for r in collapse_rounds]}


def _program_summary(store: Store, campaign_id: str, history: bool = False) -> dict[str, Any]:
    cands = store.candidate_outlines(campaign_id)
    generated = [x for x in cands if x.operator != SEED_OPERATOR]
    first: dict[str, int] = {}  # each program's first candidate number (what the pages link to)
    for x in reversed(cands):
        first[x.hash] = x.number
    by_op: dict[str, dict[str, int]] = {}
    rewards_by_round: dict[int, list[float]] = {}
    for x in generated:
        d = by_op.setdefault(x.operator, {"generated": 0, "valid": 0})
        d["generated"] += 1
        d["valid"] += int(bool(x.valid))
        if x.reward is not None:
            rewards_by_round.setdefault(x.round, []).append(x.reward)
    best = store.best_candidates(campaign_id, k=3)
    test_split = store.get_campaign(campaign_id).config.get("test_split", "test")
    tests = {e.candidate_hash: e for e in store.evaluations(campaign_id, split=test_split)}
    baseline = next(({"name": h[len(BASELINE_PREFIX):], "score": e.score, "valid": e.valid}
                     for h, e in tests.items() if h.startswith(BASELINE_PREFIX)), None)
    adapters = [{"name": a.name, "path": str(a.path), **a.meta}
                for a in store.artifacts(campaign_id, kind="adapter")]
    saved = store.latest_agent_state(campaign_id)
    state = saved[1].get("agent", {}) if saved else {}
    collapses = [int(r) for r in state.get("collapse_rounds", [])]
    out = {
        "rounds": store.rounds_done(campaign_id),
        "generated": len(generated),
        "llm_written": sum(x.operator not in NOT_LLM_WRITTEN for x in generated),  # what the budget counts
        "evaluations": len(cands),
        "valid_rate": (sum(bool(x.valid) for x in generated) / len(generated)) if generated else None,
        "operators": by_op,
        "best": [{"hash": b.hash, "number": first.get(b.hash), "score": b.score, "idea": b.idea, "operator": b.operator,
                  "round": b.round, "test_score": tests[b.hash].score if b.hash in tests else None,
                  "code": b.code} for b in best],
        "reward_trend": [{"round": r, "mean_reward": sum(v) / len(v)}
                         for r, v in sorted(rewards_by_round.items())],
        "rl_steps": len(adapters),
        "adapters": adapters,
        "checkpoints": [a.name for a in store.artifacts(campaign_id, kind="checkpoint")],  # training runs
        "test_split": test_split,
        "baseline_test": baseline,
        "collapse_rounds": collapses,
        "pool": [{**e, "number": first.get(e["hash"]),
                  "parent_numbers": [first.get(p) for p in e.get("parents", [])]}
                 for e in state.get("population", {}).get("entries", [])],
    }
    if history:
        out["history"] = _history(cands, collapses)
    return out


@dataclass
class ExportRecords:
    """The content of a campaign export; the CLI decides how and where to write it.

    Attributes
    ----------
    summary : dict
        :func:`campaign_summary`.
    best_files : list of (str, str)
        ``(file name, text)`` of the best candidates: ``best_<i>.py`` programs, or
        ``best_<i>.json`` points.
    fields : tuple of str
        Columns of ``rows`` (``evaluations.csv``).
    rows : list of dict
        Every evaluation (program candidates or trials), in order; ``evaluations.json``.
    adapter : Path or None
        The newest LoRA adapter version of an RL campaign.
    """

    summary: dict[str, Any]
    best_files: list[tuple[str, str]] = field(default_factory=list)
    fields: tuple[str, ...] = ()
    rows: list[dict[str, Any]] = field(default_factory=list)
    adapter: Path | None = None


def export_records(store: Store, campaign_id: str, top: int = 5) -> ExportRecords:
    """Everything ``campaign export`` writes, read from the store."""
    import json

    summary = campaign_summary(store, campaign_id)
    if _is_blackbox(summary["config"]):
        trials = store.trials(summary["study_id"])
        rows = [{"id": t.number, "state": t.state, "value": t.value, "params": t.params}
                for t in trials]
        best = sorted((t for t in trials if t.state == "complete"), key=lambda t: t.value)[:top]
        files = [(f"best_{i + 1}.json", json.dumps({"value": t.value, "params": t.params}, indent=2))
                 for i, t in enumerate(best)]
        return ExportRecords(summary, files, TRIAL_FIELDS, rows)
    files = []
    for i, b in enumerate(store.best_candidates(campaign_id, k=top)):
        header = (f'"""{summary["task"]} heuristic #{i + 1}: score {b.score:.4f} (train).\n\n'
                  f'{b.idea or ""}\n"""\n')
        files.append((f"best_{i + 1}.py", header + (b.code or "")))
    rows = [{k: getattr(x, k) for k in (*PROGRAM_FIELDS, "idea", "code", "parents", "metrics")}
            for x in store.candidates(campaign_id)]
    adapters = store.artifacts(campaign_id, kind="adapter")
    return ExportRecords(summary, files, PROGRAM_FIELDS, rows,
                         Path(adapters[-1].path) if adapters else None)
