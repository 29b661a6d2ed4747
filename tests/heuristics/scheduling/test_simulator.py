import numpy as np
import pytest

from optiforge.heuristics.scheduling.baselines import BASELINES
from optiforge.heuristics.scheduling.instances import Instance, holdout_instances
from optiforge.heuristics.scheduling.simulator import (
    COL,
    GATES_PENALTY,
    N_TYPES,
    PAPER_PENALTY,
    PriorityPolicy,
    simulate,
)
from optiforge.heuristics.scheduling.workflows import Workflow

# Task 0 runs 1800 s and task 1 900 s on the 48-vCPU VM: CP = 2700 s.
CHAIN = Workflow("chain", np.array([48 * 1800.0, 48 * 900.0]), ("a", "b"), np.array([[0, 1]]))


def one(gamma=2.0, arrivals=(0.0,)):
    return Instance(workflows=(CHAIN,) * len(arrivals), arrivals=np.array(arrivals), gamma=gamma)


class Scripted:
    """Rent type ``kind`` for the first task of each workflow; reuse VM row 0 or rent again."""

    def __init__(self, kind, reuse):
        self.kind, self.reuse, self.seen = kind, reuse, []

    def __call__(self, d):
        self.seen.append(d)
        n_old = d.vms.shape[0] - N_TYPES
        if self.reuse and n_old and d.task_index == 1:
            return 0
        return n_old + self.kind


def test_fastest_vm_then_reuse_costs_one_hour_and_meets_the_deadline():
    policy = Scripted(kind=5, reuse=True)
    r = simulate(one(), policy)
    assert r.vm_cost == pytest.approx(2.304) and r.penalty == 0 and r.n_late == 0
    assert r.vms_rented == 1 and r.decisions == 2
    first, second = policy.seen
    # ProLiS sub-deadlines: a + 5400 * (CP - rank + w) / CP -> 3600 s and 5400 s.
    assert first.sub_deadlines == pytest.approx([3600.0, 5400.0])
    assert first.vms.shape == (N_TYPES, len(COL))
    reuse = second.vms[0]
    assert reuse[COL["extra_cost"]] == 0 and reuse[COL["wait"]] == 0
    assert reuse[COL["slack"]] == pytest.approx(5400 - 2700)
    assert reuse[COL["remaining_paid"]] == pytest.approx(3600 - 2700)


def test_per_started_hour_billing_and_the_two_penalty_rules():
    # 2-vCPU VMs: 12 h + 6 h of rental; the workflow ends 16.5 h after its deadline.
    r = simulate(one(), Scripted(kind=0, reuse=False))
    assert r.vm_cost == pytest.approx(0.096 * 18)
    assert r.penalty == pytest.approx(1 + 2 * 16.5)
    assert simulate(one(), Scripted(kind=0, reuse=False), penalty=PAPER_PENALTY).penalty == \
        pytest.approx(0.24 * 16.5)


def test_lease_is_extended_by_whole_hours():
    # 16 vCPUs: task 0 runs 5400 s (2 h paid), task 1 on the same VM ends at 8100 s -> +1 h.
    r = simulate(one(), Scripted(kind=3, reuse=True))
    assert r.vm_cost == pytest.approx(0.768 * 3)
    assert r.penalty == pytest.approx(GATES_PENALTY(2700.0))


def test_an_expired_vm_is_released():
    policy = Scripted(kind=5, reuse=True)
    simulate(one(arrivals=(0.0, 10_000.0)), policy)
    assert policy.seen[2].vms.shape[0] == N_TYPES  # the first VM's hour ended at 3600 s


def test_replaying_recorded_actions_gives_the_same_cost():
    inst = holdout_instances("S", 1.5, n=1)[0]
    r = simulate(inst, PriorityPolicy(BASELINES["prolis"]), record=True)
    assert len(r.actions) == r.decisions == inst.n_tasks
    again = simulate(inst, None, actions=r.actions)
    assert again.cost == pytest.approx(r.cost)
    with pytest.raises(ValueError, match="actions"):
        simulate(inst, None, actions=r.actions[:-1])
    with pytest.raises(ValueError, match="actions"):
        simulate(inst, None, actions=r.actions + [0])
    with pytest.raises(ValueError, match="candidate index"):
        simulate(inst, None, actions=[99] * len(r.actions))


def test_priority_policy_rejects_wrong_shapes_and_non_finite_scores():
    with pytest.raises(ValueError, match="scores"):
        simulate(one(), PriorityPolicy(lambda task, vms: np.zeros(2)))
    with pytest.raises(ValueError, match="finite"):
        simulate(one(), PriorityPolicy(lambda task, vms: np.full(len(vms), np.nan)))
