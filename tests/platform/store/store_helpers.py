"""Helpers shared by the store tests (a unique module name: test dirs share one sys.path)."""

from __future__ import annotations

import os
from pathlib import Path

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
