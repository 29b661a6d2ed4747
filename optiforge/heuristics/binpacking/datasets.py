"""Fixed-seed online bin-packing instance sets (Weibull and OR-Library-like).

Every dataset is regenerated from a fixed seed with a counter-based draw per instance
(``numpy.random.default_rng([seed, i])`` and only ``Generator.random`` uniforms, which
are stable across numpy versions), so the same items come out in every process.

Weibull sets follow FunSearch [1]_: sizes are Weibull(shape k=3, scale lambda=45),
truncated to integers and clipped to [1, 100], bin capacity 100. Truncation
(``floor``) rather than round-to-nearest is deliberate: FunSearch's published
Weibull 5k set (in its ``bin_packing.ipynb``) has a mean item size of 39.75, which
matches truncation (expected 39.68) and not rounding (40.18); a likelihood test on
its item histogram prefers truncation by ~10 nats. With truncation our regenerated
sets reproduce FunSearch's best-fit / first-fit anchors closely.

OR1-OR4 follow the OR-Library ``binpack1``-``binpack4`` sets [2]_ (``u120``,
``u250``, ``u500``, ``u1000``): 20 instances each of uniform integer sizes in
[20, 100], capacity 150. The original files cannot be downloaded here, so they are
*regenerated* with that distribution; numbers on them are comparable in
distribution, not instance by instance, with published OR-Library results.

References
----------
.. [1] B. Romera-Paredes et al., "Mathematical discoveries from program search with
   large language models", Nature 625, 468-475 (2024).
.. [2] E. Falkenauer, "A hybrid grouping genetic algorithm for bin packing",
   Journal of Heuristics 2, 5-30 (1996); OR-Library, J. E. Beasley.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

WEIBULL_SHAPE = 3.0
WEIBULL_SCALE = 45.0
WEIBULL_CAPACITY = 100
OR_CAPACITY = 150
OR_MIN_SIZE, OR_MAX_SIZE = 20, 100


@dataclass(frozen=True)
class BinPackingDataset:
    """A named set of online bin-packing instances sharing one capacity.

    Attributes
    ----------
    name : str
        Registry name, e.g. ``"weibull_5k"``.
    capacity : int
        Capacity of every bin.
    instances : tuple of numpy.ndarray
        Item sizes (int64, arrival order) of each instance; treat as read-only.
    description : str
        How the set was generated.
    """

    name: str
    capacity: int
    instances: tuple[np.ndarray, ...]
    description: str

    def l1_bounds(self) -> np.ndarray:
        """L1 lower bound ``ceil(sum(items) / capacity)`` of each instance."""
        return np.array([-(-int(x.sum()) // self.capacity) for x in self.instances], dtype=np.int64)


def weibull_items(seed: int, index: int, n_items: int) -> np.ndarray:
    """Item sizes of one Weibull(k=3, lambda=45) instance, truncated and clipped to [1, 100]."""
    u = np.random.default_rng([seed, index]).random(n_items)
    # Inverse-CDF sampling from uniforms keeps the stream stable across numpy releases.
    x = WEIBULL_SCALE * (-np.log1p(-u)) ** (1.0 / WEIBULL_SHAPE)
    return np.clip(np.floor(x), 1, WEIBULL_CAPACITY).astype(np.int64)


def uniform_items(seed: int, index: int, n_items: int) -> np.ndarray:
    """Item sizes of one OR-Library-like instance: uniform integers in [20, 100]."""
    u = np.random.default_rng([seed, index]).random(n_items)
    return (OR_MIN_SIZE + np.floor(u * (OR_MAX_SIZE - OR_MIN_SIZE + 1))).astype(np.int64)


# name -> (generator, seed, number of instances, items per instance, capacity)
_SPECS: dict[str, tuple[str, int, int, int, int]] = {
    "weibull_1k": ("weibull", 11_001, 5, 1_000, WEIBULL_CAPACITY),
    "weibull_5k_val": ("weibull", 12_005, 5, 5_000, WEIBULL_CAPACITY),
    "weibull_5k": ("weibull", 13_005, 5, 5_000, WEIBULL_CAPACITY),
    "weibull_10k": ("weibull", 14_010, 5, 10_000, WEIBULL_CAPACITY),
    "or1": ("uniform", 21_120, 20, 120, OR_CAPACITY),
    "or2": ("uniform", 22_250, 20, 250, OR_CAPACITY),
    "or3": ("uniform", 23_500, 20, 500, OR_CAPACITY),
    "or4": ("uniform", 24_000, 20, 1_000, OR_CAPACITY),
}

SPLIT_DATASETS: dict[str, tuple[str, ...]] = {
    "train": ("weibull_1k",),
    "validation": ("weibull_5k_val",),
    "test": ("weibull_5k", "weibull_10k", "or1", "or2", "or3", "or4"),
}
"""Datasets making up each split. ``weibull_5k`` (test) and ``weibull_5k_val``
(validation) use different seeds, so the test set stays held out."""


def dataset_names() -> list[str]:
    """Names accepted by :func:`get_dataset`."""
    return list(_SPECS)


@cache
def get_dataset(name: str) -> BinPackingDataset:
    """Return the named dataset (generated once per process).

    Raises
    ------
    ValueError
        If ``name`` is not a known dataset (the message lists them).
    """
    if not isinstance(name, str) or name not in _SPECS:
        raise ValueError(f"name: unknown bin-packing dataset {name!r}; known: {', '.join(_SPECS)}")
    kind, seed, count, n_items, capacity = _SPECS[name]
    if kind == "weibull":
        gen, desc = weibull_items, f"Weibull(k=3, lambda=45) integer sizes in [1, 100], capacity {capacity}"
    else:
        gen, desc = uniform_items, f"uniform integer sizes in [20, 100], capacity {capacity} (OR-Library-like, regenerated)"
    instances = tuple(gen(seed, i, n_items) for i in range(count))
    for x in instances:
        x.setflags(write=False)
    return BinPackingDataset(name, capacity, instances, f"{count} x {n_items} items; {desc}; seed {seed}")
