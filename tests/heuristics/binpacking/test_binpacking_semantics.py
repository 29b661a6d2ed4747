"""Semantics of the online bin-packing simulation (FunSearch rules)."""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.heuristics import load_trusted_function
from optiforge.heuristics.binpacking import BinPackingTask, count_bins, online_pack


def _seed(name: str):
    task = BinPackingTask()
    return load_trusted_function(task, task.seeds[name])


def classic_best_fit(items: list[int], capacity: int) -> list[int]:
    """Textbook best fit over the *open* bins; opens a new bin only when none fits."""
    residual: list[int] = []
    out = []
    for it in items:
        fits = [(residual[b] - it, b) for b in range(len(residual)) if residual[b] >= it]
        if fits:
            b = min(fits)[1]
        else:
            residual.append(capacity)
            b = len(residual) - 1
        residual[b] -= it
        out.append(b)
    return out


def classic_first_fit(items: list[int], capacity: int) -> list[int]:
    residual: list[int] = []
    out = []
    for it in items:
        b = next((b for b in range(len(residual)) if residual[b] >= it), None)
        if b is None:
            residual.append(capacity)
            b = len(residual) - 1
        residual[b] -= it
        out.append(b)
    return out


def test_best_fit_matches_hand_computed_example() -> None:
    # capacity 10: 5->b0 (5 left); 7 fits no used bin->b1 (3); 5 fills b0 exactly; 3 fills b1;
    # 2 fits no used bin->b2 (8); 4 -> b2 (4 left) rather than a fresh bin (6 left).
    got = online_pack(_seed("best_fit"), [5, 7, 5, 3, 2, 4], 10)
    assert got.tolist() == [0, 1, 0, 1, 2, 2]
    assert count_bins(got) == 3


@pytest.mark.parametrize(("seed", "reference"), [("best_fit", classic_best_fit), ("first_fit", classic_first_fit)])
def test_seeds_equal_textbook_algorithms(seed: str, reference) -> None:
    rng = np.random.default_rng(7)
    items = rng.integers(1, 101, size=400).tolist()
    assert online_pack(_seed(seed), items, 100).tolist() == reference(items, 100)


def test_heuristic_that_always_opens_a_new_bin_uses_one_bin_per_item() -> None:
    # Empty bins have the largest remaining capacity, so argmax(bins) always picks a fresh bin.
    items = [3, 3, 3, 3, 50, 1]
    got = online_pack(lambda item, bins: bins, items, 100)
    assert sorted(got.tolist()) == list(range(len(items)))
    assert count_bins(got) == len(items)


def test_heuristic_sees_every_fitting_bin_including_empty_ones() -> None:
    seen: list[np.ndarray] = []

    def spy(item: float, bins: np.ndarray) -> np.ndarray:
        seen.append(bins.copy())
        return -(bins - item)

    online_pack(spy, [60, 30, 50], 100)
    # Item 2 (30) fits bin 0 (40 left) and the two untouched bins; item 3 (50) fits only empty ones.
    assert seen[0].tolist() == [100.0, 100.0, 100.0]
    assert seen[1].tolist() == [40.0, 100.0, 100.0]
    assert seen[2].tolist() == [100.0, 100.0]


def test_heuristic_cannot_corrupt_the_simulation_state() -> None:
    def vandal(item: float, bins: np.ndarray) -> np.ndarray:
        bins[:] = 1e9  # writes to its own copy only
        return np.zeros_like(bins)

    got = online_pack(vandal, [80, 80, 80], 100)
    assert got.tolist() == [0, 1, 2]


@pytest.mark.parametrize("bad", [lambda i, b: 1.0, lambda i, b: np.zeros(len(b) + 1), lambda i, b: np.zeros((len(b), 1))])
def test_priority_with_wrong_shape_is_an_error(bad) -> None:
    with pytest.raises(ValueError, match="one score per bin"):
        online_pack(bad, [10, 20], 100)
