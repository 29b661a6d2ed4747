"""The core install needs no extra; a missing extra is one clear line and exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("fastapi", "uvicorn", "transformers", "peft", "trl", "bitsandbytes", "optuna", "ray",
         "matplotlib", "psycopg")


def _python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_the_methods_library_and_tasks_load_no_extra() -> None:
    code = ("import sys, json, optiforge.optim, optiforge.kernels, optiforge.heuristics, "
            "optiforge.blackbox, optiforge.agents.registry, optiforge.platform.study, "
            "optiforge.platform.campaigns\n"
            f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))")
    out = _python(code)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


def _blocker(tmp_path: Path, *modules: str) -> dict[str, str]:
    """A path entry that shadows ``modules`` with packages whose import fails, as if absent."""
    for m in modules:
        (tmp_path / m).mkdir()
        (tmp_path / m / "__init__.py").write_text(f"raise ImportError('No module named {m}')\n")
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}


@pytest.mark.parametrize(("args", "blocked", "extra"), [
    (["serve", "--port", "0"], "fastapi", "server"),
    (["campaign", "run", "--task", "binpacking", "--budget", "2", "--llm", "smollm2"],
     "transformers", "llm"),
])
def test_missing_extra_is_one_line_and_exit_2(tmp_path: Path, args: list[str], blocked: str,
                                             extra: str) -> None:
    env = {**os.environ, **_blocker(tmp_path, blocked), "OPTIFORGE_HOME": str(tmp_path / "home")}
    run = subprocess.run([sys.executable, "-m", "optiforge.platform.cli", *args], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and f"pip install 'optiforge[{extra}]'" in lines[0], run.stderr
    assert "Traceback" not in run.stderr


def test_optuna_integration_names_its_extra(tmp_path: Path) -> None:
    out = _python("import optiforge.integrations.optuna", _blocker(tmp_path, "optuna"))
    assert out.returncode != 0 and "pip install 'optiforge[optuna]'" in out.stderr
