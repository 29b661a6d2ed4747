"""Seed heuristics for online matching (full program sources)."""

from __future__ import annotations

IMPORTS = "import numpy as np\nimport math\n"

GREEDY = '''import numpy as np
import math


def select_server(request_distances: np.ndarray, free: np.ndarray, server_distances: np.ndarray,
                  assignment: np.ndarray) -> int:
    """Greedy: the nearest free server."""
    return int(np.argmin(np.where(free, request_distances, np.inf)))
'''

SEEDS: dict[str, str] = {"greedy": GREEDY}
