"""Constants and checks shared by the sandbox tests (imported by name: a module named
``conftest`` is whichever conftest.py pytest loaded last, so tests must not import from it)."""

from __future__ import annotations

import os

SECRET_ENV = "OPTIFORGE_SANDBOX_TEST_SECRET"
SECRET = "s3cr3t-d0-n0t-l3ak-7f1c"
FAST = dict(timeout_s=3.0, memory_mb=1024, max_output_bytes=1 << 20, max_stdout_bytes=4096)


def is_root() -> bool:
    return os.geteuid() == 0
