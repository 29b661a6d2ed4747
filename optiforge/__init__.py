"""optiforge: LLM-orchestrated optimization and heuristic discovery.

Entry points: the ``optiforge`` CLI, :func:`optiforge.blackbox.create_study` (ask/tell),
:class:`optiforge.Client` (HTTP), :mod:`optiforge.optim` (training optimizers) and
:mod:`optiforge.heuristics` (tasks). Heavy modules load lazily so ``import optiforge`` is cheap.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Client", "__version__", "create_study"]


def __getattr__(name: str) -> Any:
    if name == "Client":
        from optiforge.platform.client import Client

        return Client
    if name == "create_study":
        from optiforge.blackbox import create_study

        return create_study
    raise AttributeError(f"module 'optiforge' has no attribute {name!r}")
