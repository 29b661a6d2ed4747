"""Reference solvers, through the solvers' own libraries: OR-Tools CP-SAT and PyVRP.

* :func:`cpsat_solve`: an exact model, ``AddCircuit`` over the arcs plus one resource variable
  per node (arrival time for TSPTW, load for TSPDL) linked by enforced inequalities. Within its
  time limit it returns a proven optimum, a feasible tour, or a **proof of infeasibility**.
* :func:`pyvrp_solve`: TSPTW as a one-vehicle VRPTW for PyVRP's hybrid genetic search (the
  reference for tour quality at n = 50-100, as LMask's gaps). PyVRP has no draft limits, so it
  is TSPTW only; a PyVRP "no feasible solution" proves nothing.

Both solvers need integers. Times, distances and loads are scaled by :data:`SCALE` and rounded
towards the *relaxation* (travel times and demands down, window ends and drafts up, window
starts down), so every feasible tour of the real instance stays feasible: an infeasibility proof
is a proof for the real instance. Returned tours are re-checked by the trusted validator, and
lengths are recomputed in floating point.

Both need the ``routing`` extra (``pip install 'optiforge[routing]'``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optiforge.extras import missing_extra
from optiforge.heuristics.routing.instances import RoutingInstances

SCALE = 10_000

OPTIMAL, FEASIBLE, INFEASIBLE, UNKNOWN = "optimal", "feasible", "infeasible", "unknown"


@dataclass(frozen=True)
class ReferenceResult:
    """One instance's reference answer.

    Attributes
    ----------
    status : str
        ``optimal`` / ``feasible`` (a tour, optimality not proven) / ``infeasible`` (proven) /
        ``unknown`` (nothing found in time).
    tour : numpy.ndarray or None
        ``(n,)`` tour from the depot.
    runtime_s : float
        Solver wall time.
    """

    status: str
    tour: np.ndarray | None
    runtime_s: float


def _int_data(instances: RoutingInstances, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scaled (travel, lower, upper): relaxed rounding, see the module docstring."""
    travel = np.floor(instances.distances()[b] * SCALE).astype(np.int64)
    if instances.problem == "tsptw":
        lo = np.floor(instances.tw_start[b] * SCALE).astype(np.int64)
        hi = np.ceil(instances.tw_end[b] * SCALE).astype(np.int64)
    else:
        lo = np.floor(instances.demand[b] * SCALE).astype(np.int64)
        hi = np.ceil(instances.draft[b] * SCALE).astype(np.int64)
    return travel, lo, hi


def cpsat_solve(instances: RoutingInstances, b: int, *, time_limit_s: float = 10.0,
                workers: int = 1, hint: np.ndarray | None = None) -> ReferenceResult:
    """Solve instance ``b`` with CP-SAT (exact for small ``n``; proves infeasibility).

    Parameters
    ----------
    instances : RoutingInstances
        The batch holding the instance.
    b : int
        Index of the instance.
    time_limit_s : float
        CP-SAT's ``max_time_in_seconds``.
    workers : int
        CP-SAT's ``num_workers`` (search threads).
    hint : numpy.ndarray, optional
        A tour to start the search from (e.g. greedy-C's; TSPDL's loads make CP-SAT slow to
        find a first tour without one). It need not be feasible.

    Returns
    -------
    ReferenceResult
    """
    try:
        from ortools.sat.python import cp_model
    except ImportError as exc:
        raise missing_extra("routing", "the CP-SAT reference", "ortools") from exc
    n = instances.n
    travel, lo, hi = _int_data(instances, b)
    model = cp_model.CpModel()
    tsptw = instances.problem == "tsptw"
    if tsptw:
        res = [model.NewIntVar(int(min(lo[i], hi[i])), int(hi[i]), f"t{i}") for i in range(n)]
        model.Add(res[0] == 0)
    else:
        res = [model.NewIntVar(0, int(max(hi[i], 0)), f"load{i}") for i in range(n)]
        model.Add(res[0] == 0)
    arcs, x = [], {}
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            lit = model.NewBoolVar(f"x{i}_{j}")
            x[i, j] = lit
            arcs.append((i, j, lit))
            if j != 0:
                step = int(travel[i, j]) if tsptw else int(lo[j])
                model.Add(res[j] >= res[i] + step).OnlyEnforceIf(lit)
            elif tsptw:
                model.Add(res[i] + int(travel[i, 0]) <= int(hi[0])).OnlyEnforceIf(lit)
    model.AddCircuit(arcs)
    if hint is not None:
        used = set(zip(hint.tolist(), np.roll(hint, -1).tolist(), strict=True))
        for (i, j), lit in x.items():
            model.AddHint(lit, (i, j) in used)
    model.Minimize(sum(int(travel[i, j]) * lit for (i, j), lit in x.items()))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit_s)
    solver.parameters.num_workers = int(workers)
    code = solver.Solve(model)
    runtime = float(solver.WallTime())
    if code == cp_model.INFEASIBLE:
        return ReferenceResult(INFEASIBLE, None, runtime)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return ReferenceResult(UNKNOWN, None, runtime)
    succ = {i: j for (i, j), lit in x.items() if solver.Value(lit)}
    tour = [0]
    while len(tour) < n:
        tour.append(succ[tour[-1]])
    return ReferenceResult(OPTIMAL if code == cp_model.OPTIMAL else FEASIBLE,
                           np.array(tour, dtype=np.int64), runtime)


