"""CP-SAT and PyVRP references: validated tours, optimality at small n, PyVRP is TSPTW-only."""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.heuristics.routing import lazymask as lm
from optiforge.heuristics.routing.instances import generate
from optiforge.heuristics.routing.validate import check_tours

pytest.importorskip("ortools")
pytest.importorskip("pyvrp")
from optiforge.heuristics.routing.reference import (  # noqa: E402
    OPTIMAL,
    cpsat_solve,
    pyvrp_solve,
    tours_of,
)


@pytest.mark.parametrize("problem", ["tsptw", "tspdl"])
def test_cpsat_optimum_is_feasible_and_beats_greedy(problem: str) -> None:
    ins = generate(problem, "hard", 9, 4, seed=11)
    refs = [cpsat_solve(ins, b, time_limit_s=20) for b in range(ins.size)]
    assert all(r.status == OPTIMAL for r in refs)
    opt = check_tours(ins, tours_of(refs, ins.n))
    assert opt.feasible.all()
    greedy = check_tours(ins, lm.decode(ins, lm.constraint_chooser(ins), budget=None).tours)
    assert (opt.length <= greedy.length + 1e-3).all()
    # Integer scaling costs at most n / SCALE in length; random search hits no better tour.
    rand = check_tours(ins, lm.decode(ins, lm.random_chooser(5), budget=None).tours)
    assert (opt.length <= rand.length + 1e-3).all()


def test_pyvrp_matches_the_cpsat_optimum_on_small_tsptw() -> None:
    ins = generate("tsptw", "hard", 9, 3, seed=4)
    opt = check_tours(ins, tours_of([cpsat_solve(ins, b) for b in range(3)], 9))
    pv = check_tours(ins, tours_of([pyvrp_solve(ins, b, time_limit_s=0.3) for b in range(3)], 9))
    assert pv.feasible.all()
    np.testing.assert_allclose(pv.length, opt.length, atol=1e-3)


def test_pyvrp_refuses_draft_limits() -> None:
    with pytest.raises(ValueError, match="draft"):
        pyvrp_solve(generate("tspdl", "hard", 8, 1), 0)
