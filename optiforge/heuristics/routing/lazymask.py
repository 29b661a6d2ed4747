"""LazyMask: constructive decoding with lookahead masks, backtracking and lazy refinement [1]_.

A tour is built one node at a time by a *chooser* (a trained policy, a greedy rule or an
evolved heuristic) that only ever picks from a mask ``S_hat(pi_1:t)``, an over-estimate of the
potential set ``S(pi_1:t)`` of nodes after which a feasible completion exists:

1. ``S_hat`` non-empty: the chooser picks ``j``; the resource (arrival time or load) is
   advanced, ``j`` is pushed and the new state's ``S_hat`` is computed by lookahead;
2. ``S_hat`` empty at step ``t > 0``: backtrack: pop ``pi_t``, delete it from the mask of step
   ``t - 1`` (the *lazy refinement*: a node whose every completion failed is never offered
   again from that prefix), count the refinement and the backtrack;
3. ``S_hat`` empty at step 0: every start was refuted, so the instance is **proven infeasible**;
4. once ``R`` backtracks are spent: at test time the instance stops unresolved; in training
   (``relax_on_budget``) an empty mask is relaxed to "all unvisited", so the rollout finishes
   and the penalised reward judges it.

Lookahead masks (``lookahead`` = 1, 2, 3; TSPTW shown, TSPDL replaces arrival times by loads,
``a_j = load + delta_j`` against the draft ``dl_j``; the unvisited set includes the depot
as a node that must still be reached):

* 1: ``S_hat`` = unvisited if every unvisited ``k`` has ``t + d_ik <= l_k``, else empty;
* 2: ``j`` with ``a_j = max(t + d_ij, e_j) <= l_j`` and ``max(a_j + d_jk, e_k) <= l_k`` for every
  other unvisited ``k`` (PIP's one-step mask; B x n x n work, the decoder's hot path);
* 3: as 2, and some grand-successor ``k`` after which every remaining node is still reachable.

Each test is a necessary condition of feasibility (travel times obey the triangle
inequality), so ``S_hat`` never loses a feasible node and, with ``R = inf``, the search is an
exhaustive depth-first search: it returns a feasible tour whenever one exists (Prop. 4.1 of
[1]_) and reports infeasibility only when none does.

The batch is decoded together: a ``(B, n)`` state with per-step stacks of nodes, resources,
masks (``(B, n, n)``) and refinement counts; each iteration advances every running instance by
one forward or backward step with array operations, nothing looped per instance.

Deviation from [1]_: the decoder is numpy, not torch, because the same decoder runs the
evolved heuristics inside the numpy-only sandbox (one copy of the method); a torch policy
plugs in as a chooser (its log-probabilities live in the policy, indexed by step, so popped
steps are overwritten exactly as LMask's stacks are).

References
----------
.. [1] T. Li, H. Zou, J. Wu, Z. Wen, "Learn to Solve Constrained Routing Problems with Lazy
   Masking", ICLR 2026, arXiv:2505.17938 (section 4; code optsuite/LMask, ``LazyMaskEnvBase``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from optiforge.heuristics.routing.instances import RoutingInstances
from optiforge.heuristics.routing.validate import TOLERANCE

RUNNING, COMPLETE, INFEASIBLE, GAVE_UP = 0, 1, 2, 3
"""Decoder status per instance: still decoding; a complete tour; proven infeasible; budget spent."""
STATUS_NAMES = ("running", "complete", "infeasible", "gave_up")


class Rules:
    """How one problem advances its resource and where its limits are (vectorised over rows)."""

    must_return: bool = False

    def __init__(self, instances: RoutingInstances) -> None:
        self.instances = instances
        self.dist = instances.distances()

    def arrival(self, rows: np.ndarray, current: np.ndarray, resource: np.ndarray) -> np.ndarray:
        """``(k, n)`` resource on arriving at each node from ``current``."""
        raise NotImplementedError

    def arrival2(self, rows: np.ndarray, arrival: np.ndarray) -> np.ndarray:
        """``(k, n, n)``: ``[j, m]`` is the resource on arriving at ``m`` via ``j``."""
        raise NotImplementedError

    def limit(self, rows: np.ndarray) -> np.ndarray:
        """``(k, n)`` upper limit of the resource at each node."""
        raise NotImplementedError


class TimeWindowRules(Rules):
    """TSPTW: the resource is the time; waiting for the window's start is allowed."""

    must_return = True

    def arrival(self, rows: np.ndarray, current: np.ndarray, resource: np.ndarray) -> np.ndarray:
        return np.maximum(resource[:, None] + self.dist[rows, current], self.instances.tw_start[rows])

    def arrival2(self, rows: np.ndarray, arrival: np.ndarray) -> np.ndarray:
        return np.maximum(arrival[:, :, None] + self.dist[rows], self.instances.tw_start[rows][:, None, :])

    def limit(self, rows: np.ndarray) -> np.ndarray:
        return self.instances.tw_end[rows]


