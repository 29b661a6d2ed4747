r"""Incremental metric bipartite matching by multi-level push-relabel (CPU reference).

A fixed set ``S`` of ``n`` servers; requests arrive one at a time and the algorithm keeps a
matching of every request that has arrived, re-assigning earlier requests when that lowers
the cost (recourse). This is the algorithm of Das et al. [1]_, which makes the static
multi-scale algorithm of Agarwal and Sharathkumar [2]_ incremental, in the form the research
note (``research/riemannian_matching_theory.md``, section 3) transcribes:

* **Scaled metrics** on levels ``i = 0..mu``:
  :math:`\hat d_0(s,r) = \lceil 2\,d(s,r)\,n / (\varepsilon\omega) \rceil`,
  :math:`\hat d_i = \lceil \hat d_{i-1} / (2(1+\varepsilon)^2 n^{\varphi_{i-1}}) \rceil`,
  :math:`\varphi_i = 3^i \delta`. Defaults: :math:`\varepsilon = 1/(2\log_3(1/\delta))`
  (the paper), :math:`\mu = \lceil\log_3(2/\delta)\rceil + 1` (the authors' code),
  :math:`\delta = 0.001` (the paper's experiments).
* **Per-level 1-feasible matchings with duals.** Every request ``r`` resides on a level
  :math:`\ell(r)`; its duals below that level are frozen at
  :math:`y^{max}_i = (30/\varepsilon)\, n^{\varphi_i}`. A matched server ``s`` carries the
  level :math:`\lambda(s)` of its request and is visible only to requests on levels
  :math:`\ge \lambda(s)`; free servers are visible to all and have dual 0. On level ``i``,
  for every resident request ``r`` and visible server ``s``:
  :math:`y_i(r) + y_i(s) \le \hat d_i(r,s) + 1`, with equality to :math:`\hat d_i` on matched
  edges. An edge is *admissible* when it is tight at :math:`\hat d_i + 1`.
* **Insertion**: the new request starts free on level 0 with dual 0. While a request ``f``
  is free: if some admissible edge ``(f, s)`` exists, match it (a free ``s`` is preferred)
  and set :math:`y_i(s) \mathrel{-}= 1`; if ``s`` was matched to ``r'`` this is a **push**
  and ``r'`` becomes the free request, resuming on its own level. Otherwise **relabel**:
  :math:`y_i(f) \mathrel{+}=` the minimum slack over visible servers. When
  :math:`y_i(f)` reaches :math:`y^{max}_i`, **promote** ``f`` to level ``i + 1`` (dual 0
  there). A request promoted past level ``mu`` joins the *exact set*, matched by the
  **Hungarian step** (``scipy.optimize.linear_sum_assignment``) to the servers the
  push-relabel matching leaves free.
* **omega by guess-and-double**: omega starts at :math:`\min_s d(s, r_1)`. After each
  insertion, if more than :math:`n^{1-\Phi_i}` requests reside on levels :math:`\ge i`
  for some ``i >= 1`` (:math:`\Phi_i = (3^i-1)\delta/2`), omega doubles and the matching
  is rebuilt from scratch by re-inserting every request in arrival order.

Implementation notes and deviations
-----------------------------------
* Only the residence level's scaled distances are stored (``int32``, one row per request):
  lower levels are frozen and upper levels not yet started, so nothing else is ever read.
  The authors' code keeps all ``levels x requests x servers``.
* :math:`\hat d_i` is capped at :math:`y^{max}_i + 2` and :math:`y^{max}_i` at
  :data:`YMAX_LIMIT` (:math:`2^{29}`), so every quantity fits ``int32`` in the batched
  version. The cap changes nothing: an edge with :math:`\hat d_i \ge y^{max}_i` can never
  be admissible (:math:`y_i(r) \le y^{max}_i`, :math:`y_i(s) \le 0`), and a relabel that
  would overshoot stops at :math:`y^{max}_i` either way. Only a level whose
  :math:`y^{max}` exceeds :math:`2^{29}` *and* on which a dual actually climbs that high
  would behave differently; with the defaults that needs ``d/omega`` beyond ``10^9``.
* A first request at distance 0 from a server would give omega = 0; omega then starts at
  the smallest positive distance of that row (or 1).
* ``exact_tail`` (default 0, off) reproduces a trick of the authors' code, not the paper:
  once only ``exact_tail`` servers would remain free, the push-relabel matching is frozen
  and the remaining requests join the exact set.
* Ties between admissible edges go to the lowest server index, a free server first (as
  in the authors' C++ code).
* ``bid`` (default off) is an optional speed-up that is not in the paper; see
  :class:`PushRelabelParams`.

References
----------
.. [1] S. Das et al., "Efficient Algorithms for Incremental Metric Bipartite Matching",
   ICLR 2026, https://openreview.net/forum?id=wnIanx0r0w.
.. [2] P. K. Agarwal and R. Sharathkumar, "Approximation algorithms for bipartite matching
   with metric and geometric costs", STOC 2014.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from optiforge import validation

YMAX_LIMIT = 2**29
"""Largest y^max used on any level; keeps slacks inside int32 (see the module notes)."""

_BIG = np.int64(2**62)


@dataclass(frozen=True)
class PushRelabelParams:
    """Parameters of the multi-level push-relabel algorithm.

    Parameters
    ----------
    delta : float
        Trade-off parameter in ``(0, 1)``: approximation :math:`O(1/\\delta^{0.631})`,
        update time :math:`\\tilde O(n^{1+\\delta})`. The paper's experiments use 0.001.
    epsilon : float, optional
        Scale of the rounding error; default :math:`1/(2\\log_3(1/\\delta))` (the paper).
    levels : int, optional
        The top level ``mu`` (levels are ``0..mu``); default
        :math:`\\lceil\\log_3(2/\\delta)\\rceil + 1` (the authors' code).
    ymax_factor : float
        The constant ``c`` in :math:`y^{max}_i = (c/\\varepsilon)\\, n^{\\varphi_i}` (30 in the
        paper). ``0`` sends every request straight to the exact (Hungarian) set.
    exact_tail : int
        Freeze push-relabel and solve the last ``exact_tail`` servers' requests exactly
        (the authors' code uses 50; the paper has no such step). 0 turns it off.
    bid : bool
        **Not in the paper** (off by default). A push lowers the server's dual by 1 plus
        the amount that lifts the pushing request's dual to its second-best slack (an
        auction bid), instead of by 1. Every invariant above still holds (the matched edge
        stays tight, every other edge of the request stays feasible), so the approximation
        argument is unchanged; what changes is the number of push/relabel steps: two
        requests that want one server no longer trade it back and forth one unit at a time.
        About 5x fewer steps at the same cost (docs/benchmarks/matching.md).
    """

    delta: float = 0.001
    epsilon: float | None = None
    levels: int | None = None
    ymax_factor: float = 30.0
    exact_tail: int = 0
    bid: bool = False

    def __post_init__(self) -> None:
        d = validation.finite(self.delta, "delta")
        if not 0.0 < d < 1.0:
            raise ValueError(f"delta: must be in (0, 1), got {d}")
        if self.epsilon is not None and validation.positive(self.epsilon, "epsilon") >= 1.0:
            raise ValueError(f"epsilon: must be in (0, 1), got {self.epsilon}")
        if self.levels is not None:
            validation.integer(self.levels, "levels", minimum=0, maximum=30)
        validation.nonneg(self.ymax_factor, "ymax_factor")
        validation.integer(self.exact_tail, "exact_tail", minimum=0)


class Schedule:
    """Per-level constants of :class:`PushRelabelParams` for ``n`` servers.

    Attributes
    ----------
    n, mu, eps : int, int, float
        Servers, top level, epsilon.
    ymax : numpy.ndarray
        ``(mu + 1,)`` int64 :math:`\\lceil y^{max}_i \\rceil` (at most :data:`YMAX_LIMIT`).
    cap : numpy.ndarray
        ``(mu + 1,)`` int64 cap of the stored scaled distances, ``ymax + 2``.
    divisor : list of float
        :math:`2(1+\\varepsilon)^2 n^{\\varphi_i}` for ``i < mu``.
    bound : numpy.ndarray
        ``(mu + 1,)`` :math:`n^{1-\\Phi_i}`: the most requests allowed on levels ``>= i``.
    """

    def __init__(self, n: int, params: PushRelabelParams) -> None:
        self.n = n
        self.params = params
        delta = params.delta
        self.eps = params.epsilon if params.epsilon is not None else 1.0 / (2.0 * math.log(1.0 / delta, 3))
        self.mu = params.levels if params.levels is not None else math.ceil(math.log(2.0 / delta, 3)) + 1
        levels = range(self.mu + 1)
        phi = [3.0**i * delta for i in levels]
        big_phi = [(3.0**i - 1.0) * delta / 2.0 for i in levels]
        self.ymax = np.array([min(math.ceil(params.ymax_factor / self.eps * n ** p), YMAX_LIMIT) for p in phi],
                             dtype=np.int64)
        self.cap = self.ymax + 2
        self.divisor = [2.0 * (1.0 + self.eps) ** 2 * n ** phi[i] for i in range(self.mu)]
        self.bound = np.array([n ** (1.0 - p) for p in big_phi])

    @property
    def n_levels(self) -> int:
        return self.mu + 1

    def scaled(self, d: np.ndarray, level: int, omega: float, *, capped: bool = True) -> np.ndarray:
        """Scaled distances :math:`\\hat d_{level}` of distances ``d`` under guess ``omega``.

        Returns int64 (capped at ``cap[level]``) or, with ``capped=False``, the exact values
        as float64 (integers; exact below 2**53).
        """
        x = np.ceil(np.asarray(d, dtype=np.float64) * (2.0 * self.n / (self.eps * omega)))
        for i in range(level):
            x = np.ceil(x / self.divisor[i])
        if not capped:
            return x
        return np.minimum(x, float(self.cap[level])).astype(np.int64)

    def omega_valid(self, levels: np.ndarray) -> bool:
        """Whether the residence levels of the push-relabel requests respect the level bounds."""
        if levels.size == 0:
            return True
        at_least = np.cumsum(np.bincount(levels, minlength=self.n_levels)[::-1])[::-1]
        return bool(np.all(at_least[1:] <= self.bound[1:]))


def first_omega(row: np.ndarray) -> float:
    """omega's first guess: the first request's nearest server (the smallest positive
    distance, or 1, if that is 0)."""
    m = float(row.min())
    if m > 0:
        return m
    pos = row[row > 0]
    return float(pos.min()) if pos.size else 1.0


def resolve_exact(cost_rows: np.ndarray, free_servers: np.ndarray) -> np.ndarray:
    """Optimal assignment of the exact set's requests (rows) to ``free_servers`` (the
    Hungarian step): returns the server of each row."""
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(cost_rows[:, free_servers])
    out = np.empty(len(cost_rows), dtype=np.int64)
    out[rows] = free_servers[cols]
    return out


def check_row(distances: Any, n_servers: int, name: str = "distances") -> np.ndarray:
    """Validate one request's distances to every server: finite, non-negative, length ``n``."""
    row = np.asarray(distances, dtype=np.float64)
    if row.shape != (n_servers,):
        raise ValueError(f"{name}: expected {n_servers} distances (one per server), got shape {row.shape}")
    if not np.all(np.isfinite(row)) or row.min() < 0:
        raise ValueError(f"{name}: distances must be finite and non-negative")
    return row


