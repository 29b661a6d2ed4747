from __future__ import annotations

import os
import socket
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import sandbox_fixture_tasks  # noqa: E402,F401 - registers the test task
from sandbox_helpers import FAST, SECRET, SECRET_ENV  # noqa: E402

from optiforge.platform.sandbox import Sandbox, SandboxLimits  # noqa: E402

# Set before any zygote starts, as a caller's API key would be.
os.environ[SECRET_ENV] = SECRET


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    with Sandbox(workers=2, limits=SandboxLimits(**FAST)) as sb:
        yield sb


@pytest.fixture(scope="session")
def bare_sandbox() -> Sandbox:
    """No audit hook: only the kernel-level walls (namespaces, uid drop, rlimits) stand."""
    with Sandbox(workers=1, limits=SandboxLimits(**FAST, audit_hook=False)) as sb:
        yield sb


@pytest.fixture
def loopback_server():
    """A TCP server on 127.0.0.1: yields (port, accepted connections), accepting in order."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()
