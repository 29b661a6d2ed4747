"""The sandbox as a NON-ROOT user runs it: no uid to drop to, so its kernel walls are a user
namespace (holding the network and mount namespaces) and RLIMIT_NPROC.

The suite usually runs as root (CI does), where the sandbox takes the other path (uid drop), so
this mode is run here as uid 65534 through ``setpriv``: a real unprivileged user with no
capability. The probe (unprivileged_probe.py) tries each escape with and without the audit hook.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
NOBODY = 65534
SECRET = "unprivileged-home-secret-41"


def _runner() -> tuple[list[str], str, str]:
    """(command prefix, interpreter, PYTHONPATH) that run this checkout as an unprivileged user."""
    pythonpath = os.pathsep.join([str(REPO), *site.getsitepackages()])
    if os.geteuid() != 0:
        return [], sys.executable, pythonpath
    if shutil.which("setpriv") is None:
        pytest.skip("running the sandbox as an unprivileged user needs setpriv (util-linux)")
    prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    # The venv's interpreter may live under root's home (pyenv in /root), which uid 65534 cannot
    # enter; a system interpreter of the same minor version runs the venv's packages (same ABI).
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [sys.executable, f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    tried = []
    for python in dict.fromkeys(candidates):
        # It must also start itself again: the sandbox's zygotes are new processes of it.
        code = ("import subprocess, sys; subprocess.run([sys.executable, '-c', 'import numpy'], "
                "check=True); print('%d.%d' % sys.version_info[:2])")
        check = subprocess.run(
            [*prefix, python, "-c", code],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": pythonpath}, cwd="/",
        )
        if check.returncode == 0 and check.stdout.strip() == version:
            return prefix, python, pythonpath
        tried.append(f"{python}: {(check.stderr.strip().splitlines() or ['?'])[-1][:120]}")
    pytest.skip(f"no Python {version} that uid {NOBODY} can run with this venv's packages ({'; '.join(tried)})")


@pytest.fixture(scope="module")
def probe() -> dict:
    """The probe's report, plus what the escapes did to this machine."""
    prefix, python, pythonpath = _runner()
    server = socket.create_server(("127.0.0.1", 0))
    # HOME outside the world-writable dirs: those get their own private tmpfs in the sandbox.
    home = Path(tempfile.mkdtemp(prefix=".unprivileged-home-", dir=HERE))
    secret = home / "secret.txt"
    target = Path("/tmp") / f"optiforge-escape-{uuid.uuid4().hex}"
    try:
        secret.write_text(SECRET)
        secret.chmod(0o644)
        if prefix:
            os.chown(home, NOBODY, NOBODY)
            os.chown(secret, NOBODY, NOBODY)
        env = {**os.environ, "HOME": str(home), "PYTHONPATH": pythonpath}
        r = subprocess.run(
            [*prefix, python, str(HERE / "unprivileged_probe.py"), str(server.getsockname()[1]),
             str(target), str(secret)],
            capture_output=True, text=True, env=env, cwd=home, timeout=300,
        )
        if r.returncode != 0:
            pytest.fail(f"the probe failed:\n{r.stderr}")
        report = json.loads(r.stdout.strip().splitlines()[-1])
        # A connection that got through sits in the accept queue once connect() has returned.
        server.setblocking(False)
        try:
            server.accept()[0].close()
            connected = True
        except BlockingIOError:
            connected = False
        # Whether this machine lets an unprivileged user create user + network namespaces at all.
        unshare = ("import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
                   "os._exit(int(libc.unshare(0x10000000 | 0x40000000) != 0))")
        userns = subprocess.run([*prefix, python, "-c", unshare], cwd="/").returncode == 0
        report.update(target_written=target.exists(), connected=connected, userns_allowed=userns)
        # Control: a connection from here does reach the queue, so the check above can see one.
        socket.create_connection(server.getsockname(), timeout=30).close()
        server.setblocking(True)
        server.settimeout(30)
        server.accept()[0].close()
        yield report
    finally:
        server.close()
        target.unlink(missing_ok=True)
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.parametrize("mode", ["default", "bare"])
def test_namespaces_are_up_for_an_unprivileged_user(probe: dict, mode: str) -> None:
    assert probe["euid"] != 0
    p = probe["modes"][mode]["protections"]
    if not probe["userns_allowed"]:
        pytest.skip("unprivileged user namespaces are disabled on this machine "
                    "(kernel.unprivileged_userns_clone=0 or AppArmor's "
                    "restrict_unprivileged_userns), so the sandbox cannot create them")
    assert p["user_namespace"]
    assert p["network_namespace"] and p["network"] == "namespace"
    assert p["mount_namespace"] and p["private_tmp"] and p["hidden_home"]
    assert p["uid_drop"] is None and p["no_new_processes"]
    assert p["audit_hook"] == (mode == "default")


@pytest.mark.parametrize("mode", ["default", "bare"])
@pytest.mark.parametrize("escape", ["thread", "fork", "network"])
def test_escapes_fail_for_an_unprivileged_user(probe: dict, mode: str, escape: str) -> None:
    run = probe["modes"][mode]["runs"][escape]
    assert not run["ok"], run


def test_escapes_leave_no_trace_for_an_unprivileged_user(probe: dict) -> None:
    assert not probe["target_written"], "a sandboxed program wrote to the real /tmp"
    assert not probe["connected"], "a sandboxed program reached a loopback server"
    for mode, result in probe["modes"].items():
        for name, run in result["runs"].items():
            assert SECRET not in run["stdout"], (mode, name)
        assert result["control_ok"], mode  # the private dir still works
    # With the audit hook, the zygote survives a program that tries to kill it.
    default = probe["modes"]["default"]
    assert not default["runs"]["parent_kill"]["ok"] and default["zygote_alive"]


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "known gap: as non-root, the child keeps the zygote's uid (root of the user namespace), so "
    "without the audit hook it can SIGKILL its zygote; a PID namespace or a second uid would stop it"))
def test_without_the_audit_hook_the_zygote_survives_for_an_unprivileged_user(probe: dict) -> None:
    assert probe["modes"]["bare"]["zygote_alive"]