@dataclass
class _Stats:
    pushes: int = 0
    relabels: int = 0
    promotions: int = 0
    rebuilds: int = 0
    exact_solves: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


class PushRelabelMatcher:
    """The one-request-at-a-time multi-level push-relabel matcher (see the module docs).

    Parameters
    ----------
    n_servers : int
        Number of servers ``n``.
    params : PushRelabelParams, optional
        Algorithm parameters (paper defaults).

    Examples
    --------
    >>> from optiforge.heuristics.matching import make_instance
    >>> inst = make_instance("uniform", 50, seed=0)
    >>> m = PushRelabelMatcher(inst.n_servers)
    >>> for row in inst.cost:
    ...     m.insert(row)
    >>> sorted(m.assignment().tolist()) == list(range(50))
    True
    """

    def __init__(self, n_servers: int, params: PushRelabelParams | None = None) -> None:
        self.n = validation.integer(n_servers, "n_servers", minimum=1)
        self.params = params if params is not None else PushRelabelParams()
        if not isinstance(self.params, PushRelabelParams):
            raise TypeError(f"params: expected PushRelabelParams, got {type(self.params).__name__}")
        self.schedule = Schedule(self.n, self.params)
        self.top = self.schedule.mu + 1  # requests promoted past mu: the exact set
        self.tail = self.top + 1  # requests of the exact tail (never on any level)
        self.rows: list[np.ndarray] = []
        self.omega = 0.0
        self.stats = _Stats()
        self._reset()

    # -- state ----------------------------------------------------------------------------
    def _reset(self) -> None:
        n, cap = self.n, self.n
        self.level = np.zeros(cap, dtype=np.int64)
        self.y_req = np.zeros(cap, dtype=np.int64)
        self.mate_req = np.full(cap, -1, dtype=np.int64)
        self.mate_srv = np.full(n, -1, dtype=np.int64)
        self.srv_level = np.full(n, -1, dtype=np.int64)  # -1: free (visible to every level)
        self.y_srv = np.zeros((self.schedule.n_levels, n), dtype=np.int64)
        # offset[i, s] = y_i(s) where s is visible on level i, else -BIG: then the slack of
        # (r, s) on level i is dhat(r, s) - offset[i, s] + 1 - y_i(r), one array operation.
        self.offset = np.zeros_like(self.y_srv)
        self.dhat: list[np.ndarray] = []
        self.exact: list[int] = []
        self.exact_servers = np.empty(0, dtype=np.int64)

    @property
    def n_requests(self) -> int:
        return len(self.rows)

    # -- public ---------------------------------------------------------------------------
    def insert(self, distances: Any) -> None:
        """Insert the next request, given its distance to every server.

        Raises
        ------
        ValueError
            If the row is malformed or every server is already taken.
        """
        row = check_row(distances, self.n)
        if self.n_requests >= self.n:
            raise ValueError(f"distances: all {self.n} servers are matched; no room for another request")
        # A read-only row (a view of an instance's cost matrix) can't change under us: keep it
        # without a copy, so n requests cost no second n x n matrix.
        self.rows.append(row if not row.flags.writeable else row.copy())
        if self.n_requests == 1:
            self.omega = first_omega(row)
        self._place(self.n_requests - 1)
        while not self.schedule.omega_valid(self.level[self._pr_requests()]):
            self.omega *= 2.0
            self._rebuild()
        self._solve_exact()

    def assignment(self) -> np.ndarray:
        """The server of every request so far (arrival order)."""
        out = self.mate_req[: self.n_requests].copy()
        if self.exact:
            out[np.array(self.exact)] = self.exact_servers
        return out

    def cost(self) -> float:
        """Total distance of the current matching."""
        a = self.assignment()
        return float(sum(self.rows[i][a[i]] for i in range(len(a))))

    # -- the algorithm --------------------------------------------------------------------
    def _pr_requests(self) -> np.ndarray:
        lv = self.level[: self.n_requests]
        return np.flatnonzero(lv < self.top)

    def _rebuild(self) -> None:
        """Restart from scratch under the current omega, re-inserting every request."""
        self.stats.rebuilds += 1
        self._reset()
        for r in range(self.n_requests):
            self._place(r)

    def _place(self, r: int) -> None:
        if self.params.exact_tail and r >= self.n - self.params.exact_tail:
            self.level[r] = self.tail  # push-relabel is frozen from here on
            self.dhat.append(np.empty(0, dtype=np.int32))
            self.exact.append(r)
            return
        self.level[r], self.y_req[r] = 0, 0
        self.dhat.append(self.schedule.scaled(self.rows[r], 0, self.omega).astype(np.int32))
        self._discharge(r)

    def _discharge(self, f: int) -> None:
        """Push / relabel / promote until no request is free (or one reaches the exact set)."""
        sched, offset, srv_level, stats = self.schedule, self.offset, self.srv_level, self.stats
        while f >= 0:
            lv = int(self.level[f])
            y = int(self.y_req[f])
            if y >= sched.ymax[lv]:  # promote
                stats.promotions += 1
                lv += 1
                self.level[f] = lv
                if lv == self.top:
                    self.exact.append(f)
                    return
                self.y_req[f] = 0
                self.dhat[f] = sched.scaled(self.rows[f], lv, self.omega).astype(np.int32)
                continue
            t = self.dhat[f] - offset[lv]  # slack = t + 1 - y
            m = int(t.min()) + 1 - y
            if m > 0:  # relabel (never past y^max: that would break feasibility)
                stats.relabels += 1
                y = min(y + m, int(sched.ymax[lv]))
                self.y_req[f] = y
                if y >= sched.ymax[lv]:
                    continue
            tight = np.flatnonzero(t == y - 1)
            free = tight[srv_level[tight] < 0]
            s = int(free[0]) if free.size else int(tight[0])
            prev = int(self.mate_srv[s])
            drop = 1
            if prev >= 0 and self.params.bid:
                # Bid: raise y(f) to its second-best slack and lower y(s) as much, so the
                # matched edge stays tight and every other edge of f stays feasible.
                t[s] = _BIG
                gap = min(int(t.min()) + 1 - y, int(sched.ymax[lv]) - 1 - y)
                if gap > 0:
                    y += gap
                    self.y_req[f] = y
                    drop += gap
            self.mate_srv[s], self.mate_req[f] = f, s
            self._set_server(s, lv, self.y_srv[lv, s] - drop)
            if prev >= 0:  # push: the previous request is free again, on its own level
                stats.pushes += 1
                self.mate_req[prev] = -1
            f = prev

    def _set_server(self, s: int, lv: int, dual: int) -> None:
        """Match server ``s`` on level ``lv`` with dual ``dual`` there (keeps ``offset`` in step)."""
        self.srv_level[s] = lv
        self.y_srv[lv, s] = dual
        self.offset[:lv, s] = -_BIG  # no longer visible below its new level
        self.offset[lv:, s] = self.y_srv[lv:, s]

    def _solve_exact(self) -> None:
        if not self.exact:
            return
        self.stats.exact_solves += 1
        rows = np.stack([self.rows[r] for r in self.exact])
        self.exact_servers = resolve_exact(rows, np.flatnonzero(self.srv_level < 0))

    # -- checks ---------------------------------------------------------------------------
    def invariant_violations(self) -> list[str]:
        """Every broken invariant of the current state, as text (empty when all hold).

        Checked against the *uncapped* scaled distances: the matching is valid; free servers
        have dual 0 on every level; every matched server sits on its request's level; on
        every level ``i`` and for every request residing on ``i`` or above (dual ``y^max_i``
        when above) and every server visible on ``i``, ``y_i(r) + y_i(s) <= d_i + 1``, with
        ``y_i(r) + y_i(s) = d_i`` on matched edges; the level bounds of the current omega hold.
        """
        return state_violations(self.schedule, self.omega, np.stack(self.rows) if self.rows else
                                np.empty((0, self.n)), self.level[: self.n_requests],
                                self.y_req[: self.n_requests], self.mate_req[: self.n_requests],
                                self.srv_level, self.y_srv, self.assignment())


