"""A third-party package adds a task and an agent through entry points, and both run.

The package in tests/fixtures/example_plugin is really installed (pip, into a temporary
folder put on the path), exactly as a user installs a plug-in; then the real CLI lists its
task and agent and runs campaigns with them (the task's programs in the real sandbox).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PLUGIN = Path(__file__).parent / "fixtures" / "example_plugin"

RESPONSES = [
    "{The idea of the algorithm is to take dense items first.}\n```python\n"
    "def priority(value, weight, capacity):\n    return value / (weight + 1.0)\n```",
    "{The idea of the algorithm is to take light items first.}\n```python\n"
    "def priority(value, weight, capacity):\n    return -weight\n```",
]


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "--target", str(target), str(PLUGIN)],
                   check=True, capture_output=True, timeout=300)
    return target


def _cli(args: list[str], plugin_path: Path, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPTIFORGE_HOME": str(home),
           "PYTHONPATH": os.pathsep.join([str(plugin_path), *sys.path])}
    env.pop("OPTIFORGE_DB", None)
    return subprocess.run([sys.executable, "-m", "optiforge.platform.cli", *args], env=env,
                          capture_output=True, text=True, timeout=600)


def test_plugin_task_and_agent_are_listed(plugin_path: Path, tmp_path: Path) -> None:
    tasks = json.loads(_cli(["tasks", "--json"], plugin_path, tmp_path).stdout)
    row = next(r for r in tasks if r["name"] == "example-knapsack")
    assert row["kind"] == "heuristic" and row["entry_point"] == "priority"
    agents = json.loads(_cli(["agents", "--json"], plugin_path, tmp_path).stdout)
    assert {"name": "example-coordinate", "kind": "blackbox",
            "summary": "cyclic coordinate search (a plug-in)"} in agents


def test_plugin_task_runs_in_a_campaign(plugin_path: Path, tmp_path: Path) -> None:
    replay = tmp_path / "responses.jsonl"
    replay.write_text("\n".join(json.dumps({"text": t}) for t in RESPONSES) + "\n")
    run = _cli(["campaign", "run", "--task", "example-knapsack", "--budget", "4", "--samples", "2",
                "--llm", f"replay:{replay}", "--workers", "1"], plugin_path, tmp_path)
    assert run.returncode == 0, run.stderr
    cid = run.stdout.split("campaign id:")[1].split()[0]
    show = json.loads(_cli(["campaign", "show", cid, "--json"], plugin_path, tmp_path).stdout)
    assert show["status"] == "finished" and show["generated"] == 4
    assert show["valid_rate"] == 1.0  # both programs ran in the sandbox and were scored
    best = show["best"][0]
    assert best["score"] >= 0.0 and best["test_score"] is not None


def test_plugin_agent_drives_a_study_and_a_campaign(plugin_path: Path, tmp_path: Path) -> None:
    run = _cli(["campaign", "run", "--task", "branin", "--agent", "example-coordinate",
                "--budget", "9", "--options", '{"step": 0.05}'], plugin_path, tmp_path)
    assert run.returncode == 0, run.stderr
    cid = run.stdout.split("campaign id:")[1].split()[0]
    show = json.loads(_cli(["campaign", "show", cid, "--json"], plugin_path, tmp_path).stdout)
    assert show["evaluations"] == 9 and show["status"] == "finished"
    bad = _cli(["campaign", "run", "--task", "branin", "--agent", "example-coordinate",
                "--budget", "3", "--options", '{"step": 2}'], plugin_path, tmp_path)
    assert bad.returncode == 2 and "agent_options.step" in bad.stderr
