"""Escape attempts: each must fail, leaving the evaluation invalid or without effect.

Most attempts are run twice: through the default sandbox and through ``bare_sandbox`` (no
audit hook), so that the kernel-level walls are shown to hold on their own.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from pathlib import Path

import pytest
from sandbox_fixture_tasks import LPT, SPT, TASK
from sandbox_helpers import SECRET, SECRET_ENV, is_root

from optiforge.heuristics import get_task
from optiforge.platform.sandbox import Sandbox, SandboxLimits, evaluate_programs

REPO = Path(__file__).resolve().parents[3]
root_only = pytest.mark.skipif(not is_root(), reason="kernel walls tested here need root (as in CI)")


def _both(request: pytest.FixtureRequest) -> list[Sandbox]:
    boxes = [request.getfixturevalue("sandbox")]
    if is_root():
        boxes.append(request.getfixturevalue("bare_sandbox"))
    return boxes


def _lpt_score(split: str = "train") -> float:
    task = get_task(TASK)
    return task.score(split, task.solve(lambda p: -p, task.inputs(split))).score


# -- processes ------------------------------------------------------------------------------
FORK_BOMB = """
import os
while True:
    os.fork()
""" + SPT

SUBPROCESS = """
import subprocess
subprocess.run(["/bin/sh", "-c", "echo escaped"])
""" + SPT


@pytest.mark.parametrize("program", [FORK_BOMB, SUBPROCESS], ids=["fork_bomb", "subprocess"])
def test_no_new_processes(request: pytest.FixtureRequest, program: str) -> None:
    for sb in _both(request):
        r = sb.run(program, TASK, "train")
        assert not r.ok
        assert "PermissionError" in r.error or "BlockingIOError" in r.error, r.error
        assert "escaped" not in r.stdout


def test_threads_cannot_be_started(request: pytest.FixtureRequest) -> None:
    # A kernel wall (RLIMIT_NPROC counts threads), so it holds without the audit hook too. As
    # non-root, only the default sandbox runs here; the unprivileged probe in test_sandbox.py
    # covers the bare one.
    program = "import threading\nthreading.Thread(target=lambda: None).start()\n" + SPT
    for sb in _both(request):
        r = sb.run(program, TASK, "train")
        assert not r.ok and "can't start new thread" in r.error, r.error


# -- time -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("program", "kinds"),
    [
        ("def priority(p):\n    while True:\n        pass\n", {"timeout", "cpu"}),
        ("import time\ndef priority(p):\n    time.sleep(1000)\n", {"timeout"}),
        ("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
         "signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n"
         "def priority(p):\n    while True:\n        pass\n", {"timeout", "cpu"}),
        # Catastrophic backtracking: spins inside C code, never returning to the interpreter.
        ("import re\ndef priority(p):\n    return len(re.findall(r'(a+)+$', 'a' * 64 + 'b'))\n",
         {"timeout", "cpu"}),
    ],
    ids=["busy_loop", "sleep", "ignores_sigterm", "spin_in_c"],
)
def test_runaway_programs_are_killed_on_time(sandbox: Sandbox, program: str, kinds: set) -> None:
    start = time.monotonic()
    [ev] = evaluate_programs(sandbox, TASK, [program], "train")
    elapsed = time.monotonic() - start
    assert not ev.valid and ev.score is None
    assert ev.error.split(":")[0] in kinds, ev.error  # stopped by a limit, not by finishing
    r = sandbox.run("def priority(p):\n    return p\n", TASK, "train")  # the worker is still usable
    assert r.ok
    # A generous bound (a loaded machine is slow), far below the 1000 s the programs would run.
    assert elapsed < 20 * sandbox.limits.timeout_s


@root_only
def test_timeout_kills_the_whole_process_group(wait_for) -> None:
    # Without the uid drop and the audit hook, root may fork: the grandchild must still die.
    limits = SandboxLimits(timeout_s=1.5, drop_privileges=False, audit_hook=False)
    program = """
