"""The in-process engine: vmap over stacked agents = a loop over the same per-agent functions."""

import numpy as np
import pytest
import torch
from torch import nn

from optiforge.optim.distributed import (
    ADI,
    DecentralizedConfig,
    FedAvg,
    FederatedConfig,
    FlatModel,
    Gossip,
    LocalEngine,
    Natural,
    RandK,
    Schedule,
    Windows,
    dirichlet_partition,
    mlp,
    synthetic_classification,
    train_decentralized,
    train_federated,
)


@pytest.fixture(scope="module")
def problem():
    data = synthetic_classification(n_train=400, n_test=100, n_features=8, n_classes=4, seed=1)
    shards = dirichlet_partition(data.y_train, 5, 0.2, np.random.default_rng(1))
    return data, shards


def test_vmap_and_loop_give_the_same_decentralized_run(problem):
    data, shards = problem
    cfg = DecentralizedConfig(rounds=10, local_steps=3, batch_size=8, lr=0.2, momentum=0.5,
                              weight_decay=1e-3, eval_every=5, seed=3,
                              schedule=Schedule(Gossip(0.5), Windows("late", 0.2)))
    runs = [train_decentralized(LocalEngine(vectorize=v), FlatModel(mlp(8, 4, (16,))), data, shards, cfg)
            for v in (True, False)]
    assert torch.allclose(runs[0].theta, runs[1].theta, atol=1e-6)
    assert runs[0].curves["comm"] == runs[1].curves["comm"]
    assert np.allclose(runs[0].curves["merged_acc"], runs[1].curves["merged_acc"])


@pytest.mark.parametrize("method", [
    ADI(lr=0.3, a=2.5, compressor=RandK(fraction=0.2)),
    ADI(lr=0.3, a=2.5, compressor=RandK(fraction=0.2), batch_size=16),
    FedAvg(client_lr=0.1, local_steps=3, batch_size=8, compressor=Natural()),
], ids=["adi-full", "adi-batch", "fedavg"])
def test_vmap_and_loop_give_the_same_federated_run(problem, method):
    data, shards = problem
    cfg = FederatedConfig(rounds=8, participation=0.6, eval_every=4, seed=2)
    runs = [train_federated(LocalEngine(vectorize=v), FlatModel(mlp(8, 4, (16,))), data, shards,
                            method, cfg) for v in (True, False)]
    assert torch.allclose(runs[0].theta, runs[1].theta, atol=1e-6)
    assert runs[0].final["bits_up"] == runs[1].final["bits_up"]
    assert runs[0].curves["participants"] == runs[1].curves["participants"]


def test_same_seed_same_run_and_another_seed_differs(problem):
    data, shards = problem
    cfg = DecentralizedConfig(rounds=4, local_steps=2, batch_size=8, schedule=Schedule(Gossip(0.5)))
    a, b = (train_decentralized(LocalEngine(), FlatModel(mlp(8, 4, (8,))), data, shards, cfg) for _ in "ab")
    c = train_decentralized(LocalEngine(), FlatModel(mlp(8, 4, (8,))), data, shards,
                            DecentralizedConfig(rounds=4, local_steps=2, batch_size=8, seed=1,
                                                schedule=Schedule(Gossip(0.5))))
    assert torch.equal(a.theta, b.theta) and not torch.allclose(a.theta, c.theta)


def test_models_with_running_statistics_are_refused():
    with pytest.raises(TypeError, match="model: modules with floating buffers"):
        FlatModel(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)))
    with pytest.raises(TypeError, match="model: expected a torch.nn.Module"):
        FlatModel("mlp")


def test_config_arguments_are_checked():
    with pytest.raises(ValueError, match="rounds: must be >= 1"):
        DecentralizedConfig(rounds=0)
    with pytest.raises(ValueError, match="lr: must be > 0"):
        DecentralizedConfig(lr=-0.1)
    with pytest.raises(TypeError, match="schedule"):
        DecentralizedConfig(schedule="late")
    with pytest.raises(ValueError, match="r: must be in"):
        Gossip(1.5)
