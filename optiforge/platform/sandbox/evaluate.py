"""Sandboxed run + trusted scoring: programs in, :class:`~optiforge.types.Evaluation` out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from optiforge.heuristics import HeuristicTask, get_task
from optiforge.platform.sandbox.limits import SandboxResult
from optiforge.platform.sandbox.sandbox import Sandbox
from optiforge.types import Evaluation


def evaluate_programs(sandbox: Sandbox, task: str | HeuristicTask, programs: Sequence[str],
                      split: str = "train") -> list[Evaluation]:
    """Run each program in the sandbox and score its solution with the task's trusted scorer.

    Parameters
    ----------
    sandbox : Sandbox
        Where the untrusted programs run.
    task : str or HeuristicTask
        The task (or its registry name).
    programs : sequence of str
        Program sources, each defining ``task.entry_point``.
    split : str
        Which instance set to evaluate on: ``"train"``, ``"validation"``, ``"test"`` or any
        other split the task accepts.

    Returns
    -------
    list of Evaluation
        One per program, in order. A sandbox failure (exception, timeout, limit, bad output)
        or a scorer rejection gives ``valid=False`` with the reason in ``error`` -- never a
        score. ``runtime_s`` is the child's wall-clock time.
    """
    if not isinstance(sandbox, Sandbox):
        raise TypeError(f"sandbox: expected Sandbox, got {type(sandbox).__name__}")
    task_obj = get_task(task) if isinstance(task, str) else task
    if not isinstance(task_obj, HeuristicTask):
        raise TypeError(f"task: expected a task name or HeuristicTask, got {type(task).__name__}")
    if isinstance(programs, (str, bytes)) or not isinstance(programs, Sequence):
        raise TypeError("programs: expected a sequence of program sources")
    results = sandbox.run_many([(program, task_obj, split) for program in programs])
    return [score_result(task_obj, split, result) for result in results]


def score_result(task: HeuristicTask, split: str, result: SandboxResult) -> Evaluation:
    """Turn one :class:`SandboxResult` into an :class:`Evaluation` with the trusted scorer."""
    if not result.ok:
        return Evaluation.invalid(result.error or f"killed: {result.killed}", runtime_s=result.runtime_s)
    try:
        evaluation: Any = task.score(split, result.solution)
    except Exception as exc:  # noqa: BLE001 - a malformed solution must never score
        return Evaluation.invalid(f"invalid solution: {type(exc).__name__}: {str(exc)[:500]}",
                                  runtime_s=result.runtime_s)
    if not isinstance(evaluation, Evaluation):
        return Evaluation.invalid(f"scorer returned {type(evaluation).__name__}, not Evaluation",
                                  runtime_s=result.runtime_s)
    evaluation.runtime_s = result.runtime_s
    return evaluation
