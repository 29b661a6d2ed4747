"""Fixed-seed Euclidean TSP instance sets: uniform points in the unit square.

Each dataset draws instance ``i`` from ``numpy.random.default_rng([seed, i]).random((n, 2))``
(uniform doubles are stable across numpy releases), so the same points come out in
every process.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from optiforge.heuristics.tsp.reference import distance_matrix


@dataclass(frozen=True)
class TSPDataset:
    """A named set of TSP instances with the same number of nodes.

    Attributes
    ----------
    name : str
        Registry name, e.g. ``"tsp100"``.
    n_nodes : int
        Nodes per instance.
    coords : tuple of numpy.ndarray
        ``(n_nodes, 2)`` coordinates of each instance; read-only.
    description : str
        How the set was generated.
    """

    name: str
    n_nodes: int
    coords: tuple[np.ndarray, ...]
    description: str

    def distances(self, i: int) -> np.ndarray:
        """Euclidean distance matrix of instance ``i``."""
        return distance_matrix(self.coords[i])


# name -> (seed, number of instances, nodes per instance)
_SPECS: dict[str, tuple[int, int, int]] = {
    "train_50": (31_050, 8, 50),
    "val_50": (32_050, 16, 50),
    "val_100": (32_100, 16, 100),
    "tsp20": (33_020, 32, 20),
    "tsp50": (33_050, 32, 50),
    "tsp100": (33_100, 32, 100),
    "tsp200": (33_200, 16, 200),
}

SPLIT_DATASETS: dict[str, tuple[str, ...]] = {
    "train": ("train_50",),
    "validation": ("val_50", "val_100"),
    "test": ("tsp20", "tsp50", "tsp100", "tsp200"),
}


def dataset_names() -> list[str]:
    """Names accepted by :func:`get_dataset`."""
    return list(_SPECS)


@cache
def get_dataset(name: str) -> TSPDataset:
    """Return the named dataset (generated once per process).

    Raises
    ------
    ValueError
        If ``name`` is not a known dataset (the message lists them).
    """
    if not isinstance(name, str) or name not in _SPECS:
        raise ValueError(f"name: unknown TSP dataset {name!r}; known: {', '.join(_SPECS)}")
    seed, count, n = _SPECS[name]
    coords = tuple(np.random.default_rng([seed, i]).random((n, 2)) for i in range(count))
    for c in coords:
        c.setflags(write=False)
    return TSPDataset(name, n, coords, f"{count} x {n} uniform points in the unit square; seed {seed}")
