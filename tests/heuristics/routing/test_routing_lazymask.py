"""LazyMask decoding: exhaustive with R = inf (checked against CP-SAT), masks never lose a feasible node."""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.heuristics.routing import lazymask as lm
from optiforge.heuristics.routing.instances import RoutingInstances, generate
from optiforge.heuristics.routing.validate import check_tours

pytest.importorskip("ortools")
from optiforge.heuristics.routing.reference import INFEASIBLE, OPTIMAL, cpsat_solve  # noqa: E402


@pytest.mark.parametrize(("problem", "hardness", "n"), [("tsptw", "medium", 8), ("tsptw", "hard", 9),
                                                        ("tspdl", "hard", 9)])
def test_unlimited_budget_is_feasible_exactly_when_cpsat_is(problem: str, hardness: str, n: int) -> None:
    ins = generate(problem, hardness, n, 12, seed=7)
    for lookahead in (1, 2, 3):
        result = lm.decode(ins, lm.random_chooser(seed=lookahead), lookahead=lookahead, budget=None)
        check = check_tours(ins, result.tours)
        assert (result.status != lm.GAVE_UP).all()
        # A tour is returned only when it is feasible; otherwise the instance is proven infeasible.
        np.testing.assert_array_equal(check.feasible, result.status == lm.COMPLETE)
        for b in range(ins.size):
            ref = cpsat_solve(ins, b, time_limit_s=20)
            assert ref.status in (OPTIMAL, INFEASIBLE)
            assert (ref.status == INFEASIBLE) == bool(result.proven_infeasible[b])


def test_medium_windows_contain_infeasible_instances_that_are_proven() -> None:
    # Medium windows are not feasible by construction: the test above must see both outcomes.
    ins = generate("tsptw", "medium", 8, 12, seed=7)
    result = lm.decode(ins, lm.constraint_chooser(ins), budget=None)
    assert 0 < result.proven_infeasible.sum() < ins.size


@pytest.mark.parametrize("problem", ["tsptw", "tspdl"])
@pytest.mark.parametrize("lookahead", [1, 2, 3])
def test_masks_never_exclude_the_optimal_tour(problem: str, lookahead: int) -> None:
    ins = generate(problem, "hard", 9, 4, seed=2)
    optimum = np.stack([cpsat_solve(ins, b, time_limit_s=20).tour for b in range(ins.size)])

    def follow(d: lm.Decision) -> np.ndarray:
        return optimum[d.rows, d.step + 1]

    result = lm.decode(ins, follow, lookahead=lookahead, budget=None)  # raises if a step is masked
    np.testing.assert_array_equal(result.tours, optimum)
    assert (result.backtracks == 0).all()


def test_deeper_lookahead_backtracks_less() -> None:
    ins = generate("tsptw", "medium", 12, 16, seed=3)
    counts = [lm.decode(ins, lm.constraint_chooser(ins), lookahead=k, budget=None).backtracks.sum()
              for k in (1, 2, 3)]
    assert counts[0] > counts[1] >= counts[2]


def test_budget_zero_is_pip_like_and_gives_up() -> None:
    ins = generate("tsptw", "hard", 20, 48, seed=1)
    pip = lm.decode(ins, lm.constraint_chooser(ins), budget=0)
    full = lm.decode(ins, lm.constraint_chooser(ins), budget=None)
    assert (pip.status == lm.GAVE_UP).any()
    assert (full.status == lm.COMPLETE).all()
    assert check_tours(ins, full.tours).feasible.all()
    gave_up = pip.status == lm.GAVE_UP
    assert (pip.tours[gave_up] == -1).all()


def test_training_relaxation_completes_every_rollout() -> None:
    ins = generate("tsptw", "medium", 12, 16, seed=3)
    result = lm.decode(ins, lm.constraint_chooser(ins), budget=2, relax_on_budget=True)
    assert (result.status != lm.GAVE_UP).all()
    complete = result.status == lm.COMPLETE
    assert check_tours(ins, result.tours).complete[complete].all()
    assert (result.backtracks <= 2).all()


def test_refinement_counts_reach_the_chooser() -> None:
    ins = generate("tsptw", "medium", 10, 8, seed=3)
    seen: list[int] = []

    def spy(d: lm.Decision) -> np.ndarray:
        seen.extend(d.refinements.tolist())
        return lm.constraint_chooser(ins)(d)

    result = lm.decode(ins, spy, budget=None)
    assert result.backtracks.sum() > 0 and max(seen) > 0


def test_chooser_outside_the_mask_is_rejected() -> None:
    ins = generate("tsptw", "hard", 6, 2, seed=0)
    with pytest.raises(ValueError, match="outside the mask"):
        lm.decode(ins, lambda d: np.zeros(d.rows.size, dtype=np.int64))
    with pytest.raises(ValueError, match="lookahead"):
        lm.decode(ins, lm.random_chooser(), lookahead=4)
    with pytest.raises(ValueError, match="budget"):
        lm.decode(ins, lm.random_chooser(), budget=-1)


def test_an_obviously_infeasible_instance_is_proven_at_step_zero() -> None:
    coords = np.array([[[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0]]])
    # Both customers close at 1.5 but lie 2 apart: whichever comes second is late.
    ins = RoutingInstances("tsptw", "custom", coords, tw_start=np.zeros((1, 3)),
                           tw_end=np.array([[10.0, 1.5, 1.5]]))
    result = lm.decode(ins, lm.random_chooser(), lookahead=1, budget=None)
    assert result.status[0] == lm.INFEASIBLE and (result.tours == -1).all()
    assert cpsat_solve(ins, 0).status == INFEASIBLE