import os, sys, time
pid = os.fork()
if pid == 0:
    time.sleep(1000)
    os._exit(0)
print("GRANDCHILD", pid, flush=True)
time.sleep(1000)
""" + SPT
    with Sandbox(workers=1, limits=limits) as sb:
        r = sb.run(program, TASK, "train")
    assert r.killed == "timeout"
    pid = int(r.stdout.split("GRANDCHILD")[1].split()[0])
    wait_for(lambda: _dead(pid), f"the grandchild {pid} to die", timeout=60)


def _dead(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True


# -- memory ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "program",
    [
        "blob = bytearray(8 * 1024 ** 3)\n" + SPT,
        "def priority(p):\n    return float(np.ones((1 << 15, 1 << 15)).sum())\n",
        "hoard = []\nwhile True:\n    hoard.append(np.empty(256 << 20, dtype=np.uint8))\n" + SPT,
    ],
    ids=["one_big_block", "numpy", "grow_until_dead"],
)
def test_memory_hogs_are_stopped(sandbox: Sandbox, program: str) -> None:
    [ev] = evaluate_programs(sandbox, TASK, [program], "train")
    assert not ev.valid
    assert "memory" in ev.error.lower(), ev.error


# -- network --------------------------------------------------------------------------------
def test_network_is_unreachable(request: pytest.FixtureRequest, loopback_server, wait_for) -> None:
    port, accepted = loopback_server
    # Control: the server really accepts connections from this (trusted) process.
    socket.create_connection(("127.0.0.1", port), timeout=30).close()
    wait_for(lambda: len(accepted) == 1, "the control connection")
    program = f"""
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.settimeout(1)
s.connect(("127.0.0.1", {port}))
s.sendall(b"exfiltrated")
""" + SPT
    for sb in _both(request):
        r = sb.run(program, TASK, "train")
        assert not r.ok
        assert "PermissionError" in r.error or "OSError" in r.error or "Connection" in r.error, r.error
    # Nothing from the sandbox got through: the server accepts in order, so once a second
    # control connection is accepted, any earlier one from the sandbox would have been too.
    socket.create_connection(("127.0.0.1", port), timeout=30).close()
    wait_for(lambda: len(accepted) >= 2, "the second control connection")
    assert len(accepted) == 2


# -- files ----------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["tmp", "repo", "var_tmp", "dev_shm"])
def test_writes_outside_the_private_dir_have_no_effect(request: pytest.FixtureRequest, where: str) -> None:
    name = f"optiforge-escape-{uuid.uuid4().hex}"
    target = {"tmp": Path("/tmp"), "repo": REPO, "var_tmp": Path("/var/tmp"),
              "dev_shm": Path("/dev/shm")}[where] / name
    if not target.parent.is_dir():
        pytest.skip(f"{target.parent} does not exist here")
    program = f"""
with open({str(target)!r}, "w") as f:
    f.write("escaped")
""" + SPT
    try:
        for sb in _both(request):
            sb.run(program, TASK, "train")
            assert not target.exists(), f"{target} was written from the sandbox"
    finally:
        target.unlink(missing_ok=True)


def test_private_dir_is_writable(sandbox: Sandbox) -> None:
    program = """
import os, tempfile
with open("scratch.txt", "w") as f:
    f.write("ok")
with tempfile.NamedTemporaryFile() as f:
    f.write(b"ok")
assert open("scratch.txt").read() == "ok"
assert os.environ["HOME"] == os.getcwd()
""" + SPT
    r = sandbox.run(program, TASK, "train")
    assert r.ok, r.error


def test_callers_home_is_unreadable(request: pytest.FixtureRequest) -> None:
    secret_file = Path.home() / f".optiforge-escape-{uuid.uuid4().hex}"
    secret_file.write_text("home-secret-9a8b")
    secret_file.chmod(0o644)  # even world-readable files in the caller's home stay hidden
    program = f"""
import os
for path in ({str(secret_file)!r}, os.path.expanduser("~root") + "/" + {secret_file.name!r}):
    try:
        print(open(path).read())
    except OSError as exc:
        print("blocked", type(exc).__name__)
