import numpy as np
import pytest

optuna = pytest.importorskip("optuna")

from optiforge.blackbox import get_blackbox_task  # noqa: E402
from optiforge.integrations.optuna import (  # noqa: E402
    AgentSampler,
    HOLLMSampler,
    space_from_distributions,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_create_study_with_hollm_sampler_mixed_space(tmp_path):
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    study = optuna.create_study(sampler=HOLLMSampler(seed=0), storage=storage, study_name="s")

    def objective(trial):
        x = trial.suggest_float("x", -5, 5)
        lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
        n = trial.suggest_int("n", 1, 9, step=2)
        c = trial.suggest_categorical("c", ["a", "b", None])
        return (x - 1) ** 2 + abs(np.log10(lr) + 2) + abs(n - 5) + (0 if c == "b" else 1)

    study.optimize(objective, n_trials=30)
    assert len(study.trials) == 30
    assert study.best_value < 2.0
    loaded = optuna.load_study(study_name="s", storage=storage)
    assert loaded.best_trial.number == study.best_trial.number
    for t in study.trials:
        assert -5 <= t.params["x"] <= 5 and t.params["n"] in (1, 3, 5, 7, 9)


def test_maximize_and_beats_random_sampler():
    task = get_blackbox_task("hartmann-3")

    def objective(trial):
        return -task({f"x{i}": trial.suggest_float(f"x{i}", 0, 1) for i in (1, 2, 3)})

    ours, rand = [], []
    for seed in range(3):
        s = optuna.create_study(direction="maximize", sampler=HOLLMSampler(seed=seed, agent_options={"proposer": "gaussian"}))
        s.optimize(objective, n_trials=40)
        ours.append(s.best_value)
        r = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=seed))
        r.optimize(objective, n_trials=40)
        rand.append(r.best_value)
    assert np.median(ours) > np.median(rand)


def test_sampler_errors_and_space_translation():
    with pytest.raises(ValueError, match="llm"):
        HOLLMSampler(agent_options={"proposer": "llm"})
    with pytest.raises(ValueError, match=r"agent_options\.m"):
        HOLLMSampler(agent_options={"m": 0})
    sp = space_from_distributions({
        "a": optuna.distributions.FloatDistribution(0.1, 1.0, log=True),
        "b": optuna.distributions.IntDistribution(0, 10, step=5),
        "c": optuna.distributions.CategoricalDistribution([1, "x"]),
    })
    assert sp.to_dict() == {"a": {"type": "float", "low": 0.1, "high": 1.0, "log": True},
                            "b": {"type": "int", "low": 0, "high": 10, "step": 5},
                            "c": {"type": "categorical", "choices": [1, "x"]}}
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=HOLLMSampler(seed=0))
    with pytest.raises(ValueError, match="single-objective"):
        study.optimize(lambda t: (t.suggest_float("x", 0, 1), 1.0), n_trials=3, catch=())


def test_any_registered_agent_is_a_sampler_and_replays_like_a_study(tmp_path):
    """AgentSampler builds its agent from the registry and replays trials like a Study does:
    the same told values give the same next point as an optiforge study with the same seed."""
    from optiforge import create_study

    with pytest.raises(ValueError, match="agent: unknown agent 'tpe'"):
        AgentSampler("tpe")
    space = {"x": {"type": "float", "low": 0.0, "high": 1.0}}
    ours = create_study(space, agent="random", seed=7, storage=f"sqlite:///{tmp_path / 's.db'}")
    study = optuna.create_study(sampler=AgentSampler("random", seed=7))
    # Optuna samples a trial before any search space is known with its fallback sampler:
    # record that first point in both, then every later point comes from the agent.
    first = study.ask({"x": optuna.distributions.FloatDistribution(0.0, 1.0)})
    study.tell(first, first.params["x"] ** 2)
    ours.add_trial(first.params, first.params["x"] ** 2)
    for _ in range(4):
        trial = study.ask({"x": optuna.distributions.FloatDistribution(0.0, 1.0)})
        mine = ours.ask()[0]
        assert trial.params["x"] == pytest.approx(mine.params["x"])
        study.tell(trial, trial.params["x"] ** 2)
        ours.tell(mine.id, mine.params["x"] ** 2)
