"""Heuristic tasks: the ``HeuristicTask`` protocol, the registry and the built-in domains.

Built-in tasks: ``"binpacking"`` (online bin packing, FunSearch semantics) and ``"tsp"`` (TSP
constructive ``select_next_node``); plug-ins add more through the ``optiforge.tasks`` entry
point (see :mod:`optiforge.heuristics.registry`). Importing this package loads no domain.
"""

from optiforge.heuristics.base import SPLITS, HeuristicTask, NamedDatasetSplits
from optiforge.heuristics.inprocess import evaluate_in_process, load_trusted_function
from optiforge.heuristics.registry import get_task, register_task, task_names

__all__ = [
    "SPLITS",
    "HeuristicTask",
    "NamedDatasetSplits",
    "evaluate_in_process",
    "get_task",
    "load_trusted_function",
    "register_task",
    "task_names",
]