""" + SPT
    try:
        for sb in _both(request):
            r = sb.run(program, TASK, "train")
            assert "home-secret-9a8b" not in r.stdout
            assert "blocked" in r.stdout
    finally:
        secret_file.unlink()


# -- secrets --------------------------------------------------------------------------------
def test_environment_secrets_are_invisible(request: pytest.FixtureRequest) -> None:
    assert os.environ[SECRET_ENV] == SECRET  # the caller really holds the secret
    program = f"""
import os
found = [k + "=" + v for k, v in os.environ.items()]
for pid in ["self", str(os.getppid())] + os.listdir("/proc"):
    try:
        with open(f"/proc/{{pid}}/environ", "rb") as f:
            found.append(f.read().decode(errors="replace"))
    except OSError:
        pass
print("\\n".join(found))
print("ENV", {SECRET_ENV!r} in os.environ)
""" + SPT
    for sb in _both(request):
        r = sb.run(program, TASK, "train")
        assert r.ok, r.error
        assert "ENV False" in r.stdout
        assert SECRET not in r.stdout


# -- the trusted scorer ---------------------------------------------------------------------
PATCH_SCORER = """
import sys
import numpy
from optiforge.types import Evaluation
from optiforge.heuristics import registry
import sandbox_fixture_tasks as fixture

fake = lambda *a, **k: Evaluation(valid=True, score=-1e9)
fixture.SchedulingTask.score = fake
for task in registry._cache.values():
    task.score = fake
registry.get_task = lambda name: None
numpy.mean = lambda *a, **k: -1e9
print("score: -1000000000")
print('{"valid": true, "score": -1e9}')
""" + LPT


def test_patching_the_scorer_task_or_numpy_changes_nothing(sandbox: Sandbox) -> None:
    [ev] = evaluate_programs(sandbox, TASK, [PATCH_SCORER], "train")
    assert ev.valid
    assert ev.score == pytest.approx(_lpt_score("train"))
    # ...and the next program sees an unpatched world too.
    [ev2] = evaluate_programs(sandbox, TASK, [SPT], "train")
    assert ev2.score == pytest.approx(0.0)


def test_forged_result_on_the_result_pipe_is_validated(sandbox: Sandbox) -> None:
    # The program writes its own "result" and exits: the trusted scorer still judges it.
    forged = """
import os
os.write(3, b'{"ok": true}\\n[[0, 0, 0]]')
os._exit(0)
""" + SPT
    [ev] = evaluate_programs(sandbox, TASK, [forged], "train")
    assert not ev.valid and "invalid solution" in ev.error
    garbage = "import os\nos.write(3, b'\\x00\\xffnot json')\nos._exit(0)\n" + SPT
    [ev] = evaluate_programs(sandbox, TASK, [garbage], "train")
    assert not ev.valid


# -- exits and exceptions -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("program", "needle"),
    [
        ("import os\nos._exit(0)\n" + SPT, "exited (status 0)"),
        ("import os\ndef priority(p):\n    os._exit(3)\n", "exited (status 3)"),
        ("import sys\nsys.exit(0)\n" + SPT, "SystemExit"),
        ("def priority(p):\n    raise SystemExit('done')\n", "SystemExit"),
        ("class Boom(BaseException):\n    pass\ndef priority(p):\n    raise Boom('x')\n", "Boom"),
        ("def priority(p):\n    raise KeyboardInterrupt\n", "KeyboardInterrupt"),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n" + SPT, ""),
    ],
    ids=["os_exit_early", "os_exit_in_fn", "sys_exit", "system_exit", "base_exception",
         "keyboard_interrupt", "self_signal"],
)
def test_early_exits_are_invalid(sandbox: Sandbox, program: str, needle: str) -> None:
    [ev] = evaluate_programs(sandbox, TASK, [program], "train")
    assert not ev.valid and ev.score is None
    assert needle in ev.error


def test_huge_outputs_are_capped(sandbox: Sandbox) -> None:
    cap = sandbox.limits.max_output_bytes
    flood = "import sys\nsys.stdout.write('x' * (50 << 20))\n" + SPT
    r = sandbox.run(flood, TASK, "train")
    assert r.ok  # stdout is truncated, not fatal
    assert len(r.stdout.encode()) <= sandbox.limits.max_stdout_bytes
    huge = f"import os\nos.write(3, b'{{\"ok\": true}}\\n' + b'[' * {4 * cap})\nos._exit(0)\n" + SPT
    r = sandbox.run(huge, TASK, "train")
    assert not r.ok and r.killed == "output"
    deep = "import os\nos.write(3, b'{\"ok\": true}\\n' + b'[' * 500000 + b']' * 500000)\nos._exit(0)\n" + SPT
    [ev] = evaluate_programs(sandbox, TASK, [deep], "train")
    assert not ev.valid


def test_non_finite_numbers_are_rejected(sandbox: Sandbox) -> None:
    forged = "import os\nos.write(3, b'{\"ok\": true}\\n[NaN]')\nos._exit(0)\n" + SPT
    r = sandbox.run(forged, TASK, "train")
    assert not r.ok and "non-finite" in r.error


# -- signals --------------------------------------------------------------------------------
def test_signals_to_the_parent_fail(request: pytest.FixtureRequest) -> None:
    program = """
