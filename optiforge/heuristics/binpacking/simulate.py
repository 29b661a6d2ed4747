"""Online bin-packing simulation with FunSearch's semantics, and the trusted bin count.

Semantics (FunSearch [1]_, ``bin_packing.ipynb``): an instance with ``n`` items starts
with ``n`` bins, all at full capacity, so there is always room. For each arriving item
the heuristic ``priority(item, bins)`` receives the remaining capacities of **every**
bin that can fit the item, in index order, *including still-empty bins* (so a heuristic
may open a new bin even when a used one fits); the item goes to the argmax (first
index on ties). The number of bins used is the number of bins whose remaining capacity
differs from the capacity.

References
----------
.. [1] B. Romera-Paredes et al., "Mathematical discoveries from program search with
   large language models", Nature 625, 468-475 (2024).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Priority = Callable[[float, np.ndarray], np.ndarray]


def online_pack(priority: Priority, items: Sequence[int] | np.ndarray, capacity: int) -> np.ndarray:
    """Pack ``items`` online with ``priority`` and return the bin index of each item.

    Parameters
    ----------
    priority : callable
        ``priority(item: float, bins: np.ndarray) -> np.ndarray`` returning one score per
        entry of ``bins`` (the remaining capacities of the bins that fit ``item``).
    items : sequence of int
        Item sizes in arrival order, each in ``[1, capacity]``.
    capacity : int
        Capacity of every bin.

    Returns
    -------
    numpy.ndarray
        ``int64`` array: the bin chosen for each item (bins are numbered ``0..n-1``).

    Raises
    ------
    ValueError
        If ``priority`` returns something that is not a 1-D array of one score per bin.

    Notes
    -----
    The heuristic sees floats (``item`` a Python float, ``bins`` float64) with integral
    values, matching the declared signature; FunSearch used integer arrays, which gives
    the same decisions for the published heuristics but can overflow silently on powers.
    Each call gets a fresh copy of the capacities, so a heuristic cannot corrupt the state.
    """
    sizes = np.asarray(items, dtype=np.float64)
    bins = np.full(sizes.shape[0], float(capacity))
    chosen = np.empty(sizes.shape[0], dtype=np.int64)
    for t, item in enumerate(sizes.tolist()):
        fits = np.flatnonzero(bins >= item)
        scores = np.asarray(priority(item, bins[fits]))
        if scores.shape != fits.shape:
            raise ValueError(
                f"priority must return one score per bin: got shape {scores.shape} for {fits.shape[0]} bins"
            )
        best = fits[int(np.argmax(scores))]
        bins[best] -= item
        chosen[t] = best
    return chosen


def count_bins(assignment: np.ndarray) -> int:
    """Number of bins used by a *validated* assignment (see :func:`check_assignment`).

    Items have size >= 1, so a bin is used (remaining capacity != capacity) exactly when
    some item was assigned to it.
    """
    return int(np.unique(assignment).size)


def check_assignment(items: np.ndarray, assignment: object, capacity: int) -> tuple[np.ndarray | None, str | None]:
    """Validate one instance's untrusted assignment against trusted ``items``.

    Returns ``(assignment_array, None)`` when valid, else ``(None, reason)``. Valid means:
    a list of ``len(items)`` integers (not bools), each in ``[0, len(items))``, and no bin
    loaded above ``capacity``.
    """
    n = items.shape[0]
    if not isinstance(assignment, list | tuple):
        return None, f"expected a list of {n} bin indices, got {type(assignment).__name__}"
    if len(assignment) != n:
        return None, f"expected {n} bin indices, got {len(assignment)}"
    if not all(type(a) is int for a in assignment):
        bad = next(a for a in assignment if type(a) is not int)
        return None, f"bin indices must be integers, got {bad!r}"
    try:
        arr = np.asarray(assignment, dtype=np.int64)
    except OverflowError:
        return None, "bin index out of range"
    if n and (arr.min() < 0 or arr.max() >= n):
        return None, f"bin index out of range [0, {n})"
    loads = np.bincount(arr, weights=items, minlength=n)
    if n and loads.max() > capacity:
        b = int(np.argmax(loads))
        return None, f"bin {b} holds {loads[b]:g} > capacity {capacity}"
    return arr, None
