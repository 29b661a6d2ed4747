"""The ``tune`` operator's inner loop: a stored HOLLM study over a program's constants.

The evolution agent says *what* to tune (:meth:`EvolutionAgent.tune_target`); this module
runs it with what only the platform has, the study store and the sandbox:

    constants  = find_constants(parent.code)          parsed, never run
    study      = create_study(box around them, agent="hollm")   stored like any study
    study.add_trial(parent's constants, parent's train score)   the point to beat
    repeat: study.ask(b) -> substitute -> evaluator.evaluate(task, codes, "train") -> tell

Every variant runs in the sandbox and is scored by the task's trusted scorer, so the study's
objective is exactly the score the pool ranks by. Nothing here executes a program. The best
variant, if it beats its parent, becomes the child the agent observes.

References
----------
van Stein, Bäck. "In-the-loop hyper-parameter optimization for LLM-based automated design
of heuristics" (LLaMEA-HPO), arXiv:2410.16309 (2024): the LLM writes the algorithm, an
optimiser sets its parameters. Here the optimiser is the platform's own HOLLM agent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from optiforge.agents.evolution import (
    GRAFT_OPERATOR,
    TUNE_OPERATOR,
    TuneRequest,
    find_constants,
    signed_values,
    space_point,
    substitute,
    tune_space,
)
from optiforge.agents.evolution.graft import graft, term_first
from optiforge.agents.protocols import ProgramEvaluator
from optiforge.platform.store import Store
from optiforge.platform.study import create_study
from optiforge.types import Evaluation

TUNE_AGENT_OPTIONS: dict[str, Any] = {"proposer": "gaussian", "predictor": "gp"}
"""HOLLM without an LLM: the gaussian proposer steps around the best points of each region
(the parent's constants are the first of them), which suits a local refinement; it was the
stronger LLM-free variant in docs/benchmarks/hollm.md."""


@dataclass
class TuneResult:
    """What a tune study found.

    ``code``/``evaluation``/``constants`` describe the best variant when it beats the parent
    on the train split, else they are ``None``; ``study_id`` is ``None`` when the parent has
    no constants (no study is made).
    """

    study_id: str | None
    evaluations: int = 0
    code: str | None = None
    evaluation: Evaluation | None = None
    constants: dict[str, float] = field(default_factory=dict)
    parent_constants: dict[str, float] = field(default_factory=dict)
    term: dict[str, Any] | None = None

    def record(self) -> dict[str, Any]:
        """What the child stores beside its metrics (so it can be looked at later)."""
        out = {"study_id": self.study_id, "evaluations": self.evaluations,
               "constants": self.constants, "parent_constants": self.parent_constants}
        if self.term is not None:
            out["term"] = self.term
        return out


def _finite(ev: Evaluation) -> bool:
    return ev.valid and ev.score is not None and math.isfinite(ev.score)


def tune_constants(store: Store, evaluator: ProgramEvaluator, task: Any, request: TuneRequest,
                   owner: str, label: str = "") -> TuneResult:
    """Tune ``request.parent``'s constants on the train split through a stored HOLLM study.

    Parameters
    ----------
    store : Store
        Where the study and its trials are stored.
    evaluator : ProgramEvaluator
        The sandbox (every variant runs there; its trusted train score is the objective).
    task : HeuristicTask
    request : TuneRequest
        From :meth:`~optiforge.agents.evolution.EvolutionAgent.tune_target`.
    owner, label : str
        The study's owner and a name prefix (e.g. the campaign id).

    Returns
    -------
    TuneResult
        The best variant only if it is strictly better than the parent on train.

    Notes
    -----
    With ``request.term`` the study tunes the parent with that term grafted on
    (:func:`~optiforge.agents.evolution.graft.graft`): the term's constants come first, the
    grafted program's own score is the study's first trial (one sandboxed evaluation of the
    budget), and a variant is kept only if it beats the parent without the term.
    """
    parent = request.parent
    code, start_score = parent.code, parent.score
    if request.term is not None:
        code = graft(parent.code, task, request.term)
        if code is None:
            return TuneResult(study_id=None, term=request.term.to_dict())
    constants = find_constants(code)
    if request.term is not None:
        constants = term_first(code, task.entry_point, constants)
    constants = constants[: request.max_constants]
    if not constants:
        return TuneResult(study_id=None)
    start = space_point(constants)
    term = None if request.term is None else request.term.to_dict()
    best = parent.score
    first: Evaluation | None = None
    if request.term is not None:
        # The grafted program as written: the study's first point, scored in the sandbox.
        first = evaluator.evaluate(task, [code], "train")[0]
        if not _finite(first):
            return TuneResult(study_id=None, evaluations=1, term=term)  # the term does not run here
        start_score = float(first.score)
    kind = TUNE_OPERATOR if request.term is None else GRAFT_OPERATOR
    study = create_study(tune_space(constants), agent="hollm",
                         agent_options={**TUNE_AGENT_OPTIONS, "budget": request.budget,
                                        "b": request.batch},
                         storage=store, seed=request.seed, owner=owner,
                         name=f"{label} {kind} {parent.hash[:12]}".strip())
    # The program's own constants, with its train score: the point every variant must beat.
    study.add_trial(start, start_score)
    result = TuneResult(study_id=study.id, evaluations=1,
                        parent_constants=signed_values(constants, start), term=term)
    if first is not None and start_score < best:
        best = start_score
        result.code, result.evaluation, result.constants = code, first, signed_values(constants, start)
    while result.evaluations < request.budget:
        trials = study.ask(min(request.batch, request.budget - result.evaluations))
        values = [signed_values(constants, t.params) for t in trials]
        variants = [substitute(code, constants, v) for v in values]
        evaluations = evaluator.evaluate(task, variants, "train")
        for trial, variant, value, ev in zip(trials, variants, values, evaluations, strict=True):
            if _finite(ev):
                study.tell(trial.id, float(ev.score))
                if ev.score < best:
                    best = float(ev.score)
                    result.code, result.evaluation, result.constants = variant, ev, value
            else:
                study.tell(trial.id, state="failed")
        result.evaluations += len(trials)
    return result