class DraftLimitRules(Rules):
    """TSPDL: the resource is the load carried; it only grows."""

    def arrival(self, rows: np.ndarray, current: np.ndarray, resource: np.ndarray) -> np.ndarray:
        return resource[:, None] + self.instances.demand[rows]

    def arrival2(self, rows: np.ndarray, arrival: np.ndarray) -> np.ndarray:
        return arrival[:, :, None] + self.instances.demand[rows][:, None, :]

    def limit(self, rows: np.ndarray) -> np.ndarray:
        return self.instances.draft[rows]


def rules_for(instances: RoutingInstances) -> Rules:
    """The :class:`Rules` of the instances' problem."""
    return TimeWindowRules(instances) if instances.problem == "tsptw" else DraftLimitRules(instances)


MaskFn = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]
"""``mask_fn(rows, current, resource, unvisited, pending) -> (k, n)`` bool: a lookahead-2 mask
computed elsewhere (e.g. :func:`optiforge.kernels.lookahead2_mask` on a GPU); it must equal
:func:`lookahead2_mask`'s."""


def lookahead2_mask(arrival: np.ndarray, arrival2: np.ndarray, limit: np.ndarray,
                    unvisited: np.ndarray, pending: np.ndarray) -> np.ndarray:
    """The lookahead-2 mask: ``j`` reachable in time and every other pending node still reachable after it.

    Parameters
    ----------
    arrival : numpy.ndarray
        ``(k, n)`` resource on arriving at each node now.
    arrival2 : numpy.ndarray
        ``(k, n, n)`` resource on arriving at ``m`` via ``j``.
    limit : numpy.ndarray
        ``(k, n)`` limits.
    unvisited : numpy.ndarray
        ``(k, n)`` bool, the candidates.
    pending : numpy.ndarray
        ``(k, n)`` bool, the nodes that must still be reached (unvisited, plus the depot for TSPTW).
    """
    n = arrival.shape[1]
    reach = (arrival2 <= limit[:, None, :] + TOLERANCE) | ~pending[:, None, :] | np.eye(n, dtype=bool)
    return unvisited & (arrival <= limit + TOLERANCE) & reach.all(axis=2)


def lookahead_mask(rules: Rules, rows: np.ndarray, current: np.ndarray, resource: np.ndarray,
                   unvisited: np.ndarray, depth: int) -> np.ndarray:
    """``S_hat`` of the given states by lookahead ``depth`` (0 = every unvisited node)."""
    if depth == 0:
        return unvisited.copy()
    pending = unvisited.copy()
    pending[:, 0] |= rules.must_return
    arrival = rules.arrival(rows, current, resource)
    limit = rules.limit(rows)
    ok = arrival <= limit + TOLERANCE
    if depth == 1:
        return unvisited & (ok | ~pending).all(axis=1, keepdims=True)
    arrival2 = rules.arrival2(rows, arrival)
    mask = lookahead2_mask(arrival, arrival2, limit, unvisited, pending)
    if depth == 2:
        return mask
    # depth 3: some grand-successor k after which every other pending node is reachable.
    n = arrival.shape[1]
    eye = np.eye(n, dtype=bool)
    ok2 = (arrival2 <= limit[:, None, :] + TOLERANCE) & unvisited[:, None, :] & ~eye
    arrival3 = rules.arrival2(np.repeat(rows, n), arrival2.reshape(-1, n)).reshape(-1, n, n, n)
    pend3 = pending[:, None, None, :] & ~eye[None, :, None, :] & ~eye[None, None, :, :]
    good = ((arrival3 <= limit[:, None, None, :] + TOLERANCE) | ~pend3).all(axis=3) & ok2
    last = unvisited.sum(axis=1, keepdims=True) <= 1
    return mask & (good.any(axis=2) | last)


