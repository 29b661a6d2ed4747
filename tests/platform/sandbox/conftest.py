from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import sandbox_fixture_tasks  # noqa: E402,F401 - registers the test task

from optiforge.platform.sandbox import Sandbox, SandboxLimits  # noqa: E402

SECRET_ENV = "OPTIFORGE_SANDBOX_TEST_SECRET"
SECRET = "s3cr3t-d0-n0t-l3ak-7f1c"

# Set before any zygote starts, as a caller's API key would be.
os.environ[SECRET_ENV] = SECRET

FAST = dict(timeout_s=3.0, memory_mb=1024, max_output_bytes=1 << 20, max_stdout_bytes=4096)


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    with Sandbox(workers=2, limits=SandboxLimits(**FAST)) as sb:
        yield sb


@pytest.fixture(scope="session")
def bare_sandbox() -> Sandbox:
    """No audit hook: only the kernel-level walls (namespaces, uid drop, rlimits) stand."""
    with Sandbox(workers=1, limits=SandboxLimits(**FAST, audit_hook=False)) as sb:
        yield sb


def is_root() -> bool:
    return os.geteuid() == 0
