"""Child side of the sandbox: confine a freshly forked process, then run one program in it.

Everything here runs in the child the zygote forks for a single evaluation. The order matters:
namespaces and mounts need privileges, so they come first; then the identity is dropped,
resource limits are set, file descriptors and the environment are replaced, and only then
is the audit hook installed and the untrusted program compiled and executed. Any failure
during confinement aborts the child before the program runs (fail closed).
"""

from __future__ import annotations

import builtins
import ctypes
import json
import math
import os
import resource
import signal
import sys
import traceback
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38

RESULT_FD = 3
PRIVATE_DIR = "/tmp/sandbox"
_CLEAN_ENV_KEYS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                   "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS")

_libc = ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    # os.unshare only exists from Python 3.12; the libc call works everywhere on Linux.
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(text: str | None) -> bytes | None:
        return None if text is None else text.encode()

    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {target}")


def prctl(option: int, arg: int) -> None:
    _check(_libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(0),
                       ctypes.c_ulong(0), ctypes.c_ulong(0)), "prctl")


@dataclass
class Policy:
    """What the zygote established or probed at start-up; the same for every child it forks."""

    root: bool
    """The zygote runs as real root (it can drop to ``uid``/``gid``)."""
    mount_ns: bool
    """Children can create a private mount namespace and mount tmpfs."""
    drop_privileges: bool
    audit_hook: bool
    uid: int
    gid: int
    writable_dirs: list[str] = field(default_factory=list)
    """World-writable directories replaced by a private tmpfs in each child."""
    hidden: list[str] = field(default_factory=list)
    """The caller's home (and similar): hidden from the child."""
    keep: list[str] = field(default_factory=list)
    """Paths under ``hidden`` the interpreter needs (sys.path entries), re-exposed read-only."""
    zygote_pid: int = 0


@dataclass
class Job:
    program: str
    imports: str
    entry_point: str
    solve: Callable[[Callable[..., Any], Any], Any]
    inputs: Any
    timeout_s: float
    cpu_s: float
    memory_mb: int
    max_output_bytes: int
    max_file_mb: int
    max_open_files: int
    job_dir: str | None
    """Private directory prepared by the zygote when no mount namespace is available."""


def child_main(policy: Policy, job: Job, result_fd: int, output_fd: int) -> None:
    """Confine this (forked) process, run the program, report, and ``_exit`` — never returns."""
    try:
        os.setsid()
        private = _confine_filesystem(policy, job)
        _drop_identity(policy, private)
        _redirect_fds(result_fd, output_fd)
        _set_limits(job)
        _scrub_environment(private)
        if policy.audit_hook:
            # With a mount namespace the world-writable dirs are private, throwaway tmpfs.
            writable = [private, *(policy.writable_dirs if policy.mount_ns else [])]
            install_audit_hook(writable, policy.hidden, policy.keep)
    except BaseException as exc:  # noqa: BLE001 - any failure here must stop the run (fail closed)
        _report(result_fd, {"ok": False, "error": f"sandbox setup failed: {type(exc).__name__}: {exc}"})
        os._exit(70)
    header, payload = _run_program(job)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - the program may have replaced or closed them
            pass
    _report(RESULT_FD, header, payload)
    os._exit(0)


def _confine_filesystem(policy: Policy, job: Job) -> str:
    if not policy.mount_ns:
        assert job.job_dir is not None
        os.chdir(job.job_dir)
        return job.job_dir
    unshare(CLONE_NEWNS)
    # Private propagation: our tmpfs mounts must not leak back into the host's mount table.
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    cover_filesystem(policy, f"size={job.max_file_mb}m")
    os.mkdir(PRIVATE_DIR, 0o700)
    os.chdir(PRIVATE_DIR)
    return PRIVATE_DIR


def cover_filesystem(policy: Policy, size: str) -> None:
    """Private tmpfs over the world-writable dirs, read-only empty tmpfs over the hidden ones.

    In a fresh mount namespace. Paths the interpreter needs (``policy.keep``) that lie under a
    covered dir are bound back read-only, so a virtualenv or checkout under ``/tmp`` or the
    home keeps working. A hidden dir inside a writable one (a ``HOME`` under ``/tmp``) is
    already covered by that dir's tmpfs, so it is skipped rather than looked up in the new,
    empty tmpfs (where it no longer exists).
    """
    for directory in policy.writable_dirs:
        _cover(directory, _kept_inside(policy, directory), f"{size},mode=1777", read_only=False)
    for hidden in policy.hidden:
        if not any(_inside(hidden, w) for w in policy.writable_dirs):
            _cover(hidden, _kept_inside(policy, hidden), "size=1m,mode=755", read_only=True)