def state_violations(sched: Schedule, omega: float, cost: np.ndarray, level: np.ndarray,
                     y_req: np.ndarray, mate_req: np.ndarray, srv_level: np.ndarray,
                     y_srv: np.ndarray, assignment: np.ndarray) -> list[str]:
    """The invariant check of :meth:`PushRelabelMatcher.invariant_violations`, on plain arrays
    (shared with the batched matcher)."""
    out: list[str] = []
    r_count = cost.shape[0]
    top = sched.mu + 1  # promoted past mu; top + 1 is the exact tail, which has no duals
    if r_count and (np.any(assignment < 0) or len(np.unique(assignment)) != r_count):
        out.append("assignment is not a matching of every request to a distinct server")
    matched = np.flatnonzero(mate_req >= 0)
    if np.any(level[matched] >= top):
        out.append("a request of the exact set is matched by push-relabel")
    if np.any(srv_level[mate_req[matched]] != level[matched]):
        out.append("a matched server is not on its request's level")
    if np.count_nonzero(srv_level >= 0) != matched.size:
        out.append("server and request sides of the matching disagree")
    if np.any(y_srv[:, srv_level < 0] != 0):
        out.append("a free server has a non-zero dual")
    if np.any(y_srv > 0):
        out.append("a server dual is positive")
    pr = level < top
    if np.any((y_req[pr] < 0) | (y_req[pr] >= sched.ymax[level[pr]]) & (sched.ymax[level[pr]] > 0)):
        out.append("a request dual is outside [0, y^max) on its level")
    for i in range(sched.n_levels):
        rows = np.flatnonzero((level >= i) & (level <= top))
        if rows.size == 0:
            continue
        d = sched.scaled(cost[rows], i, omega, capped=False)
        y_r = np.where(level[rows] == i, y_req[rows], sched.ymax[i]).astype(np.float64)
        visible = srv_level <= i
        total = y_r[:, None] + y_srv[i][None, :]
        slack = d + 1 - total
        if np.any(slack[:, visible] < 0):
            out.append(f"level {i}: an edge violates y(r) + y(s) <= d + 1")
        here = rows[(level[rows] == i) & (mate_req[rows] >= 0)]
        if here.size:
            k = np.searchsorted(rows, here)
            s = mate_req[here]
            if np.any(total[k, s] != d[k, s]):
                out.append(f"level {i}: a matched edge is not tight (y(r) + y(s) != d)")
    if not sched.omega_valid(level[level < top]):
        out.append("too many requests on the upper levels for the current omega")
    return out
