"""The heuristic-task registry: a table of references, with no import side effects.

Three sources, looked up in this order:

1. tasks registered in this process with :func:`register_task` (a class, a factory, or a
   ``"module:Class"`` reference);
2. the built-in table :data:`BUILTIN_TASKS`;
3. installed plug-ins: an ``optiforge.tasks`` entry point in a package's ``pyproject.toml``
   (see :mod:`optiforge.plugins`)::

       [project.entry-points."optiforge.tasks"]
       knapsack = "my_package.knapsack:KnapsackTask"

Nothing is imported until a task is asked for, so listing names is cheap and importing
:mod:`optiforge.heuristics` never loads a domain package. A task object crosses a process
boundary (to a sandbox worker or a Ray actor) as :func:`task_ref`, the reference of its
class, which the other side instantiates with no arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from optiforge.heuristics.base import HeuristicTask
from optiforge.plugins import TASKS_GROUP, entry_point_refs, load_ref
from optiforge.validation import UnknownTaskError

BUILTIN_TASKS: dict[str, str] = {
    "binpacking": "optiforge.heuristics.binpacking.task:BinPackingTask",
    "tsp": "optiforge.heuristics.tsp.task:TSPTask",
    "matching": "optiforge.heuristics.matching.task:MatchingTask",
    "tsptw": "optiforge.heuristics.routing.task:TSPTWTask",
    "tspdl": "optiforge.heuristics.routing.task:TSPDLTask",
    "workflow": "optiforge.heuristics.scheduling.task:WorkflowSchedulingTask",
}
"""Built-in tasks: name -> ``"module:Class"`` of a class constructed with no arguments."""

TaskFactory = Callable[[], HeuristicTask]

_registered: dict[str, TaskFactory | str] = {}
_cache: dict[str, HeuristicTask] = {}


def register_task(name: str, factory: TaskFactory | str) -> None:
    """Register a task under ``name`` in this process (it shadows a built-in or plug-in).

    Parameters
    ----------
    name : str
        The registry name.
    factory : callable or str
        A no-argument callable returning the task (usually its class), or a
        ``"module:Class"`` reference. For sandboxed evaluation the task's class must be
        importable by module path and constructible with no arguments.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name: expected a non-empty str, got {name!r}")
    if not (callable(factory) or isinstance(factory, str)):
        raise TypeError(f"factory: expected a callable or a 'module:Class' string, got {factory!r}")
    _registered[name] = factory
    _cache.pop(name, None)


def _sources() -> dict[str, TaskFactory | str]:
    return {**entry_point_refs(TASKS_GROUP), **BUILTIN_TASKS, **_registered}


def task_names() -> list[str]:
    """Every task name: registered, built-in and installed plug-ins."""
    return sorted(_sources())


def get_task(name: str) -> HeuristicTask:
    """Return the task ``name`` (built once per process, then cached).

    Raises
    ------
    UnknownTaskError
        A ``ValueError``: no task of that name exists (the message lists the known names).
    ValueError
        If its plug-in reference cannot be loaded.
    TypeError
        If what the name refers to does not build a :class:`HeuristicTask`.
    """
    if isinstance(name, str) and name in _cache:
        return _cache[name]
    sources = _sources()
    if not isinstance(name, str) or name not in sources:
        shown = name if not isinstance(name, str) or len(name) <= 64 else name[:64] + "..."
        raise UnknownTaskError(f"task: unknown task {shown!r}; known tasks: {', '.join(sorted(sources))}")
    source = sources[name]
    factory = load_ref(source, f"task {name!r}") if isinstance(source, str) else source
    task = factory()
    if not isinstance(task, HeuristicTask):
        raise TypeError(f"task {name!r}: {source!r} built a {type(task).__name__}, not a HeuristicTask")
    _cache[name] = task
    return task


def task_ref(task: HeuristicTask) -> str:
    """The ``"module:Class"`` reference another process uses to build ``task`` again.

    Raises
    ------
    ValueError
        If the task's class is defined in ``__main__`` or locally (not importable by path).
    """
    cls = type(task)
    if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__:
        raise ValueError(f"task: {task.name!r} is defined in {cls.__module__}.{cls.__qualname__}; "
                         "define it at the top level of an importable module so sandbox workers "
                         "can build it")
    return f"{cls.__module__}:{cls.__qualname__}"


def task_from_ref(ref: str) -> Any:
    """Build a task from :func:`task_ref`'s reference (in a worker process)."""
    return load_ref(ref, "task")()
