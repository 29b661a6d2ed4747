"""Run a routing method on a set of instances and tabulate it as PIP does.

Methods (one table, :data:`METHODS`, owns the names):

* ``greedy-l`` / ``greedy-c``: PIP's greedy rules (nearest node; earliest window end or smallest
  draft), with no feasibility mask and no backtracking: every tour is completed and validated;
* ``lmask-greedy-c``: greedy-C as the chooser of the LazyMask decoder (lookahead 2, budget R);
* ``pyvrp`` (TSPTW) and ``cpsat``: the reference solvers, one instance at a time;
* ``program:FILE``: a ``score_nodes`` heuristic (the ``tsptw`` / ``tspdl`` task's signature)
  inside LazyMask, run **in this process** (it is the user's code; LLM output belongs in a
  sandboxed campaign);
* ``lmask:MODEL`` / ``pip:MODEL``: a trained policy (:mod:`optiforge.heuristics.routing.policy`)
  with LazyMask, or with one-step masking and no backtracking.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optiforge.heuristics.routing import lazymask as lm
from optiforge.heuristics.routing.instances import RoutingInstances
from optiforge.heuristics.routing.task import TSPDLTask, TSPTWTask
from optiforge.heuristics.routing.validate import TourCheck, check_tours

Progress = Callable[[int, int], None]

METHODS = ("greedy-l", "greedy-c", "lmask-greedy-c", "pyvrp", "cpsat", "program:FILE",
           "lmask:MODEL", "pip:MODEL")


@dataclass(frozen=True)
class MethodRun:
    """One method's samples over the instances and its total wall time."""

    method: str
    checks: list[TourCheck]
    time_s: float
    proven_infeasible: np.ndarray | None = None


def _greedy(instances: RoutingInstances, chooser: lm.Chooser) -> list[np.ndarray]:
    # PIP's greedy baselines: no masks, every tour completed and judged by the validator.
    return [lm.decode(instances, chooser, lookahead=0, budget=0, relax_on_budget=True).tours]


def program_chooser(instances: RoutingInstances, fn: Callable[..., object]) -> lm.Chooser:
    """Wrap a ``score_nodes`` heuristic (the tasks' signature) as a LazyMask chooser."""
    task = TSPTWTask() if instances.problem == "tsptw" else TSPDLTask()
    return task.chooser(instances, fn)


def run_method(instances: RoutingInstances, method: str, *, budget: float | None = 600,
               time_limit_s: float = 2.0, program: Callable[..., object] | None = None,
               progress: Progress | None = None, device: str | None = None) -> MethodRun:
    """Run ``method`` (see :data:`METHODS`) on every instance.

    Parameters
    ----------
    instances : RoutingInstances
        The test instances.
    method : str
        A method name; ``program:...`` needs ``program``.
    budget : float or None
        LazyMask's backtracking budget ``R`` at test time (LMask's evaluation default: 600).
    time_limit_s : float
        Per-instance limit of the reference solvers.
    program : callable, optional
        The ``score_nodes`` function of a ``program:`` method.
    progress : callable, optional
        ``progress(done, total)`` after each instance (reference solvers) or batch.
    device : str, optional
        Torch device of a trained policy.

    Raises
    ------
    ValueError
        For an unknown method, or ``pyvrp`` on TSPDL instances.
    """
    started = time.perf_counter()
    proven = None
    total = instances.size
    if method in ("greedy-l", "greedy-c"):
        chooser = lm.nearest_chooser(instances) if method == "greedy-l" else lm.constraint_chooser(instances)
        tours = _greedy(instances, chooser)
    elif method == "lmask-greedy-c" or method.startswith("program:"):
        if method.startswith("program:"):
            if program is None:
                raise ValueError("program: a program: method needs the loaded function")
            chooser = program_chooser(instances, program)
        else:
            chooser = lm.constraint_chooser(instances)
        result = lm.decode(instances, chooser, lookahead=2, budget=budget)
        tours, proven = [result.tours], result.proven_infeasible
    elif method in ("pyvrp", "cpsat"):
        from optiforge.heuristics.routing.reference import (
            INFEASIBLE,
            cpsat_solve,
            pyvrp_solve,
            tours_of,
        )

        if method == "pyvrp" and instances.problem != "tsptw":
            raise ValueError("method: pyvrp has no draft limits; use cpsat for tspdl")
        results = []
        hints = _greedy(instances, lm.constraint_chooser(instances))[0] if method == "cpsat" else None
        for b in range(total):
            if method == "pyvrp":
                results.append(pyvrp_solve(instances, b, time_limit_s=time_limit_s))
            else:
                results.append(cpsat_solve(instances, b, time_limit_s=time_limit_s, hint=hints[b]))
            if progress is not None:
                progress(b + 1, total)
        tours = [tours_of(results, instances.n)]
        proven = np.array([r.status == INFEASIBLE for r in results])
    elif method.startswith(("lmask:", "pip:")):
        from optiforge.heuristics.routing.policy import evaluate_policy

        kind, _, path = method.partition(":")
        tours, proven = evaluate_policy(Path(path), instances, backtracking=kind == "lmask",
                                        budget=budget, device=device)
    else:
        raise ValueError(f"method: unknown method {method!r}; use one of {', '.join(METHODS)}")
    if progress is not None:
        progress(total, total)
    elapsed = time.perf_counter() - started
    return MethodRun(method, [check_tours(instances, t) for t in tours], elapsed, proven)
