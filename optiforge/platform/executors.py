"""Executors: where heuristic programs are evaluated (a local sandbox pool, or a Ray cluster).

Both satisfy :class:`optiforge.agents.protocols.ProgramEvaluator`::

    with make_executor("local", workers=2) as ex:
        evaluations = ex.evaluate(get_task("binpacking"), programs, "train")   # order preserved

(a task name is accepted too, and resolved once through the registry).

Both also run trusted work in parallel: ``ex.map(fn, items)`` returns ``[fn(x) for x in
items]`` in order, computed in worker processes (local: a spawned process pool; Ray: the
sandbox actors' own processes, outside their sandboxes). ``fn`` must be importable (a
module-level function); this is how evolution strategies evaluate a population.

Every program runs in a :class:`~optiforge.platform.sandbox.Sandbox` child and is scored by the
task's trusted scorer in the process that owns that sandbox (this process for ``local``, a
Ray worker actor for ``ray``).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from optiforge.extras import require
from optiforge.heuristics import HeuristicTask, get_task
from optiforge.heuristics.registry import task_from_ref, task_ref
from optiforge.platform.sandbox.evaluate import evaluate_programs
from optiforge.platform.sandbox.limits import SandboxLimits
from optiforge.platform.sandbox.sandbox import Sandbox, check_split
from optiforge.types import Evaluation

EXECUTORS = ("local", "ray")


def _check_args(task: Any, programs: Any, split: Any) -> HeuristicTask:
    task_obj = get_task(task) if isinstance(task, str) else task  # ValueError naming `task`
    if not isinstance(task_obj, HeuristicTask):
        raise TypeError(f"task: expected a HeuristicTask or a task name, got {type(task).__name__}")
    if isinstance(programs, (str, bytes)) or not isinstance(programs, Sequence):
        raise TypeError("programs: expected a sequence of program sources")
    if not all(isinstance(p, str) for p in programs):
        raise TypeError("programs: every program must be a str")
    check_split(task_obj, split)
    return task_obj


class LocalExecutor:
    """Evaluate programs on this machine: one :class:`Sandbox` with ``workers`` warm zygotes.

    Parameters
    ----------
    workers : int
        Programs evaluated in parallel.
    limits : SandboxLimits, optional
        Per-program limits and isolation switches.
    """

    def __init__(self, workers: int = 2, limits: SandboxLimits | None = None) -> None:
        self.sandbox = Sandbox(workers=workers, limits=limits)
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    @property
    def protections(self) -> dict[str, Any]:
        return self.sandbox.protections

    def evaluate(self, task: HeuristicTask | str, programs: Sequence[str],
                 split: str = "train") -> list[Evaluation]:
        task_obj = _check_args(task, programs, split)
        return evaluate_programs(self.sandbox, task_obj, list(programs), split)

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        """``[fn(x) for x in items]`` on ``workers`` processes (TRUSTED ``fn`` only: no sandbox)."""
        if not callable(fn):
            raise TypeError(f"fn: expected a callable, got {type(fn).__name__}")
        if self._pool is None:
            # spawn, not fork: the parent may hold torch/OpenMP threads that a fork would break.
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
        return list(self._pool.map(fn, items))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
        self.sandbox.close()

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _SandboxActor:
    """Body of a Ray worker actor: owns a one-worker Sandbox and scores what it runs."""

    def __init__(self, limits: dict[str, Any], import_path: list[str]) -> None:
        # Make the driver's modules (e.g. a task defined outside optiforge) importable here.
        sys.path.extend(p for p in import_path if p not in sys.path)
        self.sandbox = Sandbox(workers=1, limits=SandboxLimits(**limits))
        self.tasks: dict[str, HeuristicTask] = {}

    def evaluate(self, ref: str, program: str, split: str) -> dict[str, Any]:
        if ref not in self.tasks:
            self.tasks[ref] = task_from_ref(ref)
        [evaluation] = evaluate_programs(self.sandbox, self.tasks[ref], [program], split)
        return evaluation.to_dict()

    def protections(self) -> dict[str, Any]:
        return self.sandbox.protections

    def call(self, fn: Callable[[Any], Any], item: Any) -> Any:
        return fn(item)

    def close(self) -> None:
        self.sandbox.close()


def start_ray(purpose: str, *, num_cpus: int | None = None,
              address: str | None = None) -> tuple[Any, bool]:
    """Import Ray and start it unless it is running; returns ``(ray, started_here)``.

    The caller that started Ray shuts it down. Ray's own logger follows this process's (the CLI
    lets libraries log errors only), and workers' output stays off the driver's terminal.

    Parameters
    ----------
    purpose : str
        What needs Ray, for the missing-extra message (e.g. ``"the 'ray' executor"``).
    num_cpus : int, optional
        CPUs of a local Ray (default: all); ignored with ``address``.
    address : str, optional
        An existing cluster to join.
    """
    require("ray", purpose)
    import ray

    if ray.is_initialized():
        return ray, False
    quiet = {"log_to_driver": False, "logging_level": logging.getLogger().getEffectiveLevel()}
    if address is None:
        ray.init(num_cpus=num_cpus or os.cpu_count() or 1, include_dashboard=False, **quiet)
    else:
        ray.init(address=address, **quiet)
    return ray, True


class RayExecutor:
    """Evaluate programs on a Ray cluster: ``workers`` actors, each owning a one-worker Sandbox.

    Parameters
    ----------
    workers : int
        Number of sandbox actors (each reserves one CPU).
    limits : SandboxLimits, optional
        Per-program limits and isolation switches, applied on every node.
    address : str, optional
        Ray cluster address (``"auto"``, ``"ray://host:10001"``); ``None`` starts a local Ray
        with ``num_cpus=workers`` unless Ray is already initialised in this process.
    """

    def __init__(self, workers: int = 2, limits: SandboxLimits | None = None,
                 address: str | None = None) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int):
            raise TypeError(f"workers: expected int, got {type(workers).__name__}")
        if workers < 1:
            raise ValueError(f"workers: must be >= 1, got {workers}")
        if address is not None and not isinstance(address, str):
            raise TypeError(f"address: expected str, got {type(address).__name__}")
        limits = SandboxLimits() if limits is None else limits
        if not isinstance(limits, SandboxLimits):
            raise TypeError(f"limits: expected SandboxLimits, got {type(limits).__name__}")
        ray, self._owns_ray = start_ray("the 'ray' executor", num_cpus=workers, address=address)
        self._ray = ray
        import_path = [p for p in sys.path if p]
        actor_cls = ray.remote(num_cpus=1)(_SandboxActor)
        self._actors = [actor_cls.remote(limits.to_dict(), import_path) for _ in range(workers)]
        from ray.util import ActorPool

        self._pool = ActorPool(self._actors)

    @property
    def protections(self) -> dict[str, Any]:
        return self._ray.get(self._actors[0].protections.remote())

    def evaluate(self, task: HeuristicTask | str, programs: Sequence[str],
                 split: str = "train") -> list[Evaluation]:
        ref = task_ref(_check_args(task, programs, split))  # the object crosses as its class ref
        results = self._pool.map(
            lambda actor, program: actor.evaluate.remote(ref, program, split), list(programs))
        return [Evaluation(**d) for d in results]

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        """``[fn(x) for x in items]`` on the actors (TRUSTED ``fn`` only: it runs unsandboxed)."""
        if not callable(fn):
            raise TypeError(f"fn: expected a callable, got {type(fn).__name__}")
        return list(self._pool.map(lambda actor, item: actor.call.remote(fn, item), list(items)))

    def close(self) -> None:
        ray, actors, self._actors = self._ray, self._actors, []
        for actor in actors:
            try:
                ray.get(actor.close.remote(), timeout=30)
            except Exception:  # noqa: BLE001 - a dead actor has nothing left to close
                pass
            ray.kill(actor)
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
            self._owns_ray = False

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_executor(executor: str = "local", *, workers: int = 2, limits: SandboxLimits | None = None,
                  address: str | None = None) -> LocalExecutor | RayExecutor:
    """Create the executor named ``executor`` (``"local"`` or ``"ray"``).

    Raises
    ------
    ValueError
        If ``executor`` is unknown, or ``address`` is given for the local executor.
    """
    if executor == "local":
        if address is not None:
            raise ValueError("address: only the 'ray' executor connects to an address")
        return LocalExecutor(workers=workers, limits=limits)
    if executor == "ray":
        return RayExecutor(workers=workers, limits=limits, address=address)
    raise ValueError(f"executor: unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
