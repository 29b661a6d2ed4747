"""``optiforge matching run`` as a user runs it: real processes, JSON, a plot, bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "optiforge.platform.cli", "matching", "run"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)


def test_json_report_and_plot(tmp_path):
    png = tmp_path / "ratio.png"
    r = _cli("--data", "taxi", "--n", "60", "-m", "greedy", "-m", "pushrelabel", "-m", "opt",
             "--bid", "--batch-size", "20", "--plot", str(png), "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    res = {x["method"]: x for x in report["results"]}
    assert res["opt"]["ratio_to_opt"] == pytest.approx(1.0)
    assert res["pushrelabel"]["ratio_to_opt"] < res["greedy"]["ratio_to_opt"]
    assert res["greedy"]["checkpoints"] == [20, 40, 60]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_program_file_runs_in_process(tmp_path):
    prog = tmp_path / "rule.py"
    prog.write_text("def select_server(d, free, sd, a):\n    return int(np.argmin(np.where(free, d, np.inf)))\n")
    r = _cli("--data", "road", "--n", "30", "-m", f"program:{prog}", "-m", "greedy", "--json")
    assert r.returncode == 0, r.stderr
    costs = [x["cost"] for x in json.loads(r.stdout)["results"]]
    assert costs[0] == pytest.approx(costs[1])  # the program is greedy


@pytest.mark.parametrize(
    ("args", "word"),
    [
        (["--data", "mnist"], "data"),
        (["--n", "0"], "n"),
        (["-m", "hungarian"], "method"),
        (["-m", "program:/no/such/rule.py"], "method"),
        (["--data", "digits", "--n", "10", "-m", "quadtree"], "quadtree"),
        (["--delta", "2"], "delta"),
        (["--n", "10", "--batch-size", "0", "-m", "greedy"], "batch_size"),
        (["--no-opt", "--plot", "x.png"], "plot"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, word):
    r = _cli(*args)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and word in lines[0], r.stderr
