"""Dynamic cloud workflow scheduling: workflows, the event-driven simulator, baselines, DEFT.

Importing this package loads numpy/networkx only; the DEFT policy (:mod:`.policy`) and its
evolution-strategies training (:mod:`.train`) need torch and are imported lazily.
"""

from optiforge.heuristics.scheduling.baselines import BASELINES
from optiforge.heuristics.scheduling.instances import (
    EXPERT_GAMMAS,
    TEST_GAMMAS,
    Instance,
    holdout_instances,
    make_instance,
    train_instances,
)
from optiforge.heuristics.scheduling.simulator import (
    GATES_PENALTY,
    PAPER_PENALTY,
    PENALTIES,
    Decision,
    PriorityPolicy,
    Result,
    SLAPenalty,
    evaluate,
    simulate,
)
from optiforge.heuristics.scheduling.workflows import (
    SCALES,
    WORKFLOW_TYPES,
    Workflow,
    generate_workflow,
    load_wfformat,
    template,
)

__all__ = [
    "BASELINES", "EXPERT_GAMMAS", "GATES_PENALTY", "PAPER_PENALTY", "PENALTIES", "SCALES", "TEST_GAMMAS",
    "WORKFLOW_TYPES", "Decision", "Instance", "PriorityPolicy", "Result", "SLAPenalty", "Workflow",
    "evaluate", "generate_workflow", "holdout_instances", "load_wfformat", "make_instance", "simulate",
    "template", "train_instances",
]
