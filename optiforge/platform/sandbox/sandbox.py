"""The trusted side of the sandbox: a pool of warm zygote processes and the ``Sandbox`` API."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from optiforge.heuristics import SPLITS, HeuristicTask, get_task
from optiforge.heuristics.registry import task_ref
from optiforge.platform import config
from optiforge.platform.sandbox.limits import SandboxLimits, SandboxResult
from optiforge.platform.sandbox.protocol import ProtocolError, read_message, write_message

_BOOT = ("import sys, json; sys.path[:0] = json.loads(sys.argv[1]); "
         "from optiforge.platform.sandbox.zygote import main; main()")
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS")
_START_TIMEOUT_S = 120.0
_GRACE_S = 30.0


def _zygote_env() -> dict[str, str]:
    # Built from scratch, never copied from os.environ: the caller's secrets (API keys...)
    # must not reach a process that untrusted code could read /proc/<pid>/environ of.
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/nonexistent", "LANG": "C.UTF-8"}
    env.update({k: "1" for k in _THREAD_VARS})
    return env


def _import_path() -> list[str]:
    cwd = os.getcwd()
    return [os.path.abspath(p) if p else cwd for p in sys.path]


class _Worker:
    """One warm zygote; used by one thread at a time."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.proc: subprocess.Popen[bytes] | None = None
        self.hello: dict[str, Any] = {}
        self._next_id = 0
        self.launch()

    def launch(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-B", "-c", _BOOT, json.dumps(_import_path())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_zygote_env(), cwd="/",
            start_new_session=True, close_fds=True, bufsize=0,
        )

    def handshake(self) -> None:
        assert self.proc is not None and self.proc.stdin and self.proc.stdout
        try:
            write_message(self.proc.stdin.fileno(), self.config)
            self.hello, _ = read_message(self.proc.stdout.fileno(), time.monotonic() + _START_TIMEOUT_S)
        except (OSError, ProtocolError) as exc:
            self.stop()
            raise RuntimeError(f"sandbox: the zygote process failed to start ({exc}); "
                               "see its stderr above") from exc

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def restart(self) -> None:
        self.stop()
        self.launch()
        self.handshake()

    def request(self, message: dict[str, Any], backstop_s: float) -> tuple[dict[str, Any], bytes]:
        if not self.alive():
            self.restart()  # died between jobs (killed from outside): transparent
        assert self.proc is not None and self.proc.stdin and self.proc.stdout
        self._next_id += 1
        message = {**message, "op": "run", "id": self._next_id}
        try:
            write_message(self.proc.stdin.fileno(), message)
        except OSError:
            self.restart()  # the program has not run yet, so a retry is safe
            write_message(self.proc.stdin.fileno(), message)
        try:
            header, payload = read_message(self.proc.stdout.fileno(), time.monotonic() + backstop_s)
        except (OSError, ProtocolError, ValueError) as exc:
            # The zygote itself failed mid-run: the run cannot be trusted to have completed.
            self.restart()
            return {"ok": False, "killed": "worker died",
                    "error": f"sandbox: the worker process failed during the run ({exc})"}, b""
        if header.get("id") != self._next_id:
            self.restart()
            return {"ok": False, "killed": "worker died", "error": "sandbox: protocol out of sync"}, b""
        return header, payload

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=2.0)  # end-of-file on stdin makes the zygote exit cleanly
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()


