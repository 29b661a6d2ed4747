import numpy as np
import pytest

from optiforge.blackbox.bbob import GROUPS, bbob_task, function_group

cocoex = pytest.importorskip("cocoex")


def test_tasks_evaluate_cocos_functions_and_know_their_optimum():
    task = bbob_task(3, 5, instance=2)  # separable Rastrigin
    assert task.name == "bbob-f3-i2-d5" and task.dim == 5
    assert [p.low for p in task.space.params.values()] == [-5.0] * 5
    suite = cocoex.Suite("bbob", "instances: 2", "function_indices: 3 dimensions: 5")
    problem = suite.get_problem_by_function_dimension_instance(3, 5, 2)
    x = np.random.default_rng(0).uniform(-5, 5, 5)
    assert task.evaluate_array(x) == problem(x)
    # f_opt is the minimum: random points all have positive regret, and COCO's minimiser zero.
    values = [task.evaluate_array(z) for z in np.random.default_rng(1).uniform(-5, 5, (500, 5))]
    assert min(task.regret(v) for v in values) > 0


def test_instances_differ():
    a, b = bbob_task(1, 2, 1), bbob_task(1, 2, 2)
    assert a.optimum != b.optimum


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"function": 25, "dimension": 2}, "function"),
        ({"function": 1, "dimension": 4}, "dimension"),
        ({"function": 1, "dimension": 2, "instance": 0}, "instance"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bbob_task(**kwargs)
    with pytest.raises(TypeError, match="function"):
        bbob_task("1", 2)


def test_groups_cover_the_suite():
    assert sorted(f for ids in GROUPS.values() for f in ids) == list(range(1, 25))
    assert function_group(17) == "multimodal" and function_group(24) == "weakly-structured"
    with pytest.raises(ValueError, match="function"):
        function_group(0)


def test_hollm_smoke_on_bbob_beats_random_search():
    # The suite's BBOB smoke test: HOLLM (gp-ts proposer) on the 2-D sphere f1 and Rosenbrock
    # f8 with 40 evaluations, against random search with the same budget, 3 seeds each.
    from optiforge.agents.hollm import HOLLMAgent

    hollm, rand = [], []
    for f, seed in [(f, s) for f in (1, 8) for s in range(3)]:
        task = bbob_task(f, 2, 1)
        agent = HOLLMAgent(task.space, {"proposer": "gp-ts", "budget": 40}, seed=seed)
        best = np.inf
        for _ in range(10):
            for p in agent.ask(4):
                v = task(p)
                agent.tell(p, v)
                best = min(best, v)
        hollm.append(task.regret(best))
        pts = np.random.default_rng(seed).uniform(-5, 5, (40, 2))
        rand.append(min(task.regret(task.evaluate_array(x)) for x in pts))
    hollm, rand = np.array(hollm), np.array(rand)
    assert np.sum(hollm < rand) >= 5 and np.median(hollm / rand) < 0.2, (hollm, rand)


def _bbob_script():
    """benchmarks/bbob.py as a module (it is a script, not part of the package)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bbob.py"
    spec = importlib.util.spec_from_file_location("bbob_benchmark_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("method", "package"), [("smac", "smac"), ("botorch-turbo", "botorch")])
def test_competitor_runners_spend_the_budget_inside_the_box(method, package):
    # SMAC3 and BoTorch run through their own libraries; a budget of 11 (not a multiple of
    # TuRBO's batch of 4) must be spent exactly, on points inside COCO's [-5, 5]^2 box.
    pytest.importorskip(package)
    script = _bbob_script()
    task = bbob_task(1, 2, 1)
    seen = []

    class Spy(script.Recorder):
        def __call__(self, x):
            seen.append(np.array(x))
            return super().__call__(x)

    rec = Spy(task, budget=11)
    spent, asks = script.RUNNERS[method](task, rec, seed=3)
    # asks: points the method's model suggested (TuRBO's 2d+1 Sobol design is not timed)
    assert rec.n == len(seen) == 11 and asks >= 11 - 5 and spent > 0
    assert np.all(np.abs(np.array(seen)) <= 5)
    assert rec.best == min(task.regret(task.evaluate_array(x)) for x in seen)


def test_a_missing_competitor_package_stops_with_one_line(monkeypatch):
    import sys

    from optiforge.extras import MissingExtraError

    script = _bbob_script()
    monkeypatch.setitem(sys.modules, "smac", None)  # import smac raises ImportError
    with pytest.raises(MissingExtraError, match=r"'smac'.*optiforge\[bench\]"):
        script.RUNNERS["smac"](bbob_task(1, 2, 1), script.Recorder(bbob_task(1, 2, 1), 5), seed=0)


def test_int_ranges_reads_lists_and_ranges_and_names_bad_input():
    from optiforge.blackbox.bbob import int_ranges

    assert int_ranges("1-3,15,20-21") == [1, 2, 3, 15, 20, 21]
    assert int_ranges("5") == [5]
    with pytest.raises(ValueError, match="ranges like"):
        int_ranges("1-x")
