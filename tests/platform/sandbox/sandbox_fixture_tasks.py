"""A small heuristic task registered for the sandbox tests (the real tasks live elsewhere).

Single-machine scheduling with total completion time: the program defines ``priority(p)`` and
jobs are processed in increasing priority. Shortest-processing-time first is optimal, so the
trusted score (percent gap to SPT) is 0 for SPT and > 0 for anything worse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from optiforge.heuristics import register_task
from optiforge.types import Evaluation

TASK = "sandbox_fixture_scheduling"

SPT = "def priority(p):\n    return p\n"
LPT = "def priority(p):\n    return -p\n"


def _total_completion(times: list[float], order: list[int]) -> float:
    elapsed, total = 0.0, 0.0
    for job in order:
        elapsed += times[job]
        total += elapsed
    return total


class SchedulingTask:
    name = TASK
    description = "Order jobs on one machine to minimise the total completion time."
    entry_point = "priority"
    template = 'def priority(p: float) -> float:\n    """Lower runs first."""\n    return p\n'
    imports = "import numpy as np\nimport math"
    seeds = {"spt": SPT}
    baseline = "spt"

    def __init__(self) -> None:
        self._instances = {split: self._make(seed) for split, seed in
                           (("train", 0), ("validation", 1), ("test", 2))}

    @staticmethod
    def _make(seed: int) -> list[list[float]]:
        rng = np.random.default_rng(seed)
        return [rng.uniform(1.0, 10.0, size=20).round(3).tolist() for _ in range(3)]

    def inputs(self, split: str) -> Any:
        return self._instances[split]

    def solve(self, fn: Callable[..., Any], inputs: Any) -> Any:
        return [sorted(range(len(times)), key=lambda j: float(fn(times[j]))) for times in inputs]

    def score(self, split: str, solution: Any) -> Evaluation:
        instances = self._instances[split]
        if not isinstance(solution, list) or len(solution) != len(instances):
            raise ValueError("expected one order per instance")
        gaps = []
        for times, order in zip(instances, solution, strict=True):
            if sorted(order) != list(range(len(times))):
                raise ValueError("an order is not a permutation of the jobs")
            best = _total_completion(times, sorted(range(len(times)), key=times.__getitem__))
            gaps.append(100.0 * (_total_completion(times, order) / best - 1.0))
        return Evaluation(valid=True, score=float(np.mean(gaps)), metrics={"max_gap": max(gaps)})


register_task(TASK, SchedulingTask)