def _kept_inside(policy: Policy, directory: str) -> list[str]:
    return [p for p in policy.keep if _inside(p, directory) and p != directory]


def _cover(directory: str, keep: list[str], options: str, *, read_only: bool) -> None:
    # Keep handles on what the interpreter still needs before the tmpfs covers it, then bind
    # them back read-only at the same paths (via /proc/self/fd, which resolves the handle).
    handles = [(p, os.open(p, os.O_PATH), os.path.isdir(p)) for p in keep]
    mount("tmpfs", directory, "tmpfs", MS_NOSUID | MS_NODEV, options)
    for path, fd, is_dir in handles:
        if is_dir:
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "a").close()
        mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
        os.close(fd)
    if read_only:
        mount(None, directory, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, options)


def _drop_identity(policy: Policy, private: str) -> None:
    if policy.root and policy.drop_privileges:
        os.chown(private, policy.uid, policy.gid)
        os.setgroups([])
        os.setresgid(policy.gid, policy.gid, policy.gid)
        os.setresuid(policy.uid, policy.uid, policy.uid)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    # Not dumpable: other processes of the same uid can neither ptrace us nor read /proc/<pid>/mem.
    prctl(PR_SET_DUMPABLE, 0)
    # Set after the identity change, which clears it; die with the zygote.
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != policy.zygote_pid:
        os._exit(71)


def _redirect_fds(result_fd: int, output_fd: int) -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.dup2(result_fd, RESULT_FD)
    # Nothing else of the zygote (its protocol pipes to the Sandbox) stays reachable.
    os.closerange(RESULT_FD + 1, 1 << 16)


def _set_limits(job: Job) -> None:
    cpu = max(1, math.ceil(job.cpu_s))
    mem = job.memory_mb * 1024 * 1024
    fsize = job.max_file_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_NOFILE, (job.max_open_files, job.max_open_files))
    # No new processes or threads; root ignores this, which is why the identity is dropped first.
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))


def _scrub_environment(private: str) -> None:
    keep = {k: os.environ[k] for k in ("LANG", "LC_ALL") if k in os.environ}
    os.environ.clear()
    os.environ.update(keep)
    os.environ.update({"PATH": "/usr/bin:/bin", "HOME": private, "TMPDIR": private})
    os.environ.update({k: "1" for k in _CLEAN_ENV_KEYS})
    if "tempfile" in sys.modules:
        sys.modules["tempfile"].tempdir = private  # the zygote's cached choice is not ours


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