def pyvrp_solve(instances: RoutingInstances, b: int, *, time_limit_s: float = 2.0,
                seed: int = 0) -> ReferenceResult:
    """Solve TSPTW instance ``b`` with PyVRP (one vehicle, integer-scaled, durations = distances).

    Parameters
    ----------
    instances : RoutingInstances
        TSPTW instances.
    b : int
        Index of the instance.
    time_limit_s : float
        PyVRP's ``MaxRuntime``.
    seed : int
        PyVRP's seed.

    Raises
    ------
    ValueError
        For TSPDL instances (PyVRP has no draft limits).
    """
    if instances.problem != "tsptw":
        raise ValueError("problem: PyVRP has no draft limits; use the CP-SAT reference for tspdl")
    try:
        from pyvrp import Model
        from pyvrp.stop import MaxRuntime
    except ImportError as exc:
        raise missing_extra("routing", "the PyVRP reference", "pyvrp") from exc
    n = instances.n
    travel, lo, hi = _int_data(instances, b)
    model = Model()
    coords = instances.coords[b]
    locs = [model.add_location(float(coords[i, 0]), float(coords[i, 1])) for i in range(n)]
    depot = model.add_depot(locs[0], tw_early=0, tw_late=int(hi[0]))
    model.add_vehicle_type(num_available=1, start_depot=depot, end_depot=depot, tw_early=0,
                           tw_late=int(hi[0]))
    for i in range(1, n):
        model.add_client(locs[i], tw_early=int(lo[i]), tw_late=int(hi[i]))
    for i in range(n):
        for j in range(n):
            if i != j:
                model.add_edge(locs[i], locs[j], distance=int(travel[i, j]), duration=int(travel[i, j]))
    result = model.solve(stop=MaxRuntime(float(time_limit_s)), seed=int(seed), display=False)
    best = result.best
    if not best.is_feasible() or best.num_routes() != 1:
        return ReferenceResult(UNKNOWN, None, float(result.runtime))
    # Clients are numbered from 0 in the order added: client k is node k + 1.
    visits = [int(a.idx) + 1 for a in best.routes()[0] if a.is_client()]
    return ReferenceResult(FEASIBLE, np.array([0, *visits], dtype=np.int64), float(result.runtime))


def tours_of(results: list[ReferenceResult], n: int) -> np.ndarray:
    """``(B, n)`` tours of several results (rows of ``-1`` where none was found)."""
    out = np.full((len(results), n), -1, dtype=np.int64)
    for k, r in enumerate(results):
        if r.tour is not None:
            out[k] = r.tour
    return out

