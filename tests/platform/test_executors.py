"""Executors: one ProgramEvaluator interface over a local sandbox pool and over Ray."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "sandbox"))

from sandbox_fixture_tasks import LPT, SPT, TASK  # noqa: E402

from optiforge.agents.protocols import ProgramEvaluator  # noqa: E402
from optiforge.heuristics import get_task  # noqa: E402
from optiforge.platform.executors import LocalExecutor, make_executor  # noqa: E402
from optiforge.platform.sandbox import SandboxLimits  # noqa: E402

LIMITS = SandboxLimits(timeout_s=5.0, memory_mb=1024)
PROGRAMS = [SPT, LPT, "def priority(p):\n    return abs(p - 5.0)\n",
            "def priority(p):\n    raise ValueError('nope')\n", "def priority(p):\n    return -p * p\n"]


def test_local_executor_evaluates_in_order() -> None:
    with make_executor("local", workers=2, limits=LIMITS) as ex:
        assert isinstance(ex, LocalExecutor) and isinstance(ex, ProgramEvaluator)
        evals = ex.evaluate(TASK, PROGRAMS, "train")
    assert [e.valid for e in evals] == [True, True, True, False, True]
    assert evals[0].score == pytest.approx(0.0)
    task = get_task(TASK)
    lpt = task.score("train", task.solve(lambda p: -p, task.inputs("train"))).score
    assert evals[1].score == pytest.approx(lpt)
    assert "ValueError: nope" in evals[3].error


def test_local_executor_runs_builtin_tasks() -> None:
    with make_executor("local", workers=2, limits=SandboxLimits(timeout_s=60.0)) as ex:
        for name in ("binpacking", "tsp"):
            task = get_task(name)
            evals = ex.evaluate(name, list(task.seeds.values()), "train")
            assert all(e.valid for e in evals), [e.error for e in evals]


def test_make_executor_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="executor"):
        make_executor("dask")
    with pytest.raises(ValueError, match="address"):
        make_executor("local", address="auto")
    with pytest.raises(ValueError, match="workers"):
        make_executor("local", workers=0)
    with make_executor("local", workers=1, limits=LIMITS) as ex:
        with pytest.raises(ValueError, match="task"):
            ex.evaluate("no_such_task", [SPT])
        with pytest.raises(ValueError, match="split"):
            ex.evaluate(TASK, [SPT], "holdout")
        with pytest.raises(TypeError, match="programs"):
            ex.evaluate(TASK, SPT)


@pytest.mark.slow
def test_ray_executor_matches_local() -> None:
    pytest.importorskip("ray")
    with make_executor("local", workers=2, limits=LIMITS) as ex:
        local = ex.evaluate(TASK, PROGRAMS, "validation")
    with make_executor("ray", workers=2, limits=LIMITS) as ex:
        assert isinstance(ex, ProgramEvaluator)
        remote = ex.evaluate(TASK, PROGRAMS, "validation")
        assert ex.protections["fresh_process"]
    assert [e.valid for e in remote] == [e.valid for e in local]
    assert [e.score for e in remote] == [e.score for e in local]
    assert [e.error for e in remote] == [e.error for e in local]


def test_task_specific_splits_are_accepted() -> None:
    task = get_task("binpacking")
    extra = [n for n in task.datasets() if n.startswith("or")][:1]
    assert extra, "binpacking lost its OR-library datasets"
    with make_executor("local", workers=1, limits=SandboxLimits(timeout_s=60.0)) as ex:
        [ev] = ex.evaluate("binpacking", [task.seeds[task.baseline]], extra[0])
        assert ev.valid, ev.error
        with pytest.raises(ValueError, match="split"):
            ex.evaluate("binpacking", [task.seeds[task.baseline]], "no_such_dataset")
