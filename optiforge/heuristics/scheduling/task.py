"""The evolvable workflow-scheduling task ("workflow"): the LLM writes the VM-priority rule.

What the sandbox loads: this module, :mod:`.simulator`, :mod:`.instances`,
:mod:`.workflows` and :mod:`.baselines` (numpy only). ``solve`` runs the untrusted
``priority`` inside the simulator and returns only the decisions it took; ``score`` replays
those decisions in this (trusted) process on its own copy of the instances and computes the
cost, so a program cannot report its own cost.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from optiforge.heuristics.base import SPLITS
from optiforge.heuristics.scheduling import baselines
from optiforge.heuristics.scheduling.instances import (
    TEST_GAMMAS,
    Instance,
    holdout_instances,
    train_instances,
)
from optiforge.heuristics.scheduling.simulator import PriorityPolicy, simulate
from optiforge.heuristics.scheduling.workflows import template
from optiforge.types import Evaluation

IMPORTS = "import numpy as np\nimport math\n"

DESCRIPTION = (
    "Dynamic workflow scheduling on rented cloud VMs: scientific workflows (DAGs of tasks) "
    "arrive over time, each with a deadline. Each time a task becomes ready, it must be placed "
    "on one of the VMs already rented (they run their tasks one at a time, in order) or on a new "
    "VM of one of six types (2 to 48 vCPUs, price proportional to vCPUs, billed per started "
    "hour). The goal is the least total cost = VM rental + penalty for late workflows "
    "(1 $ + 2 $ per hour late). The function `priority(task, vms)` gets the task's features and "
    "one row of features per candidate VM and returns one score per candidate; the task goes to "
    "the candidate with the highest score. Reusing paid-for idle time is free; a slow VM is "
    "cheap per hour but may miss the deadline."
)

TEMPLATE = '''import numpy as np
import math


def priority(task: np.ndarray, vms: np.ndarray) -> np.ndarray:
    """Scores every candidate VM for the task that just became ready.

    Args:
        task: [work (vCPU-seconds), seconds to the task's sub-deadline, seconds to the
            workflow's deadline, number of child tasks, fraction of the workflow done,
            deadline coefficient gamma].
        vms: One row per candidate (rented VMs first, then one new VM of each of the six
            types), columns: [vcpus, price $/hour, 1 if renting a new VM, run time of the
            task there (s), wait before it can start (s), sub-deadline minus finish time (s;
            >= 0 meets it), rental cost it adds ($), paid time left after the task (s),
            workflow deadline minus finish time (s)].

    Returns:
        One score per row of `vms`; the task goes to the highest.
    """
    meets = vms[:, 5] >= 0
    if meets.any():
        return np.where(meets, -vms[:, 6], -np.inf)
    return -(vms[:, 3] + vms[:, 4])
'''


def _seed(fn: Callable[..., Any]) -> str:
    # The baselines module is the one copy of each rule; the seed is its source, renamed.
    src = inspect.getsource(fn).replace(f"def {fn.__name__}(", "def priority(", 1)
    return IMPORTS + "\n\n" + src


SEEDS: dict[str, str] = {name: _seed(fn) for name, fn in baselines.BASELINES.items()}

# split -> (scale, instances per gamma, workflows per instance, source)
_SPLITS: dict[str, tuple[str, int, int, str]] = {
    "train": ("S", 2, 10, "train"),
    "validation": ("S", 1, 30, "train"),
    "test": ("S", 5, 30, "holdout"),
}


@cache
def split_instances(split: str) -> tuple[Instance, ...]:
    """The fixed instances of ``split``: scale S, every test gamma.

    Raises
    ------
    ValueError
        If ``split`` is not train / validation / test.
    """
    if split not in _SPLITS:
        raise ValueError(f"split: unknown split {split!r}; use one of {', '.join(SPLITS)}")
    scale, per_gamma, n_wf, source = _SPLITS[split]
    out: list[Instance] = []
    for g in TEST_GAMMAS:
        if source == "holdout":
            out += holdout_instances(scale, g, n=per_gamma, n_workflows=n_wf)
        else:
            out += train_instances(g, per_gamma, n_workflows=n_wf, scale=scale,
                                   offset=1 if split == "validation" else 0)
    return tuple(out)


def _payload(inst: Instance) -> dict[str, Any]:
    return {"workflows": [[w.name.split("_")[0], w.n_tasks] for w in inst.workflows],
            "arrivals": inst.arrivals.tolist(), "gamma": inst.gamma}


class WorkflowSchedulingTask:
    """Dynamic cloud workflow scheduling with an evolvable ``priority(task, vms)`` rule.

    Score: mean total cost ($, VM rental + SLA penalty under the GATES rule) over the split's
    instances, computed by the trusted simulator from the decisions the program took. Lower
    is better. ``train``: 7 gammas x 2 instances of 10 workflows; ``validation``: 7 x 1 of 30;
    ``test``: 7 x 5 of 30 held-out workflows (scale S).

    References
    ----------
    .. [1] Y. Shen, G. Chen, H. Ma, M. Zhang, "Deft Scheduling of Dynamic Cloud Workflows with
       Varying Deadlines via Mixture-of-Experts", ICLR 2026 (arXiv 2606.01162).
    .. [2] Q. Wu et al., "Deadline-constrained cost optimization approaches for workflow
       scheduling in clouds", IEEE TPDS 28(12), 2017 (ProLiS, the baseline seed).
    """

    name = "workflow"
    description = DESCRIPTION
    entry_point = "priority"
    template = TEMPLATE
    imports = IMPORTS
    baseline = "prolis"

    def __init__(self) -> None:
        self.seeds: dict[str, str] = dict(SEEDS)

    def inputs(self, split: str) -> dict[str, Any]:
        """JSON-able payload: ``{"instances": [{"workflows": [[kind, size]...], "arrivals", "gamma"}]}``."""
        return {"instances": [_payload(i) for i in split_instances(split)]}

    def solve(self, fn: Callable[..., Any], inputs: dict[str, Any]) -> list[list[int]]:
        """Simulate every instance with ``fn`` as the VM-priority rule; return the decisions."""
        policy = PriorityPolicy(fn)
        out = []
        for p in inputs["instances"]:
            inst = Instance(workflows=tuple(template(k, n) for k, n in p["workflows"]),
                            arrivals=np.asarray(p["arrivals"], dtype=float), gamma=float(p["gamma"]))
            out.append(simulate(inst, policy, record=True).actions)
        return out

    def score(self, split: str, solution: Any) -> Evaluation:
        """Replay ``solution`` on this process's own instances and compute the mean cost."""
        instances = split_instances(split)
        if not isinstance(solution, list) or len(solution) != len(instances):
            return Evaluation.invalid(f"solution must be a list of {len(instances)} decision lists")
        results = []
        for k, (inst, actions) in enumerate(zip(instances, solution, strict=True)):
            if not isinstance(actions, list) or not all(
                    isinstance(a, int) and not isinstance(a, bool) for a in actions):
                return Evaluation.invalid(f"instance {k}: decisions must be a list of ints")
            try:
                results.append(simulate(inst, None, actions=actions))
            except ValueError as exc:
                return Evaluation.invalid(f"instance {k}: {exc}")
        metrics = {key: float(np.mean([r.to_dict()[key] for r in results]))
                   for key in ("vm_cost", "penalty", "n_late")}
        return Evaluation(valid=True, score=float(np.mean([r.cost for r in results])), metrics=metrics)
