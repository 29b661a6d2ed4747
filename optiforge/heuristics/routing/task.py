"""The evolvable routing tasks ``tsptw`` and ``tspdl``: an LLM-written node scorer inside LazyMask.

The program defines ``score_nodes(...)``, called at every step of the LazyMask decoder
(:mod:`optiforge.heuristics.routing.lazymask`) with the nodes the lookahead mask allows; the
decoder visits the highest-scoring one. Feasibility comes from the masks and the backtracking,
so an evolved heuristic only has to find *short* feasible tours. The decoder and the program
run in the sandbox; the tours come back and are validated and scored here, by trusted code.

Score (lower is better): the mean over instances of the validated tour length, where an
instance without a feasible tour (the budget ran out, or the tour breaks a constraint) costs
an upper bound on any tour's length (``sum_i max_j d_ij``) plus one per violated node; so any
feasible tour beats any infeasible one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from optiforge.heuristics.base import SPLITS
from optiforge.heuristics.routing.instances import RoutingInstances, fixed_set
from optiforge.heuristics.routing.lazymask import Chooser, Decision, decode
from optiforge.heuristics.routing.validate import check_tours
from optiforge.types import Evaluation

DECODE_BUDGET = 200
"""Backtracking budget R of the task's decoder (per instance)."""

_SPLITS = {"train": ("hard", 20, "validation", 32), "validation": ("hard", 50, "validation", 32),
           "test": ("hard", 50, "test", 128)}
"""split -> (hardness, n, fixed set, instances taken from its start)."""

IMPORTS = "import numpy as np\nimport math\n"

_TW_TEMPLATE = '''import numpy as np
import math


def score_nodes(current_node: int, current_time: float, candidates: np.ndarray,
                distance_matrix: np.ndarray, tw_start: np.ndarray, tw_end: np.ndarray) -> np.ndarray:
    """Scores the candidate next nodes of a TSPTW tour; the highest score is visited next.

    Args:
        current_node: ID of the node the vehicle is at (0 is the depot).
        current_time: time of leaving current_node.
        candidates: IDs of the nodes the feasibility mask allows next (never empty).
        distance_matrix: travel times between all nodes.
        tw_start: earliest service time of each node (arriving early means waiting).
        tw_end: latest arrival time of each node (arriving later is infeasible).

    Returns:
        One score per candidate (same length as candidates).
    """
    return -tw_end[candidates]
'''

_DL_TEMPLATE = '''import numpy as np
import math


def score_nodes(current_node: int, current_load: float, candidates: np.ndarray,
                distance_matrix: np.ndarray, demand: np.ndarray, draft: np.ndarray) -> np.ndarray:
    """Scores the candidate next nodes of a TSPDL tour; the highest score is visited next.

    Args:
        current_node: ID of the node the ship is at (0 is the depot).
        current_load: load carried when leaving current_node.
        candidates: IDs of the nodes the feasibility mask allows next (never empty).
        distance_matrix: travel distances between all nodes.
        demand: load picked up at each node.
        draft: draft limit of each node: the load on arrival plus its demand must not exceed it.

    Returns:
        One score per candidate (same length as candidates).
    """
    return -draft[candidates]
'''


def _seed(template: str, body: str, doc: str) -> str:
    head, _, _ = template.partition('    """')
    return f'{head}    """{doc}"""\n    {body}\n'


