import numpy as np

from optiforge.heuristics.scheduling.baselines import BASELINES
from optiforge.heuristics.scheduling.instances import holdout_instances
from optiforge.heuristics.scheduling.simulator import PriorityPolicy, evaluate


def test_prolis_is_cheapest_and_reusing_vms_beats_renting_per_task():
    insts = holdout_instances("S", 1.5, n=3)
    costs = {name: evaluate(insts, PriorityPolicy(fn)) for name, fn in BASELINES.items()}
    assert costs["prolis"]["cost"] < costs["heft"]["cost"] < costs["cheapest"]["cost"]
    # ProLiS meets every sub-deadline it can, so no workflow is late at gamma = 1.5.
    assert costs["prolis"]["n_late"] == 0


def test_heft_ignores_the_deadline_so_its_cost_does_not_drop_with_gamma():
    tight, loose = holdout_instances("S", 1.0, n=2), holdout_instances("S", 3.0, n=2)
    prolis = [evaluate(s, PriorityPolicy(BASELINES["prolis"]))["cost"] for s in (tight, loose)]
    heft = [evaluate(s, PriorityPolicy(BASELINES["heft"]))["cost"] for s in (tight, loose)]
    assert prolis[1] < 0.8 * prolis[0]  # looser deadlines allow slower, cheaper VMs
    assert heft[1] > 0.9 * heft[0]
    assert np.isfinite(heft).all()
