"""Black-box optimization: search spaces, benchmark functions, ask/tell studies, Optuna sampler.

``create_study`` / ``Study`` (store-backed ask/tell) and ``HOLLMSampler`` (needs ``optuna``)
load lazily so importing the space or the functions stays cheap.
"""

from __future__ import annotations

from typing import Any

from optiforge.blackbox.functions import BlackboxTask, blackbox_task_names, get_blackbox_task
from optiforge.blackbox.space import CategoricalParam, FloatParam, IntParam, Space

__all__ = [
    "BlackboxTask", "CategoricalParam", "FloatParam", "HOLLMSampler", "IntParam", "Space", "Study",
    "Trial", "blackbox_task_names", "create_study", "get_blackbox_task", "load_study",
]


def __getattr__(name: str) -> Any:
    if name in ("create_study", "load_study", "Study", "Trial"):
        from optiforge.blackbox import study

        return getattr(study, name)
    if name == "HOLLMSampler":
        from optiforge.blackbox.optuna_sampler import HOLLMSampler

        return HOLLMSampler
    raise AttributeError(f"module 'optiforge.blackbox' has no attribute {name!r}")
