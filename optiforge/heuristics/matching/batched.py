r"""Batched multi-level push-relabel on torch tensors (the paper's parallel subroutine).

The same algorithm and invariants as :mod:`optiforge.heuristics.matching.pushrelabel` (read
that first), with requests inserted in batches (default 200, as in the paper's GPU code) and
every free request acting at once in each **phase**:

1. **Slack scan** (:func:`optiforge.kernels.matching.slack_scan`, Triton on CUDA): for each free
   request, the minimum slack over the servers visible on its level and the admissible server it
   will propose to (a free one first; ties spread by a hash).
2. **Relabel**: a request without an admissible edge raises its dual by that minimum slack
   (capped at :math:`y^{max}`; reaching it promotes the request to the next level, past the
   top level into the exact set).
3. **Push** = a **maximal matching** in the admissible graph between the free requests and
   the servers: every request proposes, each server accepts one proposer (the highest level,
   then the earliest arrival), and the losers propose again among the servers not yet taken
   in this phase until none of them has an admissible one left. Each accepted server's dual
   drops by 1 on the winner's level, and the request it held (if any) is free for the next
   phase.

After each batch the level bounds are checked; if they fail, omega doubles and every request
so far is re-inserted at once (one big batch).

Memory
------
The authors' code keeps an int32 slack tensor of ``levels x requests x servers`` (about 3.6 GB
for ``n = 10**4`` and 9 levels). Here the slack is never stored: requests keep their scaled
distances at the residence level only (int32, ``requests x servers``) next to the distances
(float32, ``requests x servers``), so the state is **8 bytes per request-server pair** plus
``O(levels x servers)``: 0.8 GB at ``n = 10**4``. Before growing, the matcher compares that with
the free memory of its device (``memory_budget`` overrides): if the scaled distances don't fit,
they are recomputed for the free requests in every phase (4 bytes per pair); if the distances
don't fit either, the matcher moves to the CPU with a warning. It never just runs out.

Deviations from the authors' GPU code: one proposal per request per phase with a hashed
tie-break instead of two uniform random draws per phase; losers re-propose within the phase
(a maximal matching, as the paper describes, rather than one round); a relabel and the
proposal it makes possible happen in the same phase; all levels act together instead of one
level after another; the exact set is matched by ``linear_sum_assignment`` instead of POT.

References
----------
.. [1] S. Das et al., "Efficient Algorithms for Incremental Metric Bipartite Matching",
   ICLR 2026, https://openreview.net/forum?id=wnIanx0r0w.
.. [2] N. Lahn, S. Raghvendra and K. Ye, "A combinatorial algorithm for approximating the
   optimal transport in the parallel and MPC settings", NeurIPS 2023.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch

from optiforge import validation
from optiforge.heuristics.matching.pushrelabel import (
    PushRelabelParams,
    Schedule,
    first_omega,
    resolve_exact,
    state_violations,
)
from optiforge.kernels.matching import INVISIBLE, slack_scan, unpack

_WIN_SHIFT = 40  # proposal priority: level << 40 | (2**40 - 1 - request id)


def free_memory(device: torch.device) -> int:
    """Free bytes on ``device`` (CUDA: the driver's figure; CPU: ``MemAvailable``)."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 40  # unknown: assume plenty (the OS will say otherwise)


class BatchedPushRelabelMatcher:
    """Multi-level push-relabel processing requests in batches on torch tensors.

    Parameters
    ----------
    n_servers : int
        Number of servers.
    params : PushRelabelParams, optional
        Algorithm parameters (paper defaults).
    device : str or torch.device, optional
        Where the state lives; default CUDA when available, else CPU.
    backend : {"auto", "triton", "torch"}, optional
        Backend of the slack-scan kernel (see :mod:`optiforge.kernels`).
    seed : int
        Seed of the tie-breaking hash.
    memory_budget : int, optional
        Bytes the state may use on the device (default: 80 % of its free memory).
    """

    def __init__(self, n_servers: int, params: PushRelabelParams | None = None, *,
                 device: str | torch.device | None = None, backend: str | None = None,
                 seed: int = 0, memory_budget: int | None = None) -> None:
        self.n = validation.integer(n_servers, "n_servers", minimum=1, maximum=2**24)
        self.params = params if params is not None else PushRelabelParams()
        if not isinstance(self.params, PushRelabelParams):
            raise TypeError(f"params: expected PushRelabelParams, got {type(self.params).__name__}")
        self.device = torch.device(device) if device is not None else torch.device(
            "cuda" if torch.cuda.is_available() else "cpu")
        self.backend = backend
        self.seed = validation.integer(seed, "seed", minimum=0, maximum=2**31 - 1)
        self.memory_budget = (None if memory_budget is None else
                              validation.integer(memory_budget, "memory_budget", minimum=1))
        self.schedule = Schedule(self.n, self.params)
        self.top = self.schedule.mu + 1
        self.tail = self.top + 1
        self.rows: list[np.ndarray] = []
        self.omega = 0.0
        self.materialized = True
        self.phases = 0
        self.stats = {"pushes": 0, "relabels": 0, "promotions": 0, "rebuilds": 0, "phases": 0,
                      "exact_solves": 0}
        self._capacity = 0
        self._dist = torch.empty((0, self.n), dtype=torch.float32, device=self.device)
        self._dhat = torch.empty((0, self.n), dtype=torch.int32, device=self.device)
        self._ymax = torch.as_tensor(self.schedule.ymax, device=self.device)
        self._cap = torch.as_tensor(self.schedule.cap, device=self.device)
        self._reset_state()

    # -- state ----------------------------------------------------------------------------
    @property
    def n_requests(self) -> int:
        return len(self.rows)

    def _reset_state(self) -> None:
        dev, cap, n, levels = self.device, self._capacity, self.n, self.schedule.n_levels
        self.level = torch.zeros(cap, dtype=torch.int64, device=dev)
        self.y_req = torch.zeros(cap, dtype=torch.int64, device=dev)
        self.mate_req = torch.full((cap,), -1, dtype=torch.int64, device=dev)
        self.mate_srv = torch.full((n,), -1, dtype=torch.int64, device=dev)
        self.srv_level = torch.full((n,), -1, dtype=torch.int64, device=dev)
        self.free_srv = torch.ones(n, dtype=torch.bool, device=dev)
        self.y_srv = torch.zeros((levels, n), dtype=torch.int32, device=dev)
        self.offset = torch.zeros((levels, n), dtype=torch.int32, device=dev)
        self._level_ids = torch.arange(levels, device=dev)[:, None]
        self.exact: list[int] = []
        self.exact_servers = np.empty(0, dtype=np.int64)

    def _grow(self, total: int) -> None:
        """Make room for ``total`` requests, choosing the memory plan for that size."""
        if total <= self._capacity:
            return
        cap = min(self.n, max(total, 2 * self._capacity, 256))
        budget = self.memory_budget if self.memory_budget is not None else int(0.8 * free_memory(self.device))
        held = self._dist.numel() * 4 + self._dhat.numel() * 4  # freed when we reallocate
        pair = cap * self.n * 4
        if 2 * pair > budget + held and self.materialized:
            self.materialized = False  # recompute scaled distances per phase instead
            self._dhat = torch.empty((0, self.n), dtype=torch.int32, device=self.device)
        if pair > budget + held and self.device.type != "cpu":
            warnings.warn(f"matching state ({pair / 2**30:.1f} GiB of distances) does not fit on "
                          f"{self.device}; continuing on the CPU", ResourceWarning, stacklevel=3)
            self._move_to_cpu()
        grow = [("_dist", torch.float32)] + ([("_dhat", torch.int32)] if self.materialized else [])
        for name, dtype in grow:
            old = getattr(self, name)
            new = torch.zeros((cap, self.n), dtype=dtype, device=self.device)
            new[: old.shape[0]] = old
            setattr(self, name, new)
        for name, fill in (("level", 0), ("y_req", 0), ("mate_req", -1)):
            old = getattr(self, name)
            new = torch.full((cap,), fill, dtype=old.dtype, device=self.device)
            new[: old.shape[0]] = old
            setattr(self, name, new)
        self._capacity = cap

    def _move_to_cpu(self) -> None:
        self.device = torch.device("cpu")
        for name, value in list(vars(self).items()):
            if isinstance(value, torch.Tensor):
                setattr(self, name, value.cpu())

    # -- public ---------------------------------------------------------------------------
    def insert_batch(self, distances: Any) -> None:
        """Insert a batch of requests, given each one's distance to every server.

        Parameters
        ----------
        distances : array_like
            ``(batch, n_servers)`` non-negative finite distances, rows in arrival order.

        Raises
        ------
        ValueError
            If the rows are malformed or there are more requests than servers.
        """
        batch = np.asarray(distances, dtype=np.float64)
        if batch.ndim != 2 or batch.shape[1] != self.n or batch.shape[0] < 1:
            raise ValueError(f"distances: expected shape (batch, {self.n}), got {batch.shape}")
        if self.n_requests + batch.shape[0] > self.n:
            raise ValueError(f"distances: {self.n_requests} + {batch.shape[0]} requests exceed the "
                             f"{self.n} servers")
        if not np.all(np.isfinite(batch)) or batch.min() < 0:
            raise ValueError("distances: must be finite and non-negative")
        start = self.n_requests
        self._grow(start + batch.shape[0])
        for row in batch:  # read-only views stay views (see PushRelabelMatcher.insert)
            self.rows.append(row if not row.flags.writeable else row.copy())
        self._dist[start: start + batch.shape[0]] = torch.from_numpy(batch.astype(np.float32)).to(self.device)
        if start == 0:
            self.omega = first_omega(batch[0])
        new = torch.arange(start, start + batch.shape[0], device=self.device)
        self._run(self._admit(new))
        while not self.schedule.omega_valid(self._pr_levels()):
            self.omega *= 2.0
            self._rebuild()
        self._solve_exact()

    def assignment(self) -> np.ndarray:
        """The server of every request so far (arrival order)."""
        out = self.mate_req[: self.n_requests].cpu().numpy().copy()
        if self.exact:
            out[np.array(self.exact)] = self.exact_servers
        return out

    def cost(self) -> float:
        a = self.assignment()
        return float(sum(self.rows[i][a[i]] for i in range(len(a))))

    def invariant_violations(self) -> list[str]:
        """As :meth:`PushRelabelMatcher.invariant_violations` (on the float32 distances used)."""
        r = self.n_requests
        return state_violations(self.schedule, self.omega, self._dist[:r].double().cpu().numpy(),
                                self.level[:r].cpu().numpy(), self.y_req[:r].cpu().numpy(),
                                self.mate_req[:r].cpu().numpy(), self.srv_level.cpu().numpy(),
                                self.y_srv.cpu().numpy().astype(np.int64), self.assignment())

    # -- the algorithm --------------------------------------------------------------------
    def _pr_levels(self) -> np.ndarray:
        lv = self.level[: self.n_requests].cpu().numpy()
        return lv[lv < self.top]

    def _admit(self, new: torch.Tensor) -> torch.Tensor:
        """Put requests ``new`` on level 0 (or in the exact tail); returns those to discharge."""
        tail = self.params.exact_tail
        in_tail = new >= self.n - tail if tail else torch.zeros_like(new, dtype=torch.bool)
        if in_tail.any():
            self.level[new[in_tail]] = self.tail
            self.exact += new[in_tail].tolist()
        new = new[~in_tail]
        self.level[new] = 0
        self.y_req[new] = 0
        if self.materialized:
            self._dhat[new] = self._scaled(new)
        return new

    def _rebuild(self) -> None:
        self.stats["rebuilds"] += 1
        self._reset_state()
        self._run(self._admit(torch.arange(self.n_requests, device=self.device)))

    def _scaled(self, rows: torch.Tensor) -> torch.Tensor:
        """Scaled distances of requests ``rows`` at their current levels (int32, capped);
        the same float64 arithmetic as :meth:`Schedule.scaled`."""
        sched = self.schedule
        lv = self.level[rows]
        x = torch.ceil(self._dist[rows].to(device=self.device, dtype=torch.float64)
                       * (2.0 * sched.n / (sched.eps * self.omega)))
        top = int(lv.max()) if lv.numel() else 0
        for i in range(top):
            x = torch.where((lv > i)[:, None], torch.ceil(x / sched.divisor[i]), x)
        return torch.minimum(x, self._cap[lv].to(torch.float64)[:, None]).to(torch.int32)

    def _scan(self, rows: torch.Tensor, blocked: torch.Tensor | None
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(t_min, chosen server, second-best t)`` of each row (see ``slack_scan``)."""
        seed = (self.seed * 1_000_003 + self.phases) % (2**31 - 1)
        if self.materialized:
            dhat, at = self._dhat, rows
        else:
            dhat, at = self._scaled(rows), torch.arange(rows.numel(), device=self.device)
        best, second = slack_scan(dhat, at, rows, self.level[rows], self.offset, self.free_srv,
                                  seed=seed, blocked=blocked, backend=self.backend)
        t_min, choice = unpack(best)
        return t_min, choice, second >> 32

    def _winners(self, props: torch.Tensor, servers: torch.Tensor) -> torch.Tensor:
        """Mask of the proposals each server accepts: highest level, then earliest request."""
        prio = (self.level[props] << _WIN_SHIFT) | ((1 << _WIN_SHIFT) - 1 - props)
        best = torch.full((self.n,), -1, dtype=torch.int64, device=self.device)
        best.scatter_reduce_(0, servers, prio, reduce="amax")
        return prio == best[servers]

    def _run(self, free: torch.Tensor) -> None:
        """Phases until no request is free."""
        ymax, stats = self._ymax, self.stats
        while free.numel():
            self.phases += 1
            stats["phases"] += 1
            lv = self.level[free]
            t_min, choice, t_second = self._scan(free, None)
            y = self.y_req[free]
            slack = t_min + 1 - y
            y_new = torch.minimum(y + slack, ymax[lv])
            self.y_req[free] = y_new
            stats["relabels"] += int((slack > 0).sum())
            promote = y_new >= ymax[lv]
            props, servers, second = free[~promote], choice[~promote], t_second[~promote]
            # Push: a maximal matching between the proposers and the servers, in rounds.
            win = self._winners(props, servers)
            w_req, w_srv = [props[win]], [servers[win]]
            drop = [self._bid(props[win], servers[win], second[win])]
            losers = props[~win]
            taken = torch.zeros(self.n, dtype=torch.bool, device=self.device)
            taken[w_srv[0]] = True
            while losers.numel():
                t2, c2, _ = self._scan(losers, taken)
                ok = (c2 >= 0) & (t2 == self.y_req[losers] - 1)
                if not bool(ok.any()):
                    break
                losers, c2 = losers[ok], c2[ok]
                win = self._winners(losers, c2)
                w_req.append(losers[win])
                w_srv.append(c2[win])
                drop.append(torch.ones_like(c2[win]))  # their second best ignored taken servers
                taken[c2[win]] = True
                losers = losers[~win]
            won, srv = torch.cat(w_req), torch.cat(w_srv)
            displaced = self._match(won, srv, torch.cat(drop))
            stats["pushes"] += displaced.numel()
            # Promotions: next level (fresh dual and scaled distances) or the exact set.
            up = free[promote]
            if up.numel():
                stats["promotions"] += up.numel()
                self.level[up] += 1
                self.y_req[up] = 0
                done = up[self.level[up] == self.top]
                self.exact += done.tolist()
                up = up[self.level[up] < self.top]
                if self.materialized and up.numel():
                    self._dhat[up] = self._scaled(up)
            still = free[~promote]
            still = still[self.mate_req[still] < 0]
            free = torch.cat([still, up, displaced])

    def _bid(self, won: torch.Tensor, srv: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
        """Dual drop of each winner's server: 1, or with ``bid`` for a push, 1 plus the raise of
        the winner's dual to its second-best slack (updated in place)."""
        drop = torch.ones_like(won)
        if not self.params.bid:
            return drop
        pushing = self.mate_srv[srv] >= 0
        req = won[pushing]
        y = self.y_req[req]
        gap = torch.minimum(second[pushing] + 1 - y, self._ymax[self.level[req]] - 1 - y).clamp_(min=0)
        self.y_req[req] = y + gap
        drop[pushing] += gap
        return drop

    def _match(self, req: torch.Tensor, srv: torch.Tensor, drop: torch.Tensor) -> torch.Tensor:
        """Match each request to its server on the request's level, lowering the server's
        dual there by ``drop``; returns the requests pushed out."""
        prev = self.mate_srv[srv]
        lv = self.level[req]
        self.mate_srv[srv] = req
        self.mate_req[req] = srv
        displaced = prev[prev >= 0]
        self.mate_req[displaced] = -1
        self.srv_level[srv] = lv
        self.free_srv[srv] = False
        self.y_srv[lv, srv] -= drop.to(torch.int32)
        # Matched on level lv: visible from lv up, with its duals; invisible below.
        self.offset[:, srv] = torch.where(self._level_ids >= lv[None, :], self.y_srv[:, srv],
                                          torch.full_like(self.y_srv[:, srv], INVISIBLE))
        return displaced

    def _solve_exact(self) -> None:
        if not self.exact:
            return
        self.stats["exact_solves"] += 1
        rows = np.stack([self.rows[r] for r in self.exact])
        self.exact_servers = resolve_exact(rows, np.flatnonzero(self.srv_level.cpu().numpy() < 0))