_DENIED_EVENTS = frozenset({
    "socket.__new__", "socket.bind", "socket.connect", "socket.sendto", "socket.sendmsg",
    "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr",
    "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
    "os.forkpty", "os.startfile", "pty.spawn",
    "os.kill", "os.killpg", "signal.pthread_kill",
    "resource.setrlimit", "resource.prlimit",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents",
    "sys._current_frames", "sys._getframemodulename",
    "sys.remote_exec", "cpython.remote_debugger_script",
})
_PATH_EVENTS = {
    "os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.rename": (0, 1),
    "os.link": (0, 1), "os.symlink": (1,), "os.chmod": (0,), "os.chown": (0,),
    "os.truncate": (0,), "os.utime": (0,), "os.chflags": (0,), "os.lchflags": (0,),
    "os.mkfifo": (0,), "os.mknod": (0,), "shutil.rmtree": (0,), "shutil.move": (0, 1),
    "shutil.copyfile": (1,), "shutil.copytree": (1,),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def install_audit_hook(writable: Iterable[str], hidden: Iterable[str], keep: Iterable[str]) -> None:
    """Defence in depth: refuse sockets, processes, signals, ctypes, writes outside ``writable``.

    The kernel-level walls (namespaces, uid drop, rlimits) are the real boundary; this hook
    also covers machines where those are unavailable. Its state lives in closure constants
    and the introspection events that could reach it (``gc.get_referrers``, ``__code__``
    assignment) are themselves denied.
    """
    writable_roots = tuple(os.path.realpath(w) for w in writable)
    hidden_roots = tuple(os.path.realpath(h) for h in hidden)
    keep_roots = tuple(os.path.realpath(k) for k in keep)
    own_proc = f"/proc/{os.getpid()}"
    realpath, fsdecode = os.path.realpath, os.fsdecode

    def deny(what: str) -> None:
        raise PermissionError(f"sandbox: {what} is not allowed")

    def resolve(path: Any) -> str | None:
        if path is None or isinstance(path, int):
            return None  # an already-open descriptor: its opening was checked
        return realpath(fsdecode(path))

    def readable(path: str) -> bool:
        if path.startswith("/proc/") and path.split("/")[2].isdigit() and not _inside(path, own_proc):
            return False  # other processes' environ/cmdline/mem
        for root in hidden_roots:
            if _inside(path, root) and not any(_inside(path, k) for k in keep_roots):
                return False
        return True

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in _DENIED_EVENTS or event.startswith("ctypes."):
            deny(event)
        if event == "open":
            path = resolve(args[0])
            if path is None:
                return
            mode, flags = args[1], args[2] or 0
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool(flags & _WRITE_FLAGS)
            if writing and not any(_inside(path, w) for w in writable_roots):
                deny(f"writing {path}")
            if not readable(path):
                deny(f"reading {path}")
        elif event in _PATH_EVENTS:
            for index in _PATH_EVENTS[event]:
                if index < len(args):
                    path = resolve(args[index])
                    if path is not None and not any(_inside(path, w) for w in writable_roots):
                        deny(f"{event} on {path}")
        elif event == "object.__setattr__" and len(args) >= 2 and args[1] == "__code__":
            deny("replacing a function's code")

    sys.addaudithook(hook)


def _run_program(job: Job) -> tuple[dict[str, Any], bytes]:
    offset = job.imports.count("\n") + 1 if job.imports.strip() else 0
    source = (job.imports.rstrip("\n") + "\n" + job.program) if offset else job.program
    try:
        namespace = types.ModuleType("candidate").__dict__
        namespace["__builtins__"] = builtins
        exec(compile(source, "<program>", "exec"), namespace)  # noqa: S102 - confined above
        fn = namespace.get(job.entry_point)
        if fn is None:
            return {"ok": False, "error": f"the program does not define {job.entry_point!r}"}, b""
        if not callable(fn):
            return {"ok": False, "error": f"{job.entry_point!r} is not callable "
                                          f"(it is a {type(fn).__name__})"}, b""
        solution = job.solve(fn, job.inputs)
        try:
            payload = json.dumps(solution, allow_nan=False, separators=(",", ":")).encode("utf-8")
        except (TypeError, ValueError, RecursionError) as exc:
            return {"ok": False, "error": f"the solution is not JSON-serializable: {_safe_str(exc)}"}, b""
        if len(payload) > job.max_output_bytes:
            return {"ok": False, "killed": "output",
                    "error": f"the solution is {len(payload)} bytes, over the {job.max_output_bytes}-byte limit"}, b""
        return {"ok": True}, payload
    except MemoryError:
        return {"ok": False, "killed": "memory",
                "error": f"MemoryError: over the {job.memory_mb} MiB memory limit"}, b""
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt... all make the run invalid
        return {"ok": False, "error": _describe(exc, offset)}, b""


def _safe_str(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:  # noqa: BLE001 - a hostile __str__
        text = "<unprintable>"
    return text[:1000]


def _describe(exc: BaseException, offset: int) -> str:
    """``Type: message (line N)`` with N counted in the program as the LLM wrote it."""
    text = f"{type(exc).__name__}: {_safe_str(exc)}" if not isinstance(exc, SyntaxError) else \
        f"SyntaxError: {exc.msg}"
    line = None
    if isinstance(exc, SyntaxError) and exc.filename == "<program>" and exc.lineno:
        line = exc.lineno
    else:
        try:
            for frame in traceback.extract_tb(exc.__traceback__):
                if frame.filename == "<program>":
                    line = frame.lineno
        except BaseException:  # noqa: BLE001
            pass
    if line is not None:
        text += f" (line {line - offset})" if line > offset else " (in the task's imports)"
    return text


def _report(fd: int, header: dict[str, Any], payload: bytes = b"") -> None:
    data = json.dumps(header, separators=(",", ":")).encode("utf-8") + b"\n" + payload
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        pass  # the program closed or replaced the result pipe: the zygote reports "no result"
