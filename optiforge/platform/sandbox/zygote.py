"""The warm zygote: a trusted, single-threaded process that forks one confined child per program.

Started by :class:`~optiforge.platform.sandbox.Sandbox` as a separate interpreter with a scrubbed
environment (never forked from the big parent that holds torch/LLM threads). It imports the
task modules and numpy once, computes (and caches) each task's inputs, and then, for every
request, forks a fresh child that confines itself (:mod:`.jail`) and runs the program. The
zygote enforces the wall-clock limit, collects the child's stdout and JSON result with size
caps, and kills the child's whole process group when anything goes wrong.

Protocol (stdin/stdout of this process, see :mod:`.protocol`): first a config message, answered
by a hello carrying the active protections; then ``run`` requests, each answered by a result
header plus the raw solution bytes; ``exit`` or end-of-file ends the zygote.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import shutil
import signal
import stat
import sys
import tempfile
import time
from typing import Any

from optiforge.platform.sandbox import jail
from optiforge.platform.sandbox.protocol import read_message, write_message

_WRITABLE_CANDIDATES = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/dev/mqueue")
_MAX_HEADER = 64 * 1024
# Imported once in the zygote so that programs find them already loaded: after the uid drop a
# child cannot read an interpreter installed under an unreadable home (e.g. pyenv in /root)
# when no mount namespace re-exposes it.
_COMMON_MODULES = ("bisect", "collections", "copy", "dataclasses", "functools", "heapq", "itertools",
                   "json", "math", "operator", "random", "re", "statistics", "string", "time",
                   "typing", "numpy")


class Zygote:
    def __init__(self, config: dict[str, Any]) -> None:
        self.limits = config["limits"]
        self.tasks: dict[str, Any] = {}
        self.inputs: dict[tuple[str, str], Any] = {}
        self.workdir = tempfile.mkdtemp(prefix="optiforge-sandbox-")
        os.chmod(self.workdir, 0o711)
        self.policy, self.protections = self._establish(config)
        for module in _COMMON_MODULES:
            try:
                importlib.import_module(module)
            except ImportError:
                pass
        for module in config.get("preload", []):
            importlib.import_module(module)

    # -- start-up -------------------------------------------------------------------------
    def _establish(self, config: dict[str, Any]) -> tuple[jail.Policy, dict[str, Any]]:
        limits = self.limits
        root = os.geteuid() == 0
        net_ns = user_ns = False
        if limits["namespaces"]:
            # The zygote never needs the network, so one empty network namespace for it is
            # inherited by every child for free.
            try:
                if root:
                    jail.unshare(jail.CLONE_NEWNET)
                else:
                    uid, gid = os.geteuid(), os.getegid()
                    jail.unshare(jail.CLONE_NEWUSER | jail.CLONE_NEWNET)
                    _write("/proc/self/setgroups", "deny")
                    _write("/proc/self/uid_map", f"0 {uid} 1")
                    _write("/proc/self/gid_map", f"0 {gid} 1")
                    user_ns = True
                net_ns = True
            except OSError:
                net_ns = user_ns = False
        hidden = [os.path.realpath(h) for h in config.get("hidden", []) if _hideable(h)]
        keep = sorted({os.path.realpath(p) for p in sys.path if p and os.path.exists(p)})
        keep = [p for p in keep if not any(p != q and jail._inside(p, q) for q in keep)]
        writable = []
        for candidate in _WRITABLE_CANDIDATES:
            path = os.path.realpath(candidate)
            if path not in writable and os.path.isdir(path) and os.stat(path).st_mode & stat.S_IWOTH:
                writable.append(path)
        if "/tmp" not in writable:
            writable.insert(0, "/tmp")
        drop = root and limits["drop_privileges"]
        policy = jail.Policy(root=root, mount_ns=False, drop_privileges=drop,
                             audit_hook=limits["audit_hook"], uid=limits["sandbox_uid"],
                             gid=limits["sandbox_gid"], writable_dirs=writable, hidden=hidden,
                             keep=keep, zygote_pid=os.getpid())
        if limits["namespaces"] and (root or user_ns):
            policy.mount_ns = self._probe_mount_ns(policy)
        protections = {
            "fresh_process": True,
            "process_group_kill": True,
            "rlimits": ["RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE",
                        "RLIMIT_NPROC"],
            "network_namespace": net_ns,
            "user_namespace": user_ns,
            "mount_namespace": policy.mount_ns,
            "private_tmp": policy.mount_ns,
            "hidden_home": bool(policy.mount_ns and hidden) or bool(limits["audit_hook"] and hidden),
            "uid_drop": policy.uid if drop else None,
            "no_new_processes": drop or not root,
            "no_new_privileges": True,
            "scrubbed_env": True,
            "audit_hook": limits["audit_hook"],
            "network": "namespace" if net_ns else ("audit hook" if limits["audit_hook"] else "none"),
        }
        return policy, protections

    def _probe_mount_ns(self, policy: jail.Policy) -> bool:
        pid = os.fork()
        if pid == 0:
            try:
                jail.unshare(jail.CLONE_NEWNS)
                jail.mount(None, "/", None, jail.MS_REC | jail.MS_PRIVATE)
                jail.cover_filesystem(policy, "size=1m")
                os._exit(0)
            except BaseException:  # noqa: BLE001
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status) == 0

    # -- requests -------------------------------------------------------------------------
    def _task(self, name: str, ref: str) -> Any:
        if name not in self.tasks:
            from optiforge.heuristics.registry import task_from_ref

            self.tasks[name] = task_from_ref(ref)
        return self.tasks[name]

    def _inputs(self, task: Any, split: str) -> Any:
        key = (task.name, split)
        if key not in self.inputs:
            self.inputs[key] = task.inputs(split)
        return self.inputs[key]

    def run(self, request: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        try:
            task = self._task(request["task"], request["ref"])
            inputs = self._inputs(task, request["split"])
        except Exception as exc:  # noqa: BLE001 - reported to the trusted parent, never run
            return {"ok": False, "error": f"sandbox: cannot prepare task {request.get('task')!r}: "
                                          f"{type(exc).__name__}: {exc}"}, b""
        limits = self.limits
        job_dir = None
        if not self.policy.mount_ns:
            job_dir = tempfile.mkdtemp(prefix="job-", dir=self.workdir)
            if self.policy.drop_privileges:
                os.chown(job_dir, self.policy.uid, self.policy.gid)
        job = jail.Job(program=request["program"], imports=task.imports, entry_point=task.entry_point,
                       solve=task.solve, inputs=inputs, timeout_s=limits["timeout_s"],
                       cpu_s=limits["cpu_s"] or limits["timeout_s"], memory_mb=limits["memory_mb"],
                       max_output_bytes=limits["max_output_bytes"], max_file_mb=limits["max_file_mb"],
                       max_open_files=limits["max_open_files"], job_dir=job_dir)
        try:
            return self._fork_and_collect(job)
        finally:
            if job_dir is not None:
                shutil.rmtree(job_dir, ignore_errors=True)

    def _fork_and_collect(self, job: jail.Job) -> tuple[dict[str, Any], bytes]:
        res_r, res_w = os.pipe()
        out_r, out_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            try:
                os.close(res_r)
                os.close(out_r)
                jail.child_main(self.policy, job, res_w, out_w)
            finally:
                os._exit(70)
        os.close(res_w)
        os.close(out_w)
        pidfd = os.pidfd_open(pid)
        result, output = bytearray(), bytearray()
        caps = {res_r: job.max_output_bytes + _MAX_HEADER, out_r: self.limits["max_stdout_bytes"]}
        bufs = {res_r: result, out_r: output}
        open_fds = {res_r, out_r}
        for fd in open_fds:
            os.set_blocking(fd, False)
        deadline = started + job.timeout_s
        killed: str | None = None
        exited = False
        while not exited:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                killed = "timeout"
                break
            ready, _, _ = select.select([*open_fds, pidfd], [], [], remaining)
            for fd in ready:
                if fd == pidfd:
                    exited = True
                elif not _pump(fd, bufs[fd], caps[fd], open_fds):
                    if fd == res_r:
                        killed = "output"
                        exited = True
        # Kill the whole group before reaping: the zombie keeps the group id from being reused.
        _kill_group(pid)
        _, status, usage = os.wait4(pid, 0)
        runtime = time.monotonic() - started
        for fd in list(open_fds):
            _pump(fd, bufs[fd], caps[fd], open_fds)
        for fd in (res_r, out_r, pidfd):
            _close(fd)
        header = self._interpret(job, bytes(result), status, usage, killed)
        header["runtime_s"] = runtime
        header["stdout"] = bytes(output[: self.limits["max_stdout_bytes"]]).decode("utf-8", "replace")
        payload = header.pop("_payload", b"")
        return header, payload

    def _interpret(self, job: jail.Job, result: bytes, status: int, usage: Any,
                   killed: str | None) -> dict[str, Any]:
        if killed == "timeout":
            return {"ok": False, "killed": "timeout",
                    "error": f"timeout: the program ran longer than {job.timeout_s:g} s and was killed"}
        if killed == "output":
            return {"ok": False, "killed": "output",
                    "error": f"output: the solution exceeded {job.max_output_bytes} bytes and was killed"}
        newline = result.find(b"\n")
        if newline < 0:
            if os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                cpu = usage.ru_utime + usage.ru_stime
                if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= job.cpu_s - 0.05):
                    return {"ok": False, "killed": "cpu",
                            "error": f"cpu: the program used more than {job.cpu_s:g} s of CPU time"}
                name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
                return {"ok": False, "killed": f"signal {sig}",
                        "error": f"the program was killed by signal {sig} ({name})"}
            code = os.waitstatus_to_exitcode(status)
            return {"ok": False, "error": f"the program exited (status {code}) before returning a solution"}
        try:
            header = json.loads(result[:newline])
            if not isinstance(header, dict):
                raise ValueError("not an object")
        except (ValueError, RecursionError):
            return {"ok": False, "error": "the result pipe held malformed data"}
        ok = header.get("ok") is True
        error = header.get("error")
        out: dict[str, Any] = {"ok": ok, "error": None if ok else str(error)[:4000]}
        if not ok and header.get("killed") in ("memory", "output"):
            out["killed"] = header["killed"]
        if ok:
            out["_payload"] = result[newline + 1:]
        return out

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)


def _pump(fd: int, buf: bytearray, cap: int, open_fds: set[int]) -> bool:
    """Read what is available; returns False when ``buf`` would exceed ``cap``."""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        if not chunk:
            open_fds.discard(fd)
            return True
        if len(buf) + len(chunk) > cap:
            buf.extend(chunk[: max(0, cap - len(buf))])
            return False
        buf.extend(chunk)


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _hideable(path: str) -> bool:
    real = os.path.realpath(path)
    return real not in ("/", "/tmp", "/usr", "/bin", "/lib", "/etc") and os.path.isdir(real)


def main() -> None:
    # The protocol gets private descriptors; fd 0/1 are re-pointed so that stray prints by task
    # code can never corrupt the frames.
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    config, _ = read_message(proto_in)
    zygote = Zygote(config)
    try:
        write_message(proto_out, {"op": "hello", "pid": os.getpid(), "protections": zygote.protections})
        while True:
            try:
                request, _ = read_message(proto_in)
            except (OSError, RuntimeError):
                break  # the Sandbox went away
            if request.get("op") != "run":
                break
            header, payload = zygote.run(request)
            header["id"] = request.get("id")
            write_message(proto_out, header, payload)
    finally:
        zygote.close()


if __name__ == "__main__":
    main()