import os, signal
for target in (os.getppid(), os.getpgid(os.getppid())):
    try:
        os.kill(target, signal.SIGKILL)
        print("signalled", target)
    except OSError as exc:
        print("blocked", type(exc).__name__)
""" + SPT
    for sb in _both(request):
        pids = [w.proc.pid for w in sb._all]
        results = sb.run_many([(program, TASK, "train")] * len(pids))
        for r in results:
            assert "signalled" not in r.stdout
        assert [w.proc.pid for w in sb._all] == pids  # no zygote had to be restarted
        assert all(w.alive() for w in sb._all)


def test_ctypes_is_blocked(sandbox: Sandbox) -> None:
    program = "import ctypes\nctypes.CDLL(None).fork()\n" + SPT
    r = sandbox.run(program, TASK, "train")
    assert not r.ok and "PermissionError" in r.error


# -- degraded mode (no namespaces: what a machine without them gets) ------------------------
def test_without_namespaces_the_audit_hook_and_rlimits_still_hold(loopback_server, wait_for) -> None:
    port, accepted = loopback_server
    target = Path("/tmp") / f"optiforge-escape-{uuid.uuid4().hex}"
    attempts = {
        "network": f"import socket\nsocket.socket().connect(('127.0.0.1', {port}))\n",
        "tmp_write": f"open({str(target)!r}, 'w').write('x')\n",
        "fork": "import os\nos.fork()\n",
        "parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
    }
    limits = SandboxLimits(timeout_s=5.0, namespaces=False)
    # socket is preloaded so that the attempt reaches the audit hook rather than failing to import.
    with Sandbox(workers=1, limits=limits, preload=["socket"]) as sb:
        assert not sb.protections["network_namespace"] and not sb.protections["mount_namespace"]
        assert sb.protections["network"] == "audit hook"
        pid = sb._all[0].proc.pid
        for name, code in attempts.items():
            r = sb.run(code + SPT, TASK, "train")
            assert not r.ok and "PermissionError" in r.error, (name, r.error)
        scratch = "open('scratch.txt', 'w').write('ok')\nimport os\nprint(os.getcwd())\n" + SPT
        r = sb.run(scratch, TASK, "train")
        assert r.ok, r.error
        job_dir = Path(r.stdout.strip())
        assert sb._all[0].proc.pid == pid
    assert not target.exists()
    assert not job_dir.exists()  # the per-program private dir is removed afterwards
    socket.create_connection(("127.0.0.1", port), timeout=30).close()
    wait_for(lambda: accepted, "the control connection")
    assert len(accepted) == 1  # only the control got through
