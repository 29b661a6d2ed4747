import numpy as np
import pytest

from optiforge.heuristics.checkpoints import DirectoryCheckpointer
from optiforge.heuristics.scheduling.policy import DeftConfig
from optiforge.heuristics.scheduling.train import (
    ESConfig,
    SerialMap,
    TrainState,
    centred_ranks,
    train_deft,
)

TINY = ESConfig(population=4, sigma=0.05, lr=0.01, instances=1, workflows=1, seed=5)


def test_centred_ranks():
    assert centred_ranks(np.array([3.0, -1.0, 10.0])).tolist() == [0.0, -0.5, 0.5]


def test_es_reduces_the_cost_of_a_single_expert():
    # A real (if small) learning signal: a random policy rents expensive VMs; a few ES
    # generations must cut its cost on held-out instances.
    from optiforge.heuristics.scheduling.instances import train_instances
    from optiforge.heuristics.scheduling.policy import DeftPolicy
    from optiforge.heuristics.scheduling.simulator import evaluate

    es = ESConfig(population=8, sigma=0.1, lr=0.05, instances=1, workflows=2, seed=0)
    held_out = train_instances(1.5, 2, n_workflows=2, offset=999)
    before = evaluate(held_out, DeftPolicy(DeftConfig(1, None), seed=es.seed))["cost"]
    trained = train_deft(DeftConfig(1, None), (0, 5), es, mixed_gammas=(1.5,))
    after = evaluate(held_out, trained)["cost"]
    assert after < 0.8 * before


def test_two_stage_run_resumes_from_its_checkpoint(tmp_path):
    config = DeftConfig(2, "graph")
    ref = train_deft(config, (1, 1), TINY, expert_gammas=(1.25, 5.0), mixed_gammas=(1.5,))

    ck = DirectoryCheckpointer(tmp_path)
    seen = []
    with pytest.raises(KeyboardInterrupt):
        def stop(done, total, stats):
            seen.append(done)
            if done == 2:
                raise KeyboardInterrupt  # killed after stage 1
        train_deft(config, (1, 1), TINY, expert_gammas=(1.25, 5.0), mixed_gammas=(1.5,), checkpointer=ck,
                   progress=stop)
    state = TrainState.from_bytes(ck.latest())
    assert state.stage == 1 and len(state.experts) == 1 and state.generation == 1
    resumed = train_deft(config, (1, 1), TINY, expert_gammas=(1.25, 5.0), mixed_gammas=(1.5,), checkpointer=ck,
                         progress=lambda d, t, s: seen.append(d))
    assert seen == [1, 2, 3]
    assert np.array_equal(resumed.get_flat(), ref.get_flat())


@pytest.fixture(scope="module")
def serial_result():
    return train_deft(DeftConfig(1, None), (0, 2), TINY, mixed_gammas=(1.5,), executor=SerialMap()).get_flat()


def test_the_local_executor_gives_the_serial_result(serial_result):
    from optiforge.platform.executors import make_executor

    with make_executor("local", workers=2) as ex:
        local = train_deft(DeftConfig(1, None), (0, 2), TINY, mixed_gammas=(1.5,), executor=ex).get_flat()
    assert np.array_equal(serial_result, local)


@pytest.mark.slow
def test_the_ray_executor_gives_the_serial_result(serial_result):
    pytest.importorskip("ray")
    from optiforge.platform.executors import make_executor

    with make_executor("ray", workers=2) as ex:
        ray = train_deft(DeftConfig(1, None), (0, 2), TINY, mixed_gammas=(1.5,), executor=ex).get_flat()
    assert np.array_equal(serial_result, ray)


@pytest.mark.parametrize("kwargs, match", [({"population": 3}, "population"), ({"sigma": 0}, "sigma"),
                                           ({"penalty": "x"}, "penalty")])
def test_bad_es_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ESConfig(**kwargs)
