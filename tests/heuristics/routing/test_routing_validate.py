"""The trusted checker: lengths, violated nodes, lateness; PIP's table metrics."""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.heuristics.routing.instances import RoutingInstances
from optiforge.heuristics.routing.validate import TourCheck, check_tours, table_row

# A line: depot at 0, customers at 0.1, 0.2, 0.3 (travel = |x_i - x_j|).
LINE = np.array([[[0.0, 0.0], [0.1, 0.0], [0.2, 0.0], [0.3, 0.0]]])


def _tw(start: list[float], end: list[float]) -> RoutingInstances:
    return RoutingInstances("tsptw", "custom", LINE, tw_start=np.array([start]), tw_end=np.array([end]))


def test_tsptw_waiting_is_allowed_and_lateness_is_summed() -> None:
    ins = _tw([0, 0.5, 0, 0], [10, 1.0, 0.55, 0.58])
    # 0 -> 1 (arrive 0.1, wait to 0.5) -> 2 (0.6 > 0.55) -> 3 (0.7 > 0.58) -> depot
    c = check_tours(ins, np.array([[0, 1, 2, 3]]))
    assert c.complete[0]
    np.testing.assert_allclose(c.length, [0.6])
    assert c.violated[0] == 2
    np.testing.assert_allclose(c.lateness, [0.05 + 0.12])
    assert not c.feasible[0]
    ok = check_tours(_tw([0, 0.5, 0, 0], [10, 1.0, 0.65, 0.75]), np.array([[0, 1, 2, 3]]))
    assert ok.feasible[0] and ok.violated[0] == 0


def test_tsptw_depot_deadline_is_checked_on_return() -> None:
    c = check_tours(_tw([0, 0, 0, 0], [0.5, 9, 9, 9]), np.array([[0, 1, 2, 3]]))
    assert c.violated[0] == 1
    np.testing.assert_allclose(c.lateness, [0.1])


def test_tspdl_load_on_arrival_plus_demand_within_draft() -> None:
    demand = np.array([[0, 1 / 3, 1 / 3, 1 / 3]])
    draft = np.array([[1, 1 / 3, 1.0, 2 / 3]])
    ins = RoutingInstances("tspdl", "custom", LINE, demand=demand, draft=draft)
    good = check_tours(ins, np.array([[0, 1, 3, 2]]))
    assert good.feasible[0]
    bad = check_tours(ins, np.array([[0, 2, 1, 3]]))  # node 1 reached with load 2/3 > 1/3
    assert bad.violated[0] == 2
    np.testing.assert_allclose(bad.lateness, [1 / 3 + 1 / 3])


def test_incomplete_and_malformed_tours() -> None:
    ins = _tw([0, 0, 0, 0], [9, 9, 9, 9])
    c = check_tours(ins, np.array([[-1, -1, -1, -1]]))
    assert not c.complete[0] and np.isnan(c.length[0]) and c.violated[0] == 4
    assert not check_tours(ins, np.array([[0, 1, 1, 3]])).complete[0]
    assert not check_tours(ins, np.array([[1, 0, 2, 3]])).complete[0]  # must start at the depot
    with pytest.raises(ValueError, match="tours: expected shape"):
        check_tours(ins, np.array([[0, 1, 2]]))
    with pytest.raises(ValueError, match="integer"):
        check_tours(ins, np.array([[0.0, 1, 2, 3]]))


def test_table_row_follows_pip_definitions() -> None:
    def check(lengths: list[float], feasible: list[bool]) -> TourCheck:
        f = np.array(feasible)
        return TourCheck(np.array(lengths), np.where(f, 0, 1), np.zeros(3), np.ones(3, dtype=bool))

    samples = [check([10, 20, 30], [True, False, False]), check([12, 18, 31], [True, True, False])]
    row = table_row("m", samples, time_s=2.0, reference=np.array([10.0, 9.0, np.nan]))
    assert row.sol_inf == pytest.approx(100 * 3 / 6)
    assert row.inst_inf == pytest.approx(100 / 3)
    assert row.obj == pytest.approx((10 + 18) / 2)
    assert row.gap == pytest.approx((0 + 100) / 2)
    assert row.as_dict()["instances"] == 3
