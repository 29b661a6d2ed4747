"""Seed heuristics for TSP construction (full program sources)."""

from __future__ import annotations

IMPORTS = "import numpy as np\nimport math\n"

NEAREST_NEIGHBOR = '''import numpy as np
import math


def select_next_node(current_node: int, destination_node: int, unvisited_nodes: np.ndarray,
                     distance_matrix: np.ndarray) -> int:
    """Nearest neighbour: go to the closest unvisited node."""
    return int(unvisited_nodes[np.argmin(distance_matrix[current_node, unvisited_nodes])])
'''

SEEDS: dict[str, str] = {"nearest_neighbor": NEAREST_NEIGHBOR}