@dataclass(frozen=True)
class Decision:
    """What a chooser sees for the ``k`` instances taking a forward step.

    Attributes
    ----------
    rows : numpy.ndarray
        ``(k,)`` instance indices into the decoded batch.
    step : numpy.ndarray
        ``(k,)`` position ``t`` of the current node (0 = at the depot); the choice fills ``t + 1``.
    current : numpy.ndarray
        ``(k,)`` current node.
    resource : numpy.ndarray
        ``(k,)`` time (TSPTW) or load (TSPDL) on leaving the current node.
    mask : numpy.ndarray
        ``(k, n)`` bool, the nodes the chooser may pick.
    refinements : numpy.ndarray
        ``(k,)`` how many times this step's mask has been refined (backtracked into).
    budget_reached : numpy.ndarray
        ``(k,)`` bool, the backtracking budget is spent (training relaxation in force).
    violated : numpy.ndarray
        ``(k,)`` bool, the partial tour already breaks a constraint (only after a relaxation).
    """

    rows: np.ndarray
    step: np.ndarray
    current: np.ndarray
    resource: np.ndarray
    mask: np.ndarray
    refinements: np.ndarray
    budget_reached: np.ndarray
    violated: np.ndarray


Chooser = Callable[[Decision], np.ndarray]
"""Returns the ``(k,)`` next nodes, each inside its row of ``decision.mask``."""


@dataclass(frozen=True)
class DecodeResult:
    """The outcome per instance.

    Attributes
    ----------
    tours : numpy.ndarray
        ``(B, n)`` tours from the depot; rows of ``-1`` where no tour was built.
    status : numpy.ndarray
        ``(B,)`` :data:`COMPLETE`, :data:`INFEASIBLE` (proven) or :data:`GAVE_UP` (budget spent).
    backtracks : numpy.ndarray
        ``(B,)`` backtracking steps taken.
    iterations : int
        Decoder iterations (forward or backward steps of the slowest instance).
    """

    tours: np.ndarray
    status: np.ndarray
    backtracks: np.ndarray
    iterations: int

    @property
    def proven_infeasible(self) -> np.ndarray:
        """Instances the search refuted at step 0."""
        return self.status == INFEASIBLE