class _RoutingTask:
    """Shared machinery of the two routing tasks (subclasses set the problem-specific parts).

    Seeds: greedy-C (the template: earliest window end / smallest draft first) and greedy-L
    (nearest first), both inside LazyMask.

    References
    ----------
    .. [1] T. Li, H. Zou, J. Wu, Z. Wen, "Learn to Solve Constrained Routing Problems with Lazy
       Masking", ICLR 2026, arXiv:2505.17938 (the decoder).
    .. [2] J. Bi et al., "Learning to Handle Complex Constraints for Vehicle Routing Problems",
       NeurIPS 2024 (the instances; greedy-C and greedy-L).
    """

    name: str
    problem: str
    description: str
    template: str
    seeds: dict[str, str]
    entry_point = "score_nodes"
    imports = IMPORTS
    baseline = "greedy_c"
    _arrays: tuple[str, str]

    def __init__(self) -> None:
        self.seeds = {
            "greedy_c": self.template,
            "nearest": _seed(self.template, "return -distance_matrix[current_node, candidates]",
                             "Greedy-L: the nearest allowed node."),
        }

    def instances(self, split: str) -> RoutingInstances:
        """The fixed instances of ``split`` (``train``: 32 x n = 20; ``validation``: 32 x n = 50;
        ``test``: 128 x n = 50; all of the hard level)."""
        if split not in _SPLITS:
            raise ValueError(f"split: unknown split {split!r}; use one of {', '.join(SPLITS)}")
        hardness, n, which, count = _SPLITS[split]
        return fixed_set(self.problem, hardness, n, which).subset(slice(0, count))

    def inputs(self, split: str) -> dict[str, Any]:
        """JSON-able payload: the instances' arrays."""
        ins = self.instances(split)
        a, b = self._arrays
        return {"problem": self.problem, "coords": ins.coords.tolist(),
                a: getattr(ins, a).tolist(), b: getattr(ins, b).tolist()}

    def chooser(self, instances: RoutingInstances, fn: Callable[..., Any]) -> Chooser:
        """A LazyMask chooser that visits the allowed node ``fn`` scores highest."""
        a, b = self._arrays
        dist = instances.distances()
        first, second = getattr(instances, a), getattr(instances, b)

        def choose(d: Decision) -> np.ndarray:
            out = np.empty(d.rows.size, dtype=np.int64)
            for k, row in enumerate(d.rows):
                cand = np.flatnonzero(d.mask[k])
                scores = np.asarray(fn(int(d.current[k]), float(d.resource[k]), cand.copy(),
                                       dist[row].copy(), first[row].copy(), second[row].copy()),
                                    dtype=np.float64).reshape(-1)
                if scores.shape != cand.shape:
                    raise ValueError(f"score_nodes returned {scores.size} scores for {cand.size} candidates")
                if not np.isfinite(scores).all():
                    raise ValueError("score_nodes returned a non-finite score")
                out[k] = cand[int(np.argmax(scores))]
            return out

        return choose

    def solve(self, fn: Callable[..., Any], inputs: dict[str, Any]) -> list[list[int]]:
        """Decode every instance with LazyMask, ``fn`` scoring the allowed nodes (in the sandbox)."""
        a, b = self._arrays
        ins = RoutingInstances(inputs["problem"], "custom", np.asarray(inputs["coords"]),
                               **{a: np.asarray(inputs[a]), b: np.asarray(inputs[b])})
        return decode(ins, self.chooser(ins, fn), lookahead=2, budget=DECODE_BUDGET).tours.tolist()

    def score(self, split: str, solution: Any) -> Evaluation:
        """Validate the tours against this process's own instances and score them."""
        ins = self.instances(split)
        try:
            tours = np.asarray(solution)
            if tours.dtype.kind not in "iu":
                raise ValueError(f"expected integer node ids, got {tours.dtype}")
            check = check_tours(ins, tours)
        except Exception as exc:  # noqa: BLE001 - a malformed solution must never score
            return Evaluation.invalid(f"invalid solution: {exc}")
        bound = ins.distances().max(axis=2).sum(axis=1)
        feasible = check.feasible
        cost = np.where(feasible, check.length, bound + check.violated)
        metrics = {"feasible_pct": 100.0 * float(feasible.mean()),
                   "avg_length_feasible": float(check.length[feasible].mean()) if feasible.any() else float("nan")}
        return Evaluation(valid=True, score=float(cost.mean()), metrics=metrics)


class TSPTWTask(_RoutingTask):
    """TSPTW (hard windows) with an evolved node scorer inside the LazyMask decoder."""

    name = "tsptw"
    problem = "tsptw"
    _arrays = ("tw_start", "tw_end")
    description = (
        "Traveling salesman problem with time windows (TSPTW): a vehicle leaves the depot (node 0) "
        "at time 0, visits every customer once and returns; travel time equals Euclidean distance; "
        "arriving before a node's window opens means waiting, arriving after it closes is infeasible. "
        "The tour is built step by step by a decoder that already removes next nodes which would make "
        "the tour infeasible and backtracks when stuck; your function `score_nodes` scores the "
        "allowed next nodes and the highest is visited. Goal: the shortest feasible tours.")
    template = _TW_TEMPLATE



class TSPDLTask(_RoutingTask):
    """TSPDL (draft limits) with an evolved node scorer inside the LazyMask decoder."""

    name = "tspdl"
    problem = "tspdl"
    _arrays = ("demand", "draft")
    description = (
        "Traveling salesman problem with draft limits (TSPDL): a ship leaves the port (node 0) empty, "
        "visits every node once, picking up `demand` at each, and returns; the load on arrival at a "
        "node plus its demand must not exceed its draft limit. Distances are Euclidean. The tour is "
        "built step by step by a decoder that already removes next nodes which would make the tour "
        "infeasible and backtracks when stuck; your function `score_nodes` scores the allowed next "
        "nodes and the highest is visited. Goal: the shortest feasible tours.")
    template = _DL_TEMPLATE

