"""The Ray engine runs the same scheme as the in-process engine: same seed, same merged model.

Ray starts once for the module (2 CPUs); one set of 3 actors serves every run.
"""

import numpy as np
import pytest
import torch

ray = pytest.importorskip("ray")

from optiforge.optim.distributed import (  # noqa: E402 - after the importorskip
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
    train_decentralized,
    train_federated,
)
from optiforge.platform.distributed import load_dataset, make_engine  # noqa: E402

AGENTS = 3


@pytest.fixture(scope="module")
def engine():
    owned = not ray.is_initialized()
    if owned:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    eng = make_engine("ray")
    yield eng
    eng.close()
    if owned:
        ray.shutdown()


@pytest.fixture(scope="module")
def problem():
    data = load_dataset("digits", seed=0)
    shards = dirichlet_partition(data.y_train, AGENTS, 0.3, np.random.default_rng(0))
    return data, shards


def _model() -> FlatModel:
    return FlatModel(mlp(64, 10, (16,), seed=0))


def _decentralized(engine, problem):
    data, shards = problem
    cfg = DecentralizedConfig(rounds=8, local_steps=2, batch_size=16, lr=0.2, momentum=0.5,
                              eval_every=4, seed=5,
                              schedule=Schedule(Gossip(0.6), Windows("late", 0.25), final_merge=True))
    return train_decentralized(engine, _model(), data, shards, cfg)


def test_same_decentralized_run_on_ray_and_in_process(engine, problem):
    local = _decentralized(LocalEngine(), problem)
    on_ray = _decentralized(engine, problem)
    assert torch.allclose(local.theta, on_ray.theta, atol=1e-5)
    assert local.curves["comm"] == on_ray.curves["comm"] and sum(local.curves["comm"]) >= 3
    assert local.final["bits"] == on_ray.final["bits"]
    assert np.allclose(local.curves["merged_acc"], on_ray.curves["merged_acc"], atol=1e-6)
    assert np.allclose(local.curves["consensus"], on_ray.curves["consensus"], rtol=1e-4, atol=1e-8)
    # All-reduce through the object store instead of the collective API (gloo sums in its own
    # order): the actors then add the same numbers in the same order as the in-process engine.
    engine.collective = False
    try:
        via_store = _decentralized(engine, problem)
    finally:
        engine.collective = True
    assert torch.equal(local.theta, via_store.theta)


@pytest.mark.parametrize("method", [
    ADI(lr=0.3, a=2.0, compressor=RandK(fraction=0.1)),
    FedAvg(client_lr=0.1, local_steps=2, batch_size=16, compressor=Natural()),
], ids=["adi-randk", "fedavg-natural"])
def test_same_federated_run_on_ray_and_in_process(engine, problem, method):
    data, shards = problem
    cfg = FederatedConfig(rounds=6, participation=0.7, eval_every=3, seed=1)
    local = train_federated(LocalEngine(), _model(), data, shards, method, cfg)
    on_ray = train_federated(engine, _model(), data, shards, method, cfg)
    assert torch.allclose(local.theta, on_ray.theta, atol=1e-5)
    assert local.final["bits_up"] == on_ray.final["bits_up"]
    assert local.curves["participants"] == on_ray.curves["participants"]
    assert np.allclose(local.curves["pi"], on_ray.curves["pi"], atol=1e-6)


def test_engine_names_are_checked():
    with pytest.raises(ValueError, match="engine: must be one of local, ray"):
        make_engine("mpi")
    with pytest.raises(ValueError, match="address"):
        make_engine("local", address="auto")


@pytest.mark.slow  # new actors and a gloo group through the CLI: ~15 s idle, ~40 s under load
def test_cli_engine_flag_picks_ray_and_gives_the_local_run(engine, tmp_path):
    """``optiforge train ... --engine ray`` (joining this module's Ray) gives the local run."""
    import json

    from typer.testing import CliRunner

    from optiforge.platform.cli.main import app

    args = ["train", "decentralized", "--agents", "2", "--hidden", "8", "--rounds", "4",
            "--eval-every", "2", "--schedule", "late", "--budget", "0.25", "--json"]
    # The fixture's actors hold every CPU of this 2-CPU Ray (2/3 each): the CLI's actors would
    # wait for them forever. close() stops them (it leaves a Ray it did not start running).
    engine.close()
    finals = {}
    for name in ("local", "ray"):
        r = CliRunner().invoke(app, [*args, "--engine", name, "--out", str(tmp_path / name)])
        assert r.exit_code == 0, r.output
        [finals[name]] = json.loads(r.stdout)["final"].values()
        assert json.loads((tmp_path / name / "decentralized.json").read_text())["engine"] == name
    assert finals["ray"]["bits"] == finals["local"]["bits"] > 0
    assert finals["ray"]["merged_acc"] == pytest.approx(finals["local"]["merged_acc"], abs=1e-6)
    assert ray.is_initialized()  # the CLI's engine did not shut down a Ray it did not start
