"""The black-box problem vocabulary: search spaces, benchmark functions, ``BlackboxTask``.

Ask/tell studies live one floor up, in the platform (``optiforge.create_study``); the Optuna
sampler in :mod:`optiforge.integrations.optuna`.
"""

from __future__ import annotations

from optiforge.blackbox.functions import (
    BlackboxTask,
    blackbox_task_names,
    get_blackbox_task,
    shifted,
)
from optiforge.blackbox.space import (
    CategoricalParam,
    FloatParam,
    IntParam,
    SimplexParam,
    Space,
    SpdParam,
    SphereParam,
)

__all__ = [
    "BlackboxTask", "CategoricalParam", "FloatParam", "IntParam", "SimplexParam", "Space", "SpdParam",
    "SphereParam", "blackbox_task_names", "get_blackbox_task", "shifted",
]
