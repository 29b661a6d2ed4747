"""Heuristic tasks: the ``HeuristicTask`` protocol, the registry and the built-in tasks.

Built-in tasks (registered lazily on first ``get_task`` / ``task_names``):
``"binpacking"`` (online bin packing, FunSearch semantics) and ``"tsp"`` (TSP
constructive ``select_next_node``).
"""

from optiforge.heuristics.base import SPLITS, HeuristicTask, get_task, register_task, task_names
from optiforge.heuristics.inprocess import evaluate_in_process, load_trusted_function

__all__ = [
    "SPLITS",
    "HeuristicTask",
    "evaluate_in_process",
    "get_task",
    "load_trusted_function",
    "register_task",
    "task_names",
]
