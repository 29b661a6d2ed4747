"""The trusted, event-driven cloud workflow scheduling simulator (DEFT / GATES semantics).

Events are workflow arrivals and task completions, kept in one heap. Each time a task becomes
ready (its workflow arrived and all its parents finished) the policy makes **one decision**:
run it on one of the leased VMs, or rent a new VM of type ``k`` (six m5-like types). A VM runs
its tasks one at a time in assignment order (FIFO queue); a task of work ``w`` (vCPU-seconds)
runs ``w / vCPU`` seconds.

Billing is per started hour: a new VM is paid for ``ceil(runtime / 3600)`` hours, and a lease
is extended by whole hours when a task would finish after the paid time. A VM whose paid time
is over (it is then idle) is released and can no longer be chosen. Workflow ``i`` is due at
``d_i = a_i + gamma * CP_i / 48`` (critical path on the fastest VM); each task gets the ProLiS
sub-deadline [2]_ ``a_i + (d_i - a_i) * (CP_i - rank(t) + w_t) / CP_i`` from its upward rank.

Cost = VM rental + SLA penalty, computed here from the decisions, never by the policy.

The SLA penalty (the discrepancy noted in the research): DEFT's paper text charges
``beta * lateness`` with ``beta = 0.24 $/h``; the GATES simulator that produced the published
tables charges ``1 + 2 * lateness_h`` per late workflow. The default, :data:`GATES_PENALTY`, is
the code's rule, since the published numbers come from it; :data:`PAPER_PENALTY` is the text's.

Deviations: no VM boot time and no data-transfer time (neither is in the GATES simulator's
decision model as summarised in the research note); the ProLiS rank has no communication
term for the same reason.

References
----------
.. [1] Y. Shen, G. Chen, H. Ma, M. Zhang, "Deft Scheduling of Dynamic Cloud Workflows with Varying
   Deadlines via Mixture-of-Experts", ICLR 2026 (arXiv 2606.01162).
.. [2] Q. Wu, F. Ishikawa, Q. Zhu, Y. Xia, J. Wen, "Deadline-constrained cost optimization
   approaches for workflow scheduling in clouds" (ProLiS), IEEE TPDS 28(12), 2017.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from optiforge.heuristics.scheduling.instances import Instance
from optiforge.heuristics.scheduling.workflows import Workflow

VM_VCPUS = np.array([2.0, 4.0, 8.0, 16.0, 32.0, 48.0])
VM_PRICES = np.array([0.096, 0.192, 0.384, 0.768, 1.536, 2.304])
"""Six AWS m5-like VM types (US East): vCPUs and $/hour ($0.048 per vCPU-hour)."""
N_TYPES = len(VM_VCPUS)
FASTEST = float(VM_VCPUS.max())
BILLING_PERIOD = 3600.0

TASK_FEATURES = ("work", "to_sub_deadline", "to_deadline", "n_children", "completion", "gamma")
"""Columns of ``Decision.task`` (times in seconds, work in vCPU-seconds)."""
VM_FEATURES = ("vcpus", "price", "is_new", "exec_time", "wait", "slack", "extra_cost",
               "remaining_paid", "deadline_slack")
"""Columns of ``Decision.vms``, one row per candidate (leased VMs first, then the six new types):
vCPUs, $/hour, 1 if renting a new VM, run time of the task there (s), wait before it starts (s),
sub-deadline minus finish time (s, >= 0 meets it), rental it adds ($), paid time left after
the task (s), workflow deadline minus finish time (s)."""
COL = {name: i for i, name in enumerate(VM_FEATURES)}
NEW_ROWS = np.stack([VM_VCPUS, VM_PRICES, np.ones(N_TYPES)], axis=1)


@dataclass(frozen=True)
class SLAPenalty:
    """Penalty of one late workflow: ``per_late + per_hour * lateness_hours`` (0 if on time)."""

    per_late: float
    per_hour: float

    def __call__(self, lateness_s: float | np.ndarray) -> Any:
        late = np.maximum(lateness_s, 0.0)
        return np.where(late > 0, self.per_late + self.per_hour * late / 3600.0, 0.0)


GATES_PENALTY = SLAPenalty(per_late=1.0, per_hour=2.0)
PAPER_PENALTY = SLAPenalty(per_late=0.0, per_hour=0.24)
PENALTIES = {"gates": GATES_PENALTY, "paper": PAPER_PENALTY}


@dataclass
class Decision:
    """What a policy sees when a task becomes ready (arrays are fresh per decision).

    Attributes
    ----------
    now : float
        Simulation time (s).
    task : np.ndarray
        Task features, :data:`TASK_FEATURES`.
    vms : np.ndarray
        ``(candidates, len(VM_FEATURES))`` candidate features, :data:`VM_FEATURES`; the last
        six rows rent a new VM of each type.
    workflow : Workflow
        The ready task's workflow; ``task_index`` its index there; ``finished`` the workflow's
        per-task done flags; ``sub_deadlines`` its absolute sub-deadlines.
    arrivals : np.ndarray
        Arrival times of the workflows seen so far (the policy's view of the arrival rate).
    """

    now: float
    task: np.ndarray
    vms: np.ndarray
    workflow: Workflow
    task_index: int
    finished: np.ndarray
    sub_deadlines: np.ndarray
    arrivals: np.ndarray


class Policy(Protocol):
    """Chooses a candidate row of ``decision.vms`` (an index)."""

    def __call__(self, decision: Decision) -> int: ...


class PriorityPolicy:
    """A policy from a priority function ``fn(task, vms) -> scores``: the highest score wins.

    Non-finite scores never win; if every score is non-finite, or ``fn`` returns the wrong
    shape, :class:`ValueError` is raised (the program is wrong, not the simulator).
    """

    def __init__(self, fn: Callable[[np.ndarray, np.ndarray], Any]) -> None:
        self.fn = fn

    def __call__(self, decision: Decision) -> int:
        # Fresh arrays per decision: a function that writes into them changes nothing else.
        scores = np.asarray(self.fn(decision.task, decision.vms), dtype=float).reshape(-1)
        if scores.shape[0] != decision.vms.shape[0]:
            raise ValueError(f"priority returned {scores.shape[0]} scores for {decision.vms.shape[0]} VMs")
        scores = np.where(np.isfinite(scores), scores, -np.inf)
        best = int(np.argmax(scores))
        if not np.isfinite(scores[best]):
            raise ValueError("priority returned no finite score")
        return best


@dataclass
class Result:
    """Outcome of one simulated instance (all money in $)."""

    cost: float
    vm_cost: float
    penalty: float
    n_late: int
    n_workflows: int
    decisions: int
    vms_rented: int
    actions: list[int] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, float | int]:
        return {"cost": self.cost, "vm_cost": self.vm_cost, "penalty": self.penalty, "n_late": self.n_late,
                "n_workflows": self.n_workflows, "decisions": self.decisions, "vms_rented": self.vms_rented}


class _VMs:
    """Leased VMs as parallel numpy arrays (grown by doubling, never per-event objects)."""

    def __init__(self, capacity: int = 64) -> None:
        self.n = 0
        self.kind = np.zeros(capacity, dtype=np.int64)
        self.static = np.zeros((capacity, 3))  # vcpus, price, is_new (0): the rows' fixed features
        self.busy_until = np.zeros(capacity)
        self.paid_until = np.zeros(capacity)

    def add(self, kind: int, paid_until: float) -> int:
        if self.n == len(self.kind):
            for name in ("kind", "static", "busy_until", "paid_until"):
                arr = getattr(self, name)
                setattr(self, name, np.concatenate([arr, np.zeros_like(arr)]))
        self.kind[self.n], self.paid_until[self.n] = kind, paid_until
        self.static[self.n, :2] = VM_VCPUS[kind], VM_PRICES[kind]
        self.n += 1
        return self.n - 1


def simulate(instance: Instance, policy: Policy | Callable[[Decision], int], *,
             penalty: SLAPenalty = GATES_PENALTY, actions: list[int] | None = None,
             record: bool = False) -> Result:
    """Run ``instance`` with ``policy`` (or replay fixed ``actions``) and compute the cost.

    Parameters
    ----------
    instance : Instance
        The workload.
    policy : callable
        ``policy(decision) -> index`` into ``decision.vms``; ignored when ``actions`` is given.
    penalty : SLAPenalty
        The SLA penalty rule (default: the GATES code's).
    actions : list of int, optional
        Replay these decisions instead of asking ``policy`` (the trusted scorer's path).
    record : bool
        Keep the decisions taken in ``Result.actions``.

    Returns
    -------
    Result

    Raises
    ------
    ValueError
        If a decision is not a valid candidate index, or ``actions`` has the wrong length.
    """
    n_wf = len(instance.workflows)
    vms = _VMs()
    vm_cost = 0.0
    remaining = [np.array([len(p) for p in wf.parents], dtype=np.int64) for wf in instance.workflows]
    finished = [np.zeros(wf.n_tasks, dtype=bool) for wf in instance.workflows]
    done_count = np.zeros(n_wf, dtype=np.int64)
    wf_finish = np.zeros(n_wf)
    deadlines = np.empty(n_wf)
    sub_deadlines: list[np.ndarray] = [np.empty(0)] * n_wf
    taken: list[int] = []
    events: list[tuple[float, int, int, int]] = []  # (time, seq, workflow, task or -1 = arrival)
    seq = 0
    for w, a in enumerate(instance.arrivals):
        events.append((float(a), seq, w, -1))
        seq += 1
    heapq.heapify(events)
    n_arrived = 0
    active = np.zeros(0, dtype=np.int64)  # leased VMs not yet released
    next_expiry = np.inf

    while events:
        now, _, w, t = heapq.heappop(events)
        wf = instance.workflows[w]
        if t < 0:  # arrival: set the deadline and sub-deadlines; the entry tasks are ready
            n_arrived += 1
            cp = wf.critical_work
            span = instance.gamma * cp / FASTEST
            deadlines[w] = now + span
            sub_deadlines[w] = now + span * (cp - wf.upward_rank + wf.work) / cp if cp > 0 else \
                np.full(wf.n_tasks, now)
            ready = [i for i in range(wf.n_tasks) if remaining[w][i] == 0]
        else:  # completion
            finished[w][t] = True
            done_count[w] += 1
            if done_count[w] == wf.n_tasks:
                wf_finish[w] = now
            ready = []
            for c in wf.children[t]:
                remaining[w][c] -= 1
                if remaining[w][c] == 0:
                    ready.append(int(c))
        for i in ready:
            # Candidates: VMs whose paid time is not over (others are released), then new types.
            if now >= next_expiry:
                active = active[vms.paid_until[active] > now]
                next_expiry = float(vms.paid_until[active].min()) if len(active) else np.inf
            n_old = len(active)
            feats = np.empty((n_old + N_TYPES, len(VM_FEATURES)))
            feats[:n_old, :3] = vms.static[active]
            feats[n_old:, :3] = NEW_ROWS
            start = np.concatenate([np.maximum(vms.busy_until[active], now), np.full(N_TYPES, now)])
            paid = np.concatenate([vms.paid_until[active], np.full(N_TYPES, now)])
            run = feats[:, 3]
            np.divide(wf.work[i], feats[:, 0], out=run)
            finish = start + run
            extra_h = np.ceil(np.maximum(finish - paid, 0.0) * (1.0 / BILLING_PERIOD) - 1e-9)
            np.maximum(extra_h[n_old:], 1.0, out=extra_h[n_old:])
            feats[:, 4] = start - now
            feats[:, 5] = sub_deadlines[w][i] - finish
            np.multiply(extra_h, feats[:, 1], out=feats[:, 6])
            feats[:, 7] = paid + extra_h * BILLING_PERIOD - finish
            feats[:, 8] = deadlines[w] - finish
            kinds_n = n_old + N_TYPES
            if actions is not None:
                if len(taken) >= len(actions):
                    raise ValueError(f"actions: only {len(actions)} decisions given; more are needed")
                choice = actions[len(taken)]
            else:
                task_feats = np.array([wf.work[i], sub_deadlines[w][i] - now, deadlines[w] - now,
                                       len(wf.children[i]), done_count[w] / wf.n_tasks, instance.gamma])
                choice = policy(Decision(now, task_feats, feats, wf, i, finished[w], sub_deadlines[w],
                                         instance.arrivals[:n_arrived]))
            if isinstance(choice, bool) or not isinstance(choice, (int, np.integer)) or \
                    not 0 <= choice < kinds_n:
                raise ValueError(f"decision {len(taken)}: {choice!r} is not a candidate index "
                                 f"(0..{kinds_n - 1})")
            choice = int(choice)
            taken.append(choice)
            if choice >= n_old:
                vm = vms.add(choice - n_old, now)
                active = np.append(active, vm)
            else:
                vm = int(active[choice])
            vm_cost += float(feats[choice, 6])
            vms.paid_until[vm] = paid[choice] + extra_h[choice] * BILLING_PERIOD
            vms.busy_until[vm] = finish[choice]
            next_expiry = min(next_expiry, float(vms.paid_until[vm]))
            heapq.heappush(events, (float(finish[choice]), seq, w, i))
            seq += 1
    if actions is not None and len(taken) != len(actions):
        raise ValueError(f"actions: {len(actions)} decisions given, the instance needs {len(taken)}")
    late = wf_finish - deadlines
    late = np.where(late > 1e-6, late, 0.0)  # a finish on the deadline, up to rounding, is on time
    pen = float(np.sum(penalty(late)))
    return Result(cost=vm_cost + pen, vm_cost=vm_cost, penalty=pen, n_late=int(np.sum(late > 0)),
                  n_workflows=n_wf, decisions=len(taken), vms_rented=vms.n,
                  actions=taken if (record or actions is not None) else [])


def evaluate(instances: list[Instance], policy: Policy | Callable[[Decision], int], *,
             penalty: SLAPenalty = GATES_PENALTY) -> dict[str, float]:
    """Mean cost, VM cost, penalty and late workflows of ``policy`` over ``instances``."""
    results = [simulate(inst, policy, penalty=penalty) for inst in instances]
    return {key: float(np.mean([r.to_dict()[key] for r in results]))
            for key in ("cost", "vm_cost", "penalty", "n_late", "decisions")}

