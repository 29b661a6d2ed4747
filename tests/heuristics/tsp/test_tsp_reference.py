"""The trusted reference tour is near-optimal: compared with exact Held-Karp DP."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from optiforge.heuristics.tsp import (
    distance_matrix,
    held_karp,
    nearest_neighbor_tour,
    reference_tour,
    tour_length,
)
from optiforge.heuristics.tsp.reference import or_opt, two_opt


def _brute_force(dist: np.ndarray) -> float:
    n = dist.shape[0]
    return min(tour_length(dist, np.array((0, *p))) for p in itertools.permutations(range(1, n)))


def test_held_karp_equals_brute_force_on_tiny_instances() -> None:
    rng = np.random.default_rng(1)
    for n in (4, 5, 7):
        dist = distance_matrix(rng.random((n, 2)))
        length, tour = held_karp(dist)
        assert sorted(tour.tolist()) == list(range(n)) and tour[0] == 0
        assert tour_length(dist, tour) == pytest.approx(length)
        assert length == pytest.approx(_brute_force(dist))


def test_reference_is_near_optimal_against_exact_dp_n9() -> None:
    rng = np.random.default_rng(2024)
    gaps = []
    for _ in range(25):
        dist = distance_matrix(rng.random((9, 2)))
        opt, _ = held_karp(dist)
        ref = reference_tour(dist)
        assert sorted(ref.tolist()) == list(range(9))
        gaps.append(tour_length(dist, ref) / opt - 1)
    assert min(gaps) >= -1e-12  # nothing beats the optimum
    assert np.mean(gaps) < 0.005 and max(gaps) < 0.03


def test_local_search_moves_only_improve_and_reach_a_local_optimum() -> None:
    dist = distance_matrix(np.random.default_rng(5).random((60, 2)))
    nn = nearest_neighbor_tour(dist)
    t2, improved = two_opt(dist, nn)
    assert improved and tour_length(dist, t2) < tour_length(dist, nn)
    t3, moved = or_opt(dist, t2)
    assert sorted(t3.tolist()) == list(range(60))
    if moved:
        assert tour_length(dist, t3) < tour_length(dist, t2)
    ref = reference_tour(dist)
    # At the reference tour no 2-opt or Or-opt move improves any further.
    assert not two_opt(dist, ref)[1] and not or_opt(dist, ref)[1]


def test_nearest_neighbor_visits_closest_first() -> None:
    coords = np.array([[0.0, 0.0], [3.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    assert nearest_neighbor_tour(distance_matrix(coords)).tolist() == [0, 2, 3, 1]
