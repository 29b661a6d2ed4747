"""The references: exact optimum (LSA) equals POT's, greedy and quadtree are online matchings."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optiforge.heuristics.matching import (
    emd_cost,
    greedy,
    make_instance,
    opt_assignment,
    opt_cost,
    quadtree_greedy,
)

pytest.importorskip("ot")


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), r=st.integers(1, 12), extra=st.integers(0, 5))
def test_linear_sum_assignment_and_pot_agree_on_rectangular_instances(random_cost, seed, r, extra):
    cost = random_cost(seed, r, r + extra)
    assert opt_cost(cost) == pytest.approx(emd_cost(cost), rel=1e-9, abs=1e-9)
    a = opt_assignment(cost)
    assert len(set(a.tolist())) == r and a.max() < r + extra


def test_opt_is_a_lower_bound_of_every_online_method():
    inst = make_instance("uniform", 150, seed=2)
    opt = opt_cost(inst.cost)
    for a in (greedy(inst.cost), quadtree_greedy(inst.servers, inst.requests, inst.cost, seed=1)):
        assert sorted(a.tolist()) == list(range(150))
        assert inst.cost[np.arange(150), a].sum() >= opt - 1e-9


def test_greedy_takes_the_nearest_free_server():
    cost = np.array([[1.0, 2.0, 3.0], [1.0, 5.0, 0.5], [0.1, 0.2, 0.3]])
    assert greedy(cost).tolist() == [0, 2, 1]


def test_quadtree_takes_the_nearest_free_server_of_the_smallest_nonempty_cell():
    servers = np.array([[0.0, 0.0], [10.0, 10.0], [10.0, 0.0]])
    requests = np.array([[9.5, 9.0], [9.0, 9.0]])
    cost = np.sqrt(((requests[:, None] - servers[None]) ** 2).sum(-1))
    a = quadtree_greedy(servers, requests, cost, seed=0)
    assert a[0] == 1 and a[1] != 1


@pytest.mark.parametrize(
    ("cost", "match"),
    [(np.ones((3, 2)), "requests <= servers"), (np.array([[1.0, -2.0]]), "non-negative"),
     (np.ones(3), "matrix")],
)
def test_bad_cost_matrices_name_the_argument(cost, match):
    with pytest.raises(ValueError, match=f"cost: .*{match}"):
        opt_cost(cost)


def test_quadtree_refuses_points_that_are_not_2d():
    inst = make_instance("digits", 20, seed=0)
    with pytest.raises(ValueError, match="2-D"):
        quadtree_greedy(inst.servers, inst.requests, inst.cost)
