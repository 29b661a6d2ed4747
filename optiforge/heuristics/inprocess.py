"""In-process evaluation of a heuristic program: TRUSTED DEBUGGING AND TESTS ONLY.

This runs ``program_source`` in the calling process with no isolation at all. Use it
for seeds, published heuristics and your own code. Untrusted programs (LLM output) must
go through the sandbox (:mod:`optiforge.platform.sandbox`), which runs ``solve`` in a
locked-down child and scores the returned solution here, in trusted code.
"""

from __future__ import annotations

import json
import time
import types
from collections.abc import Callable
from typing import Any

from optiforge.heuristics.base import HeuristicTask
from optiforge.heuristics.registry import get_task
from optiforge.types import Evaluation


def load_trusted_function(task: HeuristicTask, program_source: str) -> Callable[..., Any]:
    """Exec ``task.imports + program_source`` in a fresh module and return ``task.entry_point``.

    Raises
    ------
    TypeError
        If ``program_source`` is not a string.
    ValueError
        If the program does not define a callable ``task.entry_point``.
    """
    if not isinstance(program_source, str):
        raise TypeError(f"program_source: expected str, got {type(program_source).__name__}")
    module = types.ModuleType(f"optiforge_trusted_{task.name}")
    exec(compile(task.imports + "\n" + program_source, f"<{task.name} program>", "exec"), module.__dict__)
    fn = module.__dict__.get(task.entry_point)
    if not callable(fn):
        raise ValueError(f"program_source: does not define a function {task.entry_point!r}")
    return fn


def evaluate_in_process(task: HeuristicTask | str, program_source: str, split: str = "train") -> Evaluation:
    """Run and score a TRUSTED program in this process (no sandbox).

    Mirrors the sandbox pipeline: ``task.inputs(split)`` -> ``task.solve(fn, inputs)`` ->
    JSON round trip of the solution -> trusted ``task.score(split, solution)``. Errors raised
    by the program come back as an invalid :class:`~optiforge.types.Evaluation`.

    Parameters
    ----------
    task : HeuristicTask or str
        The task object or its registry name.
    program_source : str
        Python source defining ``task.entry_point`` (``task.imports`` are prepended).
    split : str
        ``"train"``, ``"validation"``, ``"test"`` (or a dataset name where the task allows it).

    Returns
    -------
    Evaluation
        ``runtime_s`` is the wall time of run + scoring.
    """
    if isinstance(task, str):
        task = get_task(task)
    if not isinstance(program_source, str):
        raise TypeError(f"program_source: expected str, got {type(program_source).__name__}")
    inputs = task.inputs(split)  # validates `split` before running anything
    start = time.perf_counter()
    try:
        fn = load_trusted_function(task, program_source)
        solution = json.loads(json.dumps(task.solve(fn, inputs)))
    except Exception as exc:  # any failure of the program makes it invalid, never a crash
        return Evaluation.invalid(f"{type(exc).__name__}: {exc}", runtime_s=time.perf_counter() - start)
    ev = task.score(split, solution)
    ev.runtime_s = time.perf_counter() - start
    return ev
