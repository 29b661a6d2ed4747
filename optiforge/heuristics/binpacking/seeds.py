"""Seed heuristics for online bin packing (full program sources)."""

from __future__ import annotations

IMPORTS = "import numpy as np\nimport math\n"

BEST_FIT = '''import numpy as np
import math


def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """Best fit: prefer the bin left with the least free space after packing the item."""
    return -(bins - item)
'''

FIRST_FIT = '''import numpy as np
import math


def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """First fit: prefer the lowest-index bin that fits (bins arrive in index order)."""
    return -np.arange(len(bins), dtype=float)
'''

SEEDS: dict[str, str] = {"best_fit": BEST_FIT, "first_fit": FIRST_FIT}
