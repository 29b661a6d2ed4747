import numpy as np
import pytest
import torch

from optiforge.heuristics.scheduling.instances import train_instances
from optiforge.heuristics.scheduling.policy import DeftConfig, DeftPolicy, GATLayer, load_policy
from optiforge.heuristics.scheduling.simulator import simulate


@pytest.fixture(scope="module")
def instance():
    return train_instances(1.5, 1, n_workflows=2)[0]


def test_gat_layer_only_mixes_neighbours():
    torch.manual_seed(0)
    layer = GATLayer(3, 4, heads=2)
    x = torch.randn(4, 3)
    adj = torch.eye(4, dtype=torch.bool)
    adj[0, 1] = adj[1, 0] = True
    out = layer(x, adj)
    assert out.shape == (4, 8)
    x2 = x.clone()
    x2[3] += 5.0  # node 3 is isolated: it changes nothing for nodes 0-2
    out2 = layer(x2, adj)
    assert torch.allclose(out[:3], out2[:3]) and not torch.allclose(out[3], out2[3])
    x3 = x.clone()
    x3[1] += 5.0
    assert not torch.allclose(layer(x3, adj)[0], out[0])


@pytest.mark.parametrize("config", [DeftConfig(), DeftConfig(1, None), DeftConfig(4, "linear"),
                                    DeftConfig(4, "mlp")])
def test_every_variant_schedules_an_instance(config, instance):
    policy = DeftPolicy(config)
    r = simulate(instance, policy)
    assert r.decisions == instance.n_tasks and r.cost > 0
    assert policy.expert_counts.sum() == r.decisions


def test_the_gate_routes_and_the_chosen_expert_decides(instance):
    policy = DeftPolicy(DeftConfig(), seed=1)
    flat = policy.get_flat()
    r1 = simulate(instance, policy, record=True)
    used = int(np.argmax(policy.expert_counts))
    # Make every unused expert's output huge on row 0: decisions must not change if routing is top-1.
    for k, expert in enumerate(policy.experts):
        if policy.expert_counts[k] == 0:
            expert[-1].bias.data += 1e6
    policy.expert_counts[:] = 0
    assert simulate(instance, policy, record=True).actions == r1.actions
    policy.set_flat(flat)
    policy.experts[used][-1].weight.data *= -1  # flipping the used expert changes decisions
    assert simulate(instance, policy, record=True).actions != r1.actions


def test_flat_parameters_and_save_load_round_trip(tmp_path, instance):
    policy = DeftPolicy(DeftConfig(4, "mlp"), seed=3)
    path = tmp_path / "m.pt"
    policy.save(str(path))
    loaded = load_policy(str(path))
    assert np.array_equal(loaded.get_flat(), policy.get_flat())
    assert simulate(instance, loaded).cost == simulate(instance, policy).cost
    with pytest.raises(ValueError, match="flat"):
        policy.set_flat(np.zeros(3))
    (tmp_path / "bad.pt").write_bytes(b"nope")
    with pytest.raises(ValueError, match="model"):
        load_policy(str(tmp_path / "bad.pt"))
    with pytest.raises(FileNotFoundError, match="model"):
        load_policy(str(tmp_path / "none.pt"))


@pytest.mark.parametrize("kwargs, match", [({"experts": 0}, "experts"), ({"gate": "attention"}, "gate"),
                                           ({"experts": 1, "gate": "graph"}, "gate")])
def test_bad_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DeftConfig(**kwargs)
