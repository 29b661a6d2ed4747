"""Helpers shared by the store tests (a unique module name: test dirs share one sys.path)."""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optiforge
from optiforge.platform.store import Store

REPO_ROOT = Path(optiforge.__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent


def make_campaign(store: Store, **overrides) -> str:
    kwargs = dict(task="binpacking", agent="evolution", llm="smollm2", budget=20, seed=7,
                  executor="local", config={"agent": {"samples_per_prompt": 4}})
    kwargs.update(overrides)
    return store.create_campaign(**kwargs)


def subprocess_env() -> dict[str, str]:
    """Environment for child Python processes: they import optiforge from this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO_ROOT), str(HERE), env.get("PYTHONPATH", "")) if p
    )
    return env


def run_at_once(target: Callable, args: list[tuple], *, results_each: int = 1,
                timeout: float = 120) -> tuple[list[Any], list[int | None]]:
    """Run ``target(*a, barrier, results)`` in one process per ``a``, released together.

    Each process waits at the shared barrier before its work and puts ``results_each`` items on
    the results queue. Fork where there is one: children start in milliseconds (no re-import)
    and inherit the parent's open Store, which must not leak its pooled connections into them
    (see base._after_fork_in_child). Returns the items, in arrival order, and the exit codes.
    """
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    barrier, results = ctx.Barrier(len(args)), ctx.Queue()
    procs = [ctx.Process(target=target, args=(*a, barrier, results)) for a in args]
    for p in procs:
        p.start()
    got = [results.get(timeout=timeout) for _ in range(results_each * len(procs))]
    for p in procs:
        p.join(timeout=60)
    return got, [p.exitcode for p in procs]


def create_trials_worker(url: str, study_id: str, worker: int, batches: list[int],
                         barrier, results) -> None:
    """Process target for the concurrency tests: create trials in batches, report numbers."""
    store = Store(url)
    try:
        barrier.wait(timeout=60)
        numbers = []
        for j, size in enumerate(batches):
            trials = store.create_trials(study_id, [{"worker": worker, "batch": j, "k": k}
                                                    for k in range(size)])
            numbers += [t.number for t in trials]
        results.put((worker, numbers))
    except BaseException as exc:  # surface the child's failure in the parent's assertion
        results.put((worker, repr(exc)))
    finally:
        store.close()
