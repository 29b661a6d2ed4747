"""Heuristic baselines, written as priority functions ``priority(task, vms) -> scores``.

Each scores the candidate rows of ``vms`` (columns :data:`~.simulator.VM_FEATURES`: 0 vcpus,
1 price, 2 is_new, 3 exec_time, 4 wait, 5 slack, 6 extra_cost, 7 remaining_paid, 8
deadline_slack); the highest score is chosen. They import numpy only, so the same source is
the seed of the evolvable ``workflow`` task (:mod:`.task`).

* :func:`prolis` - ProLiS [1]_: among all candidates (leased VMs and new ones) that meet the
  task's sub-deadline, the one with the least added cost (ties: the longest-leased VM, which
  packs work onto fewer VMs; breaking ties by earliest finish instead cost 15 % more on the
  train split); if none meets it, the earliest finish.
* :func:`heft` - GRP-HEFT-style [2]_: HEFT's earliest-finish-time rule over the leased VMs and
  a new VM of each type (ties: least added cost). All six types have the same price per vCPU,
  so GRP's efficiency ranking leaves the fastest type; this is the deadline-first extreme.
* :func:`cheapest` - rent a new VM of the cheapest type that meets the sub-deadline (the
  fastest type if none does); never reuses a VM.

References
----------
.. [1] Q. Wu, F. Ishikawa, Q. Zhu, Y. Xia, J. Wen, "Deadline-constrained cost optimization
   approaches for workflow scheduling in clouds", IEEE TPDS 28(12), 2017.
.. [2] H. R. Faragardi, M. R. Saleh Sedghpour, S. Fazliahmadi, T. Fahringer, N. Rasouli,
   "GRP-HEFT: A budget-constrained resource provisioning scheme for workflow scheduling in
   IaaS clouds", IEEE TPDS 31(6), 2020.
"""

from __future__ import annotations

import numpy as np


def prolis(task: np.ndarray, vms: np.ndarray) -> np.ndarray:
    meets = vms[:, 5] >= 0
    if meets.any():
        return np.where(meets, -vms[:, 6], -np.inf)
    return -(vms[:, 3] + vms[:, 4])


def heft(task: np.ndarray, vms: np.ndarray) -> np.ndarray:
    finish = vms[:, 4] + vms[:, 3]
    return -finish - 1e-6 * vms[:, 6]


def cheapest(task: np.ndarray, vms: np.ndarray) -> np.ndarray:
    new = vms[:, 2] > 0
    meets = new & (vms[:, 5] >= 0)
    if meets.any():
        return np.where(meets, -vms[:, 1], -np.inf)
    return np.where(new, vms[:, 0], -np.inf)


BASELINES = {"prolis": prolis, "heft": heft, "cheapest": cheapest}
"""Name -> priority function."""
