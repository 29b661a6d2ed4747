"""Incremental metric bipartite matching: task "matching", push-relabel, references, data.

Importing this package loads numpy only. The torch pieces are imported where used:
:mod:`optiforge.heuristics.matching.batched` (batched push-relabel) and, through it, the
slack-scan kernel in :mod:`optiforge.kernels.matching`.
"""

from optiforge.heuristics.matching.instances import FAMILIES, MatchingInstance, make_instance
from optiforge.heuristics.matching.online import assign_online
from optiforge.heuristics.matching.pushrelabel import PushRelabelMatcher, PushRelabelParams
from optiforge.heuristics.matching.reference import (
    emd_cost,
    greedy,
    matching_cost,
    opt_assignment,
    opt_cost,
    quadtree_greedy,
)
from optiforge.heuristics.matching.runner import METHODS, MatchingRun, opt_curve, run_method
from optiforge.heuristics.matching.task import MatchingTask

__all__ = [
    "FAMILIES",
    "METHODS",
    "MatchingInstance",
    "MatchingRun",
    "MatchingTask",
    "PushRelabelMatcher",
    "PushRelabelParams",
    "assign_online",
    "emd_cost",
    "greedy",
    "make_instance",
    "matching_cost",
    "opt_assignment",
    "opt_cost",
    "opt_curve",
    "quadtree_greedy",
    "run_method",
]
