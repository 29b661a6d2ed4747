"""optiforge: LLM-orchestrated optimization and heuristic discovery.

Entry points: the ``optiforge`` CLI; :func:`optiforge.create_study` / :func:`load_study`
(store-backed ask/tell); :class:`optiforge.Client` (the HTTP service);
:mod:`optiforge.optim` (training optimizers) and :mod:`optiforge.heuristics` (tasks).
Heavy modules load lazily, so ``import optiforge`` is cheap and needs none of the extras.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Client", "Study", "Trial", "__version__", "create_study", "load_study"]

_LAZY = {
    "Client": "optiforge.platform.client",
    "Study": "optiforge.platform.study",
    "Trial": "optiforge.platform.study",
    "create_study": "optiforge.platform.study",
    "load_study": "optiforge.platform.study",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'optiforge' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
