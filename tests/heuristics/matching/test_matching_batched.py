"""Batched push-relabel on torch: the same invariants after every batch, the exact fallback,
the memory fallback, and the headline against greedy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optiforge.heuristics.matching import (
    PushRelabelParams,
    greedy,
    make_instance,
    matching_cost,
    opt_cost,
)
from optiforge.heuristics.matching.batched import BatchedPushRelabelMatcher


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 12), batch=st.integers(1, 5),
       bid=st.booleans(), ymax_factor=st.sampled_from([30.0, 2.0]), delta=st.sampled_from([0.001, 0.2]))
def test_every_batch_keeps_a_valid_matching_and_the_dual_invariants(random_cost, seed, n, batch, bid,
                                                                    ymax_factor, delta):
    cost = random_cost(seed, n)
    m = BatchedPushRelabelMatcher(n, PushRelabelParams(delta=delta, bid=bid, ymax_factor=ymax_factor),
                                  device="cpu", seed=seed)
    for lo in range(0, n, batch):
        m.insert_batch(cost[lo:lo + batch])
        assert m.invariant_violations() == []
        a = m.assignment()
        assert len(a) == min(lo + batch, n) and len(set(a.tolist())) == len(a)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 9))
def test_exact_fallback_equals_linear_sum_assignment(random_cost, seed, n):
    cost = random_cost(seed, n)
    m = BatchedPushRelabelMatcher(n, PushRelabelParams(ymax_factor=0.0), device="cpu")
    for lo in range(0, n, 3):
        m.insert_batch(cost[lo:lo + 3])
        assert m.cost() == pytest.approx(opt_cost(cost[:lo + 3]), rel=1e-12, abs=1e-9)


def test_cheaper_than_greedy_on_uniform_points():
    inst = make_instance("uniform", 60, seed=5)
    m = BatchedPushRelabelMatcher(inst.n_servers, PushRelabelParams(bid=True), device="cpu")
    for lo in range(0, 60, 30):
        m.insert_batch(inst.cost[lo:lo + 30])
    opt = opt_cost(inst.cost)
    assert m.invariant_violations() == []
    assert m.cost() / opt < 1.05 < matching_cost(inst.cost, greedy(inst.cost)) / opt


def test_a_tight_memory_budget_recomputes_instead_of_storing_and_gives_the_same_matching(random_cost):
    cost = random_cost(11, 25)
    runs = []
    for budget in (None, 25 * 25 * 6):  # room for the distances (4 B/pair), not the scaled ones
        m = BatchedPushRelabelMatcher(25, PushRelabelParams(bid=True), device="cpu", memory_budget=budget)
        for lo in range(0, 25, 10):
            m.insert_batch(cost[lo:lo + 10])
        runs.append((m.materialized, m.assignment().tolist(), m.stats["phases"]))
    assert runs[0][0] and not runs[1][0]
    assert runs[0][1:] == runs[1][1:]


def test_bad_batches_name_the_argument():
    m = BatchedPushRelabelMatcher(3, device="cpu")
    with pytest.raises(ValueError, match=r"distances: expected shape \(batch, 3\)"):
        m.insert_batch(np.ones((2, 4)))
    with pytest.raises(ValueError, match="distances: must be finite"):
        m.insert_batch(np.array([[1.0, -1.0, 0.0]]))
    with pytest.raises(ValueError, match="exceed the 3 servers"):
        m.insert_batch(np.ones((4, 3)))
    with pytest.raises(ValueError, match="n_servers"):
        BatchedPushRelabelMatcher(0)
