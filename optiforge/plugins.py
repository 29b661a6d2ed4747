"""Plug-ins from installed packages: Python entry points, loaded lazily and never on import.

A third-party package adds a task or an agent by declaring an entry point in its own
``pyproject.toml`` (the pytest-plugin pattern)::

    [project.entry-points."optiforge.tasks"]
    knapsack = "my_package.knapsack:KnapsackTask"

    [project.entry-points."optiforge.agents"]
    my-agent = "my_package.agent:REGISTRATION"

The registries (:mod:`optiforge.heuristics.registry`, :mod:`optiforge.agents.registry`)
read these groups; this module only lists and imports ``"module:attr"`` references, so the
rule for turning a reference into an object lives in one place.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

TASKS_GROUP = "optiforge.tasks"
AGENTS_GROUP = "optiforge.agents"


def entry_point_refs(group: str) -> dict[str, str]:
    """``name -> "module:attr"`` for every installed entry point of ``group``."""
    return {ep.name: ep.value for ep in entry_points(group=group)}


def load_ref(ref: str, what: str) -> Any:
    """Import the object a ``"module:attr"`` reference names.

    Parameters
    ----------
    ref : str
        ``"package.module:attribute"`` (the attribute may be dotted).
    what : str
        What the reference is for, used in the error message (e.g. ``"task 'tsp'"``).

    Raises
    ------
    ValueError
        The reference is malformed, its module cannot be imported or lacks the attribute.
    """
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{what}: malformed reference {ref!r} (expected 'module:attribute')")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"{what}: cannot import {module_name!r} ({exc})") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"{what}: {module_name!r} has no attribute {attr!r}") from None
    return obj
