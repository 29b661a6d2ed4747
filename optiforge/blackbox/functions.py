"""Synthetic benchmark functions as :class:`BlackboxTask` objects (all minimised).

Definitions follow the SFU Virtual Library of Simulation Experiments (Surjanovic & Bingham)
and BoTorch's ``botorch.test_functions.synthetic``; bounds and optimal values are the ones
listed in ``research/hollm_blackbox.md`` §4. Rosenbrock uses ``[-2.048, 2.048]^d``, the bounds
of HOLLM's synthetic benchmark script (BoTorch's default is ``[-5, 10]^d``).

Task names: ``branin``, ``hartmann-3``, ``hartmann-6`` and ``<family>-<d>`` for the
dimension-free families (``ackley-20``, ``levy-10``, ``rastrigin-10``, ``rosenbrock-8``,
``michalewicz-10``, ``styblinski-tang-10``); a bare family name uses its default dimension.

References
----------
.. [1] S. Surjanovic and D. Bingham, "Virtual Library of Simulation Experiments: Test
   Functions and Datasets", https://www.sfu.ca/~ssurjano/.
.. [2] M. Balandat et al., "BoTorch: A Framework for Efficient Monte-Carlo Bayesian
   Optimization", NeurIPS 2020.
.. [3] N. Hansen, S. Finck, R. Ros, A. Auger, "Real-Parameter Black-Box Optimization
   Benchmarking 2009: Noiseless Functions Definitions", INRIA RR-6829 (random optimum
   locations, used by :func:`shifted`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from optiforge.blackbox.space import FloatParam, Space
from optiforge.validation import UnknownTaskError


@dataclass(frozen=True)
class BlackboxTask:
    """A black-box problem: a :class:`Space` and an objective to **minimise**.

    Attributes
    ----------
    name : str
        Registry name, e.g. ``"ackley-20"``.
    space : Space
        Parameters ``x1..xd`` with the function's box bounds.
    fn : callable
        ``fn(x: np.ndarray of shape (d,)) -> float`` on raw (not normalised) coordinates.
    optimum : float or None
        The known global minimum value (``None`` where no closed form is known).
    argmin : tuple of float or None
        One minimiser, when known.
    """

    name: str
    space: Space
    fn: Callable[[np.ndarray], float]
    optimum: float | None = None
    argmin: tuple[float, ...] | None = None
    description: str = ""

    @property
    def dim(self) -> int:
        return self.space.dim

    def __call__(self, params: Mapping[str, Any]) -> float:
        """Evaluate at a parameter assignment (validated against the space)."""
        clean = self.space.validate(params)
        return float(self.fn(np.array([clean[n] for n in self.space.names], dtype=float)))

    def evaluate_array(self, x: np.ndarray) -> float:
        """Evaluate at raw coordinates ``x`` (shape ``(d,)``)."""
        return float(self.fn(np.asarray(x, dtype=float)))

    def regret(self, value: float) -> float | None:
        """``value - optimum`` (``None`` if the optimum is unknown)."""
        return None if self.optimum is None else value - self.optimum


# ---------------------------------------------------------------------------- functions
def branin(x: np.ndarray) -> float:
    x1, x2 = x
    b, c, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    return float((x2 - b * x1**2 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10)


_H3_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
_H3_P = 1e-4 * np.array([[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]])
_H6_A = np.array([
    [10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
    [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14],
])
_H6_P = 1e-4 * np.array([
    [1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
    [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381],
])
_H_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])


def hartmann(x: np.ndarray) -> float:
    A, P = (_H3_A, _H3_P) if x.shape[0] == 3 else (_H6_A, _H6_P)
    return float(-np.sum(_H_ALPHA * np.exp(-np.sum(A * (x[None, :] - P) ** 2, axis=1))))


def ackley(x: np.ndarray) -> float:
    d = x.shape[0]
    return float(
        -20 * math.exp(-0.2 * math.sqrt(np.sum(x**2) / d))
        - math.exp(np.sum(np.cos(2 * math.pi * x)) / d) + 20 + math.e
    )


def levy(x: np.ndarray) -> float:
    w = 1 + (x - 1) / 4
    head = math.sin(math.pi * w[0]) ** 2
    mid = np.sum((w[:-1] - 1) ** 2 * (1 + 10 * np.sin(math.pi * w[:-1] + 1) ** 2))
    tail = (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2)
    return float(head + mid + tail)


def rastrigin(x: np.ndarray) -> float:
    return float(10 * x.shape[0] + np.sum(x**2 - 10 * np.cos(2 * math.pi * x)))


def rosenbrock(x: np.ndarray) -> float:
    return float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (x[:-1] - 1) ** 2))


def michalewicz(x: np.ndarray, m: int = 10) -> float:
    i = np.arange(1, x.shape[0] + 1)
    return float(-np.sum(np.sin(x) * np.sin(i * x**2 / math.pi) ** (2 * m)))


def styblinski_tang(x: np.ndarray) -> float:
    return float(0.5 * np.sum(x**4 - 16 * x**2 + 5 * x))


# ---------------------------------------------------------------------------- registry
_MICHALEWICZ_OPT = {2: -1.8013034, 5: -4.687658, 10: -9.66015}


@dataclass(frozen=True)
class _Family:
    fn: Callable[[np.ndarray], float]
    low: float
    high: float
    default_dim: int
    optimum: Callable[[int], float | None]
    argmin: Callable[[int], tuple[float, ...] | None]
    description: str


_FAMILIES: dict[str, _Family] = {
    "ackley": _Family(ackley, -32.768, 32.768, 20, lambda d: 0.0, lambda d: (0.0,) * d,
                      "Ackley: many shallow local minima around one deep global minimum"),
    "levy": _Family(levy, -10.0, 10.0, 10, lambda d: 0.0, lambda d: (1.0,) * d,
                    "Levy: multimodal with a rugged landscape"),
    "rastrigin": _Family(rastrigin, -5.12, 5.12, 10, lambda d: 0.0, lambda d: (0.0,) * d,
                         "Rastrigin: a regular lattice of local minima"),
    "rosenbrock": _Family(rosenbrock, -2.048, 2.048, 8, lambda d: 0.0, lambda d: (1.0,) * d,
                          "Rosenbrock: a narrow curved valley"),
    "michalewicz": _Family(michalewicz, 0.0, math.pi, 10, lambda d: _MICHALEWICZ_OPT.get(d),
                           lambda d: None, "Michalewicz: steep ridges and valleys (m = 10)"),
    "styblinski-tang": _Family(styblinski_tang, -5.0, 5.0, 10, lambda d: -39.16616570377142 * d,
                               lambda d: (-2.903534027771177,) * d,
                               "Styblinski-Tang: separable, 2^d local minima"),
}

_FIXED = {
    "branin": ([(-5.0, 10.0), (0.0, 15.0)], branin, 0.39788735772973816, (math.pi, 2.275),
               "Branin-Hoo: three global minima in 2-D"),
    "hartmann-3": ([(0.0, 1.0)] * 3, hartmann, -3.86278214782076,
                   (0.114614, 0.555649, 0.852547), "Hartmann 3-D: four local minima"),
    "hartmann-6": ([(0.0, 1.0)] * 6, hartmann, -3.32236801141551,
                   (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573),
                   "Hartmann 6-D: six local minima"),
}

_NAME = re.compile(r"^(?P<family>[a-z]+(?:-tang)?)(?:-(?P<dim>\d+))?$")


def _box_space(bounds: list[tuple[float, float]]) -> Space:
    return Space([FloatParam(f"x{i + 1}", lo, hi) for i, (lo, hi) in enumerate(bounds)])


def get_blackbox_task(name: str) -> BlackboxTask:
    """Look up a benchmark task by name (``"ackley-20"``, ``"branin"``, ``"hartmann-6"``...).

    ``"<name>@shift<N>"`` is the task with its minimiser moved, instance ``N`` (:func:`shifted`).

    Raises
    ------
    UnknownTaskError
        A ``ValueError`` naming ``task``, when no task has that name.
    ValueError
        Naming ``task`` when the dimension or the ``@shift`` instance is invalid.
    """
    if not isinstance(name, str):
        raise TypeError(f"task: expected a string, got {type(name).__name__}")
    key = name.strip().lower().replace("_", "-")
    base, at, instance = key.partition("@shift")
    if at:
        if not instance.isdecimal():  # int() reads these; isdigit() also passes "³", which it cannot
            raise ValueError(f"task: {name!r}: '@shift' takes an instance number, e.g. levy-10@shift3")
        return shifted(get_blackbox_task(base), int(instance))
    if key == "hartmann":
        key = "hartmann-6"
    if key in _FIXED:
        bounds, fn, opt, arg, desc = _FIXED[key]
        return BlackboxTask(key, _box_space(bounds), fn, opt, arg, desc)
    m = _NAME.match(key)
    if m is None or m.group("family") not in _FAMILIES:
        raise UnknownTaskError(f"task: unknown black-box task {name!r}; known: "
                               f"{', '.join(blackbox_task_names())} (families take any dimension, e.g. ackley-5)")
    fam = _FAMILIES[m.group("family")]
    d = int(m.group("dim")) if m.group("dim") else fam.default_dim
    if not 2 <= d <= 1000:
        raise ValueError(f"task: dimension of {name!r} must be between 2 and 1000, got {d}")
    return BlackboxTask(f"{m.group('family')}-{d}", _box_space([(fam.low, fam.high)] * d), fam.fn,
                        fam.optimum(d), fam.argmin(d), fam.description)


def blackbox_task_names() -> list[str]:
    """Canonical benchmark task names (families also accept other dimensions)."""
    return [*_FIXED, *(f"{f}-{fam.default_dim}" for f, fam in _FAMILIES.items())]


def _moved(fn: Callable[[np.ndarray], float], offset: np.ndarray, x: np.ndarray) -> float:
    return fn(x - offset)


def shifted(task: BlackboxTask, instance: int) -> BlackboxTask:
    """The same function with its minimiser moved to a random point of the box.

    The synthetic functions put their minimiser at a round place: the middle of the box
    (Ackley, Rastrigin), or 0.55 (Levy) and 0.74 (Rosenbrock) of each coordinate's range, the
    same in every coordinate. An optimiser with a prior for such places (a language model
    writing ``0.500``, a design that samples the centre) can look good for that reason alone.
    BBOB draws each instance's optimum at random for this reason [3]_; so does this function.

    The new minimiser ``x_opt`` is drawn uniformly from the middle 80 % of each coordinate's
    range (BBOB's ``[-4, 4]`` in ``[-5, 5]``), by ``instance``. The task evaluates
    ``f(x - x_opt + x*)``: the landscape is moved, not changed, and keeps its optimum value.
    Beyond the original box the function's own formula goes on; for Hartmann, whose bumps
    are all inside ``[0, 1]^d``, that part of the box is flat.

    Parameters
    ----------
    task : BlackboxTask
        A task with a known minimiser (``argmin``) and a box of float parameters.
    instance : int
        Seed of the new minimiser's location (``>= 0``); the same instance gives the same task.

    Returns
    -------
    BlackboxTask
        Named ``"<name>@shift<instance>"``, with the same space and optimum, and the new argmin.

    Raises
    ------
    TypeError
        When ``task`` is not a :class:`BlackboxTask` or ``instance`` not an integer.
    ValueError
        When ``task`` has no known minimiser or other than float parameters, or
        ``instance`` is negative.
    """
    if not isinstance(task, BlackboxTask):
        raise TypeError(f"task: expected a BlackboxTask, got {type(task).__name__}")
    if isinstance(instance, bool) or not isinstance(instance, (int, np.integer)):
        raise TypeError(f"instance: expected an integer, got {type(instance).__name__}")
    if instance < 0:
        raise ValueError(f"instance: expected an integer >= 0, got {instance}")
    if task.argmin is None:
        raise ValueError(f"task: {task.name!r} has no known minimiser to move")
    params = list(task.space.params.values())
    if not all(isinstance(p, FloatParam) for p in params):
        raise ValueError(f"task: {task.name!r} is not a box of float parameters")
    lo = np.array([p.low for p in params], dtype=float)
    hi = np.array([p.high for p in params], dtype=float)
    rng = np.random.default_rng([int(instance), task.dim])
    new_argmin = lo + (hi - lo) * rng.uniform(0.1, 0.9, size=task.dim)
    offset = new_argmin - np.asarray(task.argmin, dtype=float)
    return replace(
        task,
        name=f"{task.name}@shift{int(instance)}",
        fn=partial(_moved, task.fn, offset),
        argmin=tuple(float(v) for v in new_argmin),
        description=f"{task.description} (minimiser moved, instance {int(instance)})",
    )
