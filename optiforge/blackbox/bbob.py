"""COCO/BBOB problems (the 24 noiseless ``bbob`` functions) as :class:`BlackboxTask` objects.

The functions come from the official COCO implementation (``coco-experiment``, module
``cocoex``; the ``bench`` extra); nothing is re-implemented here. Each task's ``optimum`` is
the instance's ``f_opt`` (the value at COCO's known minimiser), so ``task.regret(f)`` is the
``f - f_opt`` that COCO's targets are defined on. The search box is COCO's ``[-5, 5]^d``.

Function groups (COCO's names): separable f1-f5, low or moderate conditioning f6-f9, high
conditioning and unimodal f10-f14, multimodal with adequate global structure f15-f19,
multimodal with weak global structure f20-f24.

References
----------
.. [1] N. Hansen, A. Auger, R. Ros, O. Mersmann, T. Tusar, D. Brockhoff, "COCO: A Platform for
   Comparing Continuous Optimizers in a Black-Box Setting", Optimization Methods and Software
   36(1), 2021.
.. [2] N. Hansen, S. Finck, R. Ros, A. Auger, "Real-Parameter Black-Box Optimization
   Benchmarking 2009: Noiseless Functions Definitions", INRIA RR-6829.
"""

from __future__ import annotations

import os
import tempfile
import threading
from typing import Any

import numpy as np

from optiforge.blackbox.functions import BlackboxTask, _box_space
from optiforge.extras import missing_extra

GROUPS: dict[str, tuple[int, ...]] = {
    "separable": (1, 2, 3, 4, 5),
    "moderate": (6, 7, 8, 9),
    "ill-conditioned": (10, 11, 12, 13, 14),
    "multimodal": (15, 16, 17, 18, 19),
    "weakly-structured": (20, 21, 22, 23, 24),
}
"""COCO's five function groups of the ``bbob`` suite."""

_LOCK = threading.Lock()  # COCO writes the minimiser to a file in the working directory


def int_ranges(text: str) -> list[int]:
    """``"1-5,15,20-24"`` → ``[1, 2, 3, 4, 5, 15, 20, ...]`` (dimensions, functions, instances).

    Raises
    ------
    ValueError
        On a part that is not an integer or an ``a-b`` range.
    """
    out: list[int] = []
    for part in str(text).split(","):
        lo, _, hi = part.strip().partition("-")
        try:
            out.extend(range(int(lo), int(hi or lo) + 1))
        except ValueError:
            raise ValueError(f"expected integers or ranges like 1-5,15, got {text!r}") from None
    return out


def _import_cocoex() -> Any:
    try:
        import cocoex
    except ImportError as exc:
        raise missing_extra("bench", "the COCO/BBOB benchmark", "cocoex") from exc
    return cocoex


def _check_int(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: expected an integer, got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name}: must be between {lo} and {hi}, got {value}")
    return int(value)


def _optimum(problem: Any) -> float:
    """``f_opt`` of a COCO problem: its value at the minimiser COCO reports."""
    cwd = os.getcwd()
    with _LOCK, tempfile.TemporaryDirectory() as tmp:
        try:
            os.chdir(tmp)
            problem._best_parameter("print")
            xopt = np.atleast_1d(np.loadtxt("._bbob_problem_best_parameter.txt"))
        finally:
            os.chdir(cwd)
    return float(problem(xopt))


def bbob_task(function: int, dimension: int, instance: int = 1) -> BlackboxTask:
    """One BBOB problem as a task (minimise; ``optimum`` is the instance's ``f_opt``).

    Parameters
    ----------
    function : int
        BBOB function id, 1..24.
    dimension : int
        One of COCO's dimensions 2, 3, 5, 10, 20, 40.
    instance : int
        Instance id (COCO's 2009+ instances; 1..15 are the classic ones).

    Returns
    -------
    BlackboxTask
        Named ``bbob-f<function>-i<instance>-d<dimension>``.
    """
    function = _check_int("function", function, 1, 24)
    instance = _check_int("instance", instance, 1, 1000)
    dimension = _check_int("dimension", dimension, 2, 40)
    if dimension not in (2, 3, 5, 10, 20, 40):
        raise ValueError(f"dimension: COCO's bbob suite has 2, 3, 5, 10, 20, 40; got {dimension}")
    cocoex = _import_cocoex()
    suite = cocoex.Suite("bbob", f"instances: {instance}",
                         f"function_indices: {function} dimensions: {dimension}")
    problem = suite.get_problem_by_function_dimension_instance(function, dimension, instance)
    fopt = _optimum(problem)
    # The task holds the suite too: COCO frees a problem when its suite is collected.
    holder = (suite, problem)

    def fn(x: np.ndarray) -> float:
        return float(holder[1](np.asarray(x, dtype=float)))

    lo, hi = problem.lower_bounds, problem.upper_bounds
    return BlackboxTask(f"bbob-f{function}-i{instance}-d{dimension}",
                        _box_space(list(zip(lo.tolist(), hi.tolist(), strict=True))), fn, fopt,
                        None, f"COCO bbob f{function} ({problem.name})")


def function_group(function: int) -> str:
    """COCO's group name of a BBOB function id."""
    for name, ids in GROUPS.items():
        if function in ids:
            return name
    raise ValueError(f"function: BBOB function ids are 1..24, got {function!r}")
