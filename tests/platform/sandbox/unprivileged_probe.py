"""Run by test_user_namespace.py as an UNPRIVILEGED user: start the sandbox, try a few escapes, print JSON.

As a non-root user the sandbox cannot drop to another uid; its walls are a user namespace (with
network and mount namespaces inside it), RLIMIT_NPROC and, optionally, the audit hook. Each
attempt runs twice, with and without the audit hook, so the kernel-level walls are shown alone.

Usage: python unprivileged_probe.py PORT TARGET_FILE SECRET_FILE
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from sandbox_fixture_tasks import SPT, TASK  # noqa: E402 - registers the test task

from optiforge.platform.sandbox import Sandbox, SandboxLimits  # noqa: E402


def main() -> None:
    port, target, secret = sys.argv[1], sys.argv[2], sys.argv[3]
    attempts = {
        "thread": "import threading\nthreading.Thread(target=lambda: None).start()\n",
        "fork": "import os\nos.fork()\n",
        "network": f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5)\n",
        "tmp_write": f"open({target!r}, 'w').write('escaped')\n",
        "home_read": f"print(open({secret!r}).read())\n",
        "parent_kill": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
    }
    out: dict = {"euid": os.geteuid(), "modes": {}}
    for mode, hook in (("default", True), ("bare", False)):
        limits = SandboxLimits(timeout_s=20.0, memory_mb=1024, audit_hook=hook)
        # socket is preloaded so that the attempt reaches the walls rather than failing to import.
        with Sandbox(workers=1, limits=limits, preload=["socket", "threading"]) as sb:
            zygote = sb._all[0].proc.pid
            runs = {name: sb.run(code + SPT, TASK, "train") for name, code in attempts.items()}
            control = sb.run("open('scratch.txt', 'w').write('ok')\n" + SPT, TASK, "train")
            out["modes"][mode] = {
                "protections": sb.protections,
                "runs": {name: {"ok": r.ok, "error": r.error, "stdout": r.stdout} for name, r in runs.items()},
                "control_ok": control.ok,
                "zygote_alive": sb._all[0].alive() and sb._all[0].proc.pid == zygote,
            }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
