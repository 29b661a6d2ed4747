"""TSP task: construction semantics, validation of tours, determinism."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

from optiforge.heuristics import evaluate_in_process, get_task, load_trusted_function
from optiforge.heuristics.base import SPLITS
from optiforge.heuristics.tsp import TSPTask, construct_tour, distance_matrix, nearest_neighbor_tour


@pytest.fixture(scope="module")
def task() -> TSPTask:
    return get_task("tsp")


@pytest.fixture(scope="module")
def nn_solution(task: TSPTask) -> list[list[int]]:
    fn = load_trusted_function(task, task.seeds["nearest_neighbor"])
    return task.solve(fn, task.inputs("train"))


def test_nearest_neighbor_seed_matches_reference_nn(task: TSPTask) -> None:
    fn = load_trusted_function(task, task.seeds["nearest_neighbor"])
    dist = distance_matrix(np.random.default_rng(3).random((30, 2)))
    assert construct_tour(fn, dist) == nearest_neighbor_tour(dist).tolist()


def test_heuristic_arguments_follow_the_eoh_convention() -> None:
    coords = np.array([[0.0, 0.0], [0.9, 0.0], [0.1, 0.0], [0.5, 0.0]])
    calls = []

    def spy(current, destination, unvisited, dist):
        calls.append((current, destination, unvisited.tolist(), dist.shape))
        return int(unvisited[-1])  # farthest first

    tour = construct_tour(spy, distance_matrix(coords))
    # From 0: unvisited ordered by distance [2, 3, 1]; the last node is appended without a call.
    assert calls[0] == (0, 0, [2, 3, 1], (4, 4))
    assert calls[1] == (1, 0, [3, 2], (4, 4))
    assert len(calls) == 2 and tour == [0, 1, 2, 3]


@pytest.mark.parametrize("choice", [0, 99, -1, 1.0, "2", None, True])
def test_choosing_a_node_outside_unvisited_is_an_error(choice) -> None:
    dist = distance_matrix(np.random.default_rng(0).random((6, 2)))
    with pytest.raises(ValueError, match="select_next_node"):
        construct_tour(lambda c, d, u, m: choice, dist)


def test_revisiting_heuristic_is_invalid_end_to_end(task: TSPTask) -> None:
    ev = evaluate_in_process(task, "def select_next_node(c, d, u, m):\n    return c\n")
    assert not ev.valid and "not among the unvisited" in ev.error


def test_valid_tours_score_as_gap_to_reference(task: TSPTask, nn_solution) -> None:
    ev = task.score("train", nn_solution)
    assert ev.valid
    refs = task.reference_lengths("train_50")
    ds = task.dataset("train_50")
    lengths = [
        sum(ds.distances(i)[t[k], t[(k + 1) % len(t)]] for k in range(len(t))) for i, t in enumerate(nn_solution)
    ]
    assert ev.score == pytest.approx(100 * np.mean(np.array(lengths) / refs - 1))
    # Nearest neighbour is known to be ~20-25 % above optimal on uniform random instances.
    assert 12 < ev.score < 35
    # A rotated tour is the same cycle: same score.
    rotated = [t[5:] + t[:5] for t in nn_solution]
    assert task.score("train", rotated).score == pytest.approx(ev.score)


@pytest.mark.parametrize(
    ("mutation", "needle"),
    [
        (lambda s: s.pop(), "expected 8"),
        (lambda s: s[0].pop(), "expected 50"),
        (lambda s: s[1].__setitem__(3, s[1][4]), "more than once"),
        (lambda s: s[2].__setitem__(0, 50), "out of range"),
        (lambda s: s[2].__setitem__(0, -1), "out of range"),
        (lambda s: s[3].__setitem__(0, 1.0), "integers"),
        (lambda s: s[3].__setitem__(0, False), "integers"),
        (lambda s: s.__setitem__(4, "0,1,2"), "expected a list"),
    ],
)
def test_malformed_tours_are_invalid(task: TSPTask, nn_solution, mutation, needle: str) -> None:
    sol = copy.deepcopy(nn_solution)
    mutation(sol)
    ev = task.score("train", sol)
    assert not ev.valid and needle in ev.error


def test_unknown_split_names_the_argument(task: TSPTask) -> None:
    with pytest.raises(ValueError, match="split"):
        task.inputs("tsp1000")
    with pytest.raises(ValueError, match="name"):
        task.dataset("tsp1000")


def test_splits_and_datasets(task: TSPTask) -> None:
    sizes = {n: task.dataset(n).n_nodes for n in task.datasets()}
    assert {sizes[n] for n in task.split_datasets("test")} == {20, 50, 100, 200}
    assert 100 in {sizes[n] for n in task.split_datasets("validation")}
    for n in task.datasets():
        coords = np.concatenate(task.dataset(n).coords)
        assert coords.min() >= 0 and coords.max() < 1


def test_instances_identical_in_a_fresh_process() -> None:
    task = TSPTask()
    here = {s: hashlib.sha256(json.dumps(task.inputs(s)).encode()).hexdigest() for s in SPLITS}
    code = (
        f"SPLITS = {list(SPLITS)!r}; import hashlib, json; from optiforge.heuristics import get_task; "
        "t = get_task('tsp'); "
        "print(json.dumps({s: hashlib.sha256(json.dumps(t.inputs(s)).encode()).hexdigest() for s in SPLITS}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == here
