"""The CPU push-relabel reference: valid matchings, the paper's invariants after every insertion,
the exact fallback, omega doubling, and the paper's headline (cheaper than greedy)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optiforge.heuristics.matching import (
    PushRelabelMatcher,
    PushRelabelParams,
    greedy,
    make_instance,
    matching_cost,
    opt_cost,
)

PARAMS = st.builds(
    PushRelabelParams,
    delta=st.sampled_from([0.001, 0.05, 0.3]),
    epsilon=st.sampled_from([None, 0.5]),
    ymax_factor=st.sampled_from([30.0, 2.0]),  # 2: small y^max, so requests climb the levels
    bid=st.booleans(),
)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 10), params=PARAMS)
def test_every_insertion_keeps_a_valid_matching_and_the_dual_invariants(random_cost, seed, n, params):
    cost = random_cost(seed, n)
    m = PushRelabelMatcher(n, params)
    for i, row in enumerate(cost):
        m.insert(row)
        assert m.invariant_violations() == []
        a = m.assignment()
        assert len(a) == i + 1 and len(set(a.tolist())) == i + 1
        assert m.cost() == pytest.approx(matching_cost(cost[: i + 1], a))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 9), tail=st.booleans())
def test_exact_fallback_equals_linear_sum_assignment_on_every_prefix(random_cost, seed, n, tail):
    # ymax_factor=0: every request goes straight past the top level to the Hungarian step;
    # exact_tail >= n: the whole run is the exact tail. Either way each prefix is optimal.
    params = PushRelabelParams(exact_tail=n) if tail else PushRelabelParams(ymax_factor=0.0)
    cost = random_cost(seed, n)
    m = PushRelabelMatcher(n, params)
    for i, row in enumerate(cost):
        m.insert(row)
        assert m.cost() == pytest.approx(opt_cost(cost[: i + 1]), rel=1e-12, abs=1e-9)
        assert m.invariant_violations() == []


def test_cheaper_than_greedy_and_close_to_opt_on_uniform_points():
    inst = make_instance("uniform", 120, seed=3)
    m = PushRelabelMatcher(inst.n_servers, PushRelabelParams(bid=True))
    for row in inst.cost:
        m.insert(row)
    opt, g = opt_cost(inst.cost), matching_cost(inst.cost, greedy(inst.cost))
    assert m.cost() < g
    assert m.cost() / opt < 1.05 < g / opt  # the paper's qualitative headline, at small scale
    assert m.stats.rebuilds >= 1  # omega started at the first request's nearest server and doubled


def test_bid_keeps_the_cost_and_cuts_the_steps():
    inst = make_instance("taxi", 50, seed=1)
    runs = {}
    for bid in (False, True):
        m = PushRelabelMatcher(inst.n_servers, PushRelabelParams(bid=bid))
        for row in inst.cost:
            m.insert(row)
        runs[bid] = (m.cost(), m.stats.pushes + m.stats.relabels)
    assert runs[True][0] == pytest.approx(runs[False][0], rel=0.05)
    assert runs[True][1] < runs[False][1]


def test_first_request_on_a_server_still_gets_a_positive_omega():
    cost = np.array([[0.0, 2.0, 5.0], [1.0, 0.0, 4.0], [3.0, 3.0, 0.0]])
    m = PushRelabelMatcher(3)
    for row in cost:
        m.insert(row)
    assert m.omega > 0 and m.cost() == 0.0


@pytest.mark.parametrize(
    ("row", "match"),
    [([1.0, 2.0], "expected 3 distances"), ([1.0, -1.0, 2.0], "non-negative"),
     ([1.0, np.nan, 2.0], "finite")],
)
def test_bad_rows_name_the_argument(row, match):
    with pytest.raises(ValueError, match=f"distances: .*{match}"):
        PushRelabelMatcher(3).insert(row)


def test_more_requests_than_servers_is_refused():
    m = PushRelabelMatcher(2)
    m.insert([1.0, 2.0])
    m.insert([2.0, 1.0])
    with pytest.raises(ValueError, match="all 2 servers are matched"):
        m.insert([1.0, 1.0])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"delta": 0.0}, "delta"), ({"delta": 1.5}, "delta"), ({"epsilon": 2.0}, "epsilon"),
     ({"levels": -1}, "levels"), ({"ymax_factor": -1.0}, "ymax_factor"), ({"exact_tail": -3}, "exact_tail")],
)
def test_bad_params_name_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PushRelabelParams(**kwargs)
    with pytest.raises(TypeError, match="params"):
        PushRelabelMatcher(3, params={"delta": 0.1})


def test_schedule_follows_the_paper_formulas():
    m = PushRelabelMatcher(1000)
    s = m.schedule
    assert s.eps == pytest.approx(1 / (2 * np.log(1000) / np.log(3)))  # 1 / (2 log3(1/delta))
    assert s.mu == 8  # ceil(log3(2000)) + 1
    assert s.ymax[0] == np.ceil(30 / s.eps * 1000 ** 0.001)
    assert s.bound[2] == pytest.approx(1000 ** (1 - 4 * 0.001))  # Phi_2 = (9 - 1) delta / 2
    d = np.array([0.0, 0.01, 0.037, 50.0])
    d0 = np.ceil(d * 2 * 1000 / (s.eps * 2.0))
    assert s.scaled(d, 0, 2.0, capped=False).tolist() == d0.tolist()
    assert s.scaled(d, 1, 2.0, capped=False).tolist() == np.ceil(d0 / s.divisor[0]).tolist()
    assert s.divisor[0] == pytest.approx(2 * (1 + s.eps) ** 2 * 1000 ** 0.001)
    # Stored values are capped at y^max + 2, beyond which no edge can ever be admissible.
    assert s.scaled(d, 0, 2.0).tolist() == np.minimum(d0, s.ymax[0] + 2).tolist()