class Sandbox:
    """Run untrusted heuristic programs in confined, fresh processes forked from warm zygotes.

    Each worker is a separate Python process (a *zygote*, started with a scrubbed environment,
    single-threaded BLAS, numpy and the task modules imported) that forks one fresh child per
    program. The child gets its own session, rlimits (CPU, address space, file size, open
    files, no core dumps, no new processes), an empty network namespace, a private mount
    namespace with fresh tmpfs over every world-writable directory and over the caller's home,
    an unprivileged uid (when root), a scrubbed environment and an audit hook. The solution
    comes back as size-capped JSON; nothing the child writes is unpickled. See
    :attr:`protections` for what is active on this machine.

    Parameters
    ----------
    workers : int
        Number of warm zygotes, i.e. programs run in parallel by :meth:`run_many`.
    limits : SandboxLimits, optional
        Resource limits and isolation switches (defaults: all isolation on, 30 s, 2 GiB).
    preload : sequence of str
        Extra modules the zygotes import at start (e.g. the module registering a custom task).

    Examples
    --------
    >>> with Sandbox(workers=2) as sb:                                  # doctest: +SKIP
    ...     result = sb.run(program, "binpacking", "train")
    """

    def __init__(self, workers: int = 2, limits: SandboxLimits | None = None,
                 *, preload: Sequence[str] = ()) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int):
            raise TypeError(f"workers: expected int, got {type(workers).__name__}")
        if workers < 1:
            raise ValueError(f"workers: must be >= 1, got {workers}")
        if limits is None:
            limits = SandboxLimits()
        if not isinstance(limits, SandboxLimits):
            raise TypeError(f"limits: expected SandboxLimits, got {type(limits).__name__}")
        if isinstance(preload, str) or not all(isinstance(m, str) for m in preload):
            raise TypeError("preload: expected a sequence of module names")
        self.limits = limits
        self.workers = workers
        home = os.path.expanduser("~")
        # The optiforge home holds the store and every campaign's artifacts. Its 0700 mode
        # already stops the dropped uid; hiding it also covers the modes where the child
        # keeps the caller's uid (a user namespace, or drop_privileges=False).
        store_home = str(config.home_path())
        hidden = sorted({p for p in (home, os.environ.get("HOME", ""), store_home) if p})
        self._config = {"op": "config", "limits": limits.to_dict(), "hidden": hidden,
                        "preload": list(preload)}
        self._refs: dict[str, str] = {}
        self._splits: set[tuple[str, str]] = set()
        self._closed = False
        self._lock = threading.Lock()
        self._all: list[_Worker] = []
        try:
            self._all = [_Worker(self._config) for _ in range(workers)]  # start concurrently...
            for worker in self._all:
                worker.handshake()  # ...then wait for each one's hello
        except BaseException:
            for worker in self._all:
                worker.stop()
            raise
        self._free: queue.Queue[_Worker] = queue.Queue()
        for worker in self._all:
            self._free.put(worker)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="optiforge-sandbox")

    @property
    def protections(self) -> dict[str, Any]:
        """Which isolation measures are active on this machine (reported by the zygotes)."""
        return dict(self._all[0].hello.get("protections", {}))

    def _resolve(self, program: Any, task: Any, split: Any) -> tuple[str, str]:
        if not isinstance(program, str):
            raise TypeError(f"program: expected str, got {type(program).__name__}")
        if isinstance(task, str):
            task = get_task(task)  # ValueError naming `task`
        if not isinstance(task, HeuristicTask):
            raise TypeError(f"task: expected a task name or HeuristicTask, got {type(task).__name__}")
        name = task.name
        with self._lock:
            if (name, split) not in self._splits:
                check_split(task, split)  # ValueError names `split`
                self._splits.add((name, split))
            if name not in self._refs:
                # The object crosses to the zygote as its class reference (rebuilt there).
                self._refs[name] = task_ref(task)
        return name, self._refs[name]

    def run(self, program: str, task: HeuristicTask | str, split: str = "train") -> SandboxResult:
        """Run one program on ``task``'s ``split`` inputs; returns its (unscored) solution."""
        name, ref = self._resolve(program, task, split)
        return self._run(program, name, ref, split)

    def run_many(self, jobs: Sequence[tuple[str, str, str]]) -> list[SandboxResult]:
        """Run ``(program, task, split)`` jobs in parallel over the workers; results in order."""
        if isinstance(jobs, (str, bytes)):
            raise TypeError("jobs: expected a sequence of (program, task, split) tuples")
        resolved = []
        for i, job in enumerate(jobs):
            if not isinstance(job, (tuple, list)) or len(job) != 3:
                raise TypeError(f"jobs: item {i} is not a (program, task, split) tuple")
            program, task, split = job
            resolved.append((program, *self._resolve(program, task, split), split))
        futures = [self._pool.submit(self._run, *job) for job in resolved]
        return [f.result() for f in futures]

    def _run(self, program: str, name: str, ref: str, split: str) -> SandboxResult:
        if self._closed:
            raise RuntimeError("sandbox: run() called after close()")
        worker = self._free.get()
        try:
            header, payload = worker.request(
                {"program": program, "task": name, "ref": ref, "split": split},
                backstop_s=2 * self.limits.timeout_s + _GRACE_S,
            )
        finally:
            self._free.put(worker)
        return _to_result(header, payload, self.limits.max_output_bytes)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._pool.shutdown(wait=True)
        for worker in self._all:
            worker.stop()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def check_split(task: Any, split: Any) -> None:
    """Raise ValueError naming ``split`` unless ``task`` accepts it.

    The standard splits are always accepted; tasks may offer more (e.g. single dataset names),
    which are checked by building their inputs once here, in trusted code.
    """
    if not isinstance(split, str):
        raise TypeError(f"split: expected str, got {type(split).__name__}")
    if split in SPLITS:
        return
    try:
        task.inputs(split)
    except Exception as exc:  # noqa: BLE001 - any refusal by the task means a bad split
        raise ValueError(f"split: task {task.name!r} does not accept {split!r} "
                         f"(standard splits: {', '.join(SPLITS)}): {exc}") from exc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} in the solution")


def _to_result(header: dict[str, Any], payload: bytes, cap: int) -> SandboxResult:
    result = SandboxResult(ok=bool(header.get("ok")), error=header.get("error"),
                           runtime_s=float(header.get("runtime_s") or 0.0),
                           stdout=str(header.get("stdout") or ""), killed=header.get("killed"))
    if not result.ok:
        result.error = result.error or "the program failed"
        return result
    if len(payload) > cap:
        result.ok, result.error, result.killed = False, f"the solution exceeds {cap} bytes", "output"
        return result
    try:
        # JSON only (never pickle) and strict: NaN/Infinity are not solutions.
        result.solution = json.loads(payload.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        result.ok, result.error = False, f"the solution is not valid JSON: {str(exc)[:200]}"
    return result