def decode(instances: RoutingInstances, chooser: Chooser, *, lookahead: int = 2,
           budget: float | None = None, relax_on_budget: bool = False,
           mask_fn: MaskFn | None = None) -> DecodeResult:
    """Build one tour per instance with LazyMask.

    Parameters
    ----------
    instances : RoutingInstances
        The batch to decode.
    chooser : callable
        ``chooser(decision) -> (k,)`` next nodes; it must pick inside ``decision.mask``.
    lookahead : int
        Depth of the initial mask: 0 (only unvisited, as plain greedy rules), 1, 2 (default,
        LMask's) or 3.
    budget : float or None
        The backtracking budget ``R`` (backward steps per instance); ``None`` is unlimited,
        0 disables backtracking (PIP-like decoding).
    relax_on_budget : bool
        Training mode: once the budget is spent, an empty mask becomes "all unvisited".
    mask_fn : callable, optional
        A :data:`MaskFn` replacing the built-in lookahead-2 mask (``lookahead=2`` only).

    Returns
    -------
    DecodeResult

    Raises
    ------
    ValueError
        If ``lookahead`` or ``budget`` is out of range, or the chooser picks a masked node.
    """
    if isinstance(lookahead, bool) or lookahead not in (0, 1, 2, 3):
        raise ValueError(f"lookahead: expected 0, 1, 2 or 3, got {lookahead!r}")
    limit_r = np.inf if budget is None else float(budget)
    if not limit_r >= 0:
        raise ValueError(f"budget: expected >= 0 or None, got {budget!r}")
    rules = rules_for(instances)
    B, n = instances.size, instances.n
    all_rows = np.arange(B)
    nodes = np.full((B, n), -1, dtype=np.int64)
    nodes[:, 0] = 0
    resource = np.zeros((B, n))
    masks = np.zeros((B, n, n), dtype=bool)
    refine = np.zeros((B, n), dtype=np.int64)
    visited = np.zeros((B, n), dtype=bool)
    visited[:, 0] = True
    broken = np.zeros((B, n), dtype=bool)  # per step: the prefix violates a constraint
    step = np.zeros(B, dtype=np.int64)
    backtracks = np.zeros(B, dtype=np.int64)
    budget_hit = np.zeros(B, dtype=bool) | (limit_r <= 0)
    status = np.full(B, RUNNING, dtype=np.int64)

    def fill_masks(rows: np.ndarray, s: np.ndarray) -> None:
        cur, res = nodes[rows, s], resource[rows, s]
        unvisited = ~visited[rows]
        if mask_fn is not None and lookahead == 2:
            pending = unvisited.copy()
            pending[:, 0] |= rules.must_return
            masks[rows, s] = mask_fn(rows, cur, res, unvisited, pending)
        else:
            masks[rows, s] = lookahead_mask(rules, rows, cur, res, unvisited, lookahead)

    fill_masks(all_rows, step)
    iterations = 0
    while True:
        idx = np.flatnonzero(status == RUNNING)
        if idx.size == 0:
            break
        iterations += 1
        t = step[idx]
        m = masks[idx, t]
        nonempty = m.any(axis=1)
        if relax_on_budget:
            relax = ~nonempty & budget_hit[idx]
            m[relax] = ~visited[idx[relax]]
            nonempty |= relax
        dead = idx[~nonempty & (t == 0)]
        status[dead] = INFEASIBLE
        back = idx[~nonempty & (t > 0)]
        fwd, tf, mf = idx[nonempty], t[nonempty], m[nonempty]

        if back.size:
            tb = step[back]
            popped = nodes[back, tb]
            visited[back, popped] = False
            nodes[back, tb] = -1
            step[back] = tb - 1
            masks[back, tb - 1, popped] = False
            refine[back, tb - 1] += 1
            backtracks[back] += 1
            budget_hit[back] |= backtracks[back] >= limit_r
            if not relax_on_budget:
                status[back[budget_hit[back]]] = GAVE_UP

        if fwd.size:
            decision = Decision(fwd, tf, nodes[fwd, tf], resource[fwd, tf], mf, refine[fwd, tf],
                                budget_hit[fwd], broken[fwd, tf])
            choice = np.asarray(chooser(decision))
            if choice.shape != (fwd.size,) or choice.dtype.kind not in "iu":
                raise ValueError(f"chooser: expected {fwd.size} integer node ids, got "
                                 f"shape {choice.shape} dtype {choice.dtype}")
            choice = choice.astype(np.int64)
            if ((choice < 0) | (choice >= n)).any() or not mf[np.arange(fwd.size), choice].all():
                raise ValueError("chooser: picked a node outside the mask")
            arrive = rules.arrival(fwd, nodes[fwd, tf], resource[fwd, tf])[np.arange(fwd.size), choice]
            s = tf + 1
            nodes[fwd, s] = choice
            resource[fwd, s] = arrive
            visited[fwd, choice] = True
            step[fwd] = s
            refine[fwd, s] = 0
            broken[fwd, s] = broken[fwd, tf] | (arrive > rules.limit(fwd)[np.arange(fwd.size), choice] + TOLERANCE)
            last = s == n - 1
            if (~last).any():
                fill_masks(fwd[~last], s[~last])
            done = fwd[last]
            if done.size:
                masks[done, n - 1] = False
                home_ok = np.ones(done.size, dtype=bool)
                if rules.must_return:
                    back_home = resource[done, n - 1] + rules.dist[done, nodes[done, n - 1], 0]
                    home_ok = back_home <= rules.limit(done)[:, 0] + TOLERANCE
                # A complete tour that cannot get home is refuted like an empty mask, unless relaxed.
                finish = home_ok | (budget_hit[done] & relax_on_budget)
                status[done[finish]] = COMPLETE

    tours = np.where((status == COMPLETE)[:, None], nodes, -1)
    return DecodeResult(tours, status, backtracks, iterations)


def greedy_chooser(key: np.ndarray) -> Chooser:
    """Pick the masked node with the smallest ``key[row, node]`` (ties: the lowest id)."""
    def choose(d: Decision) -> np.ndarray:
        scores = np.where(d.mask, key[d.rows], np.inf)
        return np.argmin(scores, axis=1)
    return choose


def nearest_chooser(instances: RoutingInstances) -> Chooser:
    """Greedy-L: the nearest allowed node."""
    dist = instances.distances()
    def choose(d: Decision) -> np.ndarray:
        return np.argmin(np.where(d.mask, dist[d.rows, d.current], np.inf), axis=1)
    return choose


def constraint_chooser(instances: RoutingInstances) -> Chooser:
    """Greedy-C: the allowed node whose window closes soonest (TSPTW) or whose draft is smallest (TSPDL)."""
    key = instances.tw_end if instances.problem == "tsptw" else instances.draft
    return greedy_chooser(key)


def random_chooser(seed: int = 0) -> Chooser:
    """Uniformly random among the allowed nodes (for tests and exploration)."""
    rng = np.random.default_rng(seed)
    def choose(d: Decision) -> np.ndarray:
        scores = np.where(d.mask, rng.random(d.mask.shape), -1.0)
        return np.argmax(scores, axis=1)
    return choose
