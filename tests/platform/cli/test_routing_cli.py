"""``optiforge routing generate | evaluate`` as a user runs it: real processes, JSON, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

CLI = [sys.executable, "-m", "optiforge.platform.cli", "routing"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "160"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, env=env)


def test_generate_then_evaluate_against_cpsat(tmp_path):
    pytest.importorskip("ortools")
    data = tmp_path / "hard.npz"
    r = _cli("generate", "--problem", "tsptw", "--hardness", "hard", "--n", "10", "--instances", "12",
             "--seed", "3", "--out", str(data))
    assert r.returncode == 0, r.stderr
    r = _cli("evaluate", "--data", str(data), "-m", "greedy-c", "-m", "lmask-greedy-c", "-m", "cpsat",
             "--time-limit", "10", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["reference"] == "cpsat" and report["instances"] == 12 and report["n"] == 10
    res = {x["method"]: x for x in report["results"]}
    assert res["cpsat"]["gap_pct"] == pytest.approx(0.0)
    assert res["lmask-greedy-c"]["inst_inf_pct"] == 0.0  # hard sets are feasible; LazyMask finds them
    assert res["lmask-greedy-c"]["gap_pct"] >= -1e-6  # nothing beats the optimum
    assert res["greedy-c"]["sol_inf_pct"] >= res["lmask-greedy-c"]["sol_inf_pct"]


def test_table_output_and_program_file(tmp_path):
    prog = tmp_path / "rule.py"
    prog.write_text("def score_nodes(c, load, cand, dist, demand, draft):\n    return -draft[cand]\n")
    r = _cli("evaluate", "--problem", "tspdl", "--n", "20", "--instances", "16", "-m",
             f"program:{prog}", "-m", "lmask-greedy-c", "--json")
    assert r.returncode == 0, r.stderr
    objs = [x["obj"] for x in json.loads(r.stdout)["results"]]
    assert objs[0] == pytest.approx(objs[1])  # the program is greedy-C
    r = _cli("evaluate", "--problem", "tspdl", "--n", "20", "--instances", "16", "-m", "greedy-c")
    assert r.returncode == 0, r.stderr
    assert "Sol.Inf %" in r.stdout and "Inst.Inf %" in r.stdout and "greedy-c" in r.stdout


@pytest.mark.parametrize(
    ("args", "word"),
    [
        (["evaluate", "--problem", "cvrp"], "problem"),
        (["evaluate", "--problem", "tspdl", "--hardness", "easy"], "hardness"),
        (["evaluate", "--problem", "tsptw", "-m", "hungarian"], "method"),
        (["evaluate", "--problem", "tsptw", "-m", "lmask:/no/model.pt"], "model file"),
        (["evaluate", "--problem", "tspdl", "--n", "10", "-m", "pyvrp"], "pyvrp"),
        (["evaluate", "--problem", "tsptw", "--reference", "pyvrp"], "reference"),
        (["evaluate", "--data", "/no/such.npz"], "no such file"),
        (["generate", "--problem", "tsptw", "--n", "2", "--out", "x.npz"], "n"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, word):
    r = _cli(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and word in lines[0]
    assert "Traceback" not in r.stderr


def test_instance_files_of_the_wrong_problem_or_shape(tmp_path):
    bad = tmp_path / "bad.npz"
    np.savez(bad, problem=np.array("tspdl"), coords=np.zeros((2, 5, 2)), demand=np.zeros((2, 5)),
             draft=np.zeros((3, 5)))
    r = _cli("evaluate", "--data", str(bad))
    assert r.returncode == 2 and "draft: expected shape" in r.stderr
    good = tmp_path / "dl.npz"
    assert _cli("generate", "--problem", "tspdl", "--n", "8", "--instances", "2", "--out",
                str(good)).returncode == 0
    r = _cli("evaluate", "--data", str(good), "--problem", "tsptw")
    assert r.returncode == 2 and "holds tspdl" in r.stderr


def test_train_then_evaluate_the_model(tmp_path):
    model = tmp_path / "m.pt"
    r = _cli("train", "--problem", "tsptw", "--n", "8", "--epochs", "1", "--steps", "1", "--batch-size", "2",
             "--samples", "2", "--embed-dim", "8", "--layers", "1", "--heads", "2", "--ff-dim", "8",
             "--out", str(model))
    assert r.returncode == 0, r.stderr
    assert model.is_file() and "1 epochs" in r.stdout
    r = _cli("evaluate", "--problem", "tsptw", "--n", "8", "--instances", "2", "-m", f"lmask:{model}",
             "-m", f"pip:{model}", "--budget", "-1", "--json")
    assert r.returncode == 0, r.stderr
    res = {x["method"].split(":")[0]: x for x in json.loads(r.stdout)["results"]}
    assert res["lmask"]["inst_inf_pct"] == 0.0  # R = inf on feasible (hard) instances
    r = _cli("evaluate", "--problem", "tspdl", "--n", "8", "-m", f"lmask:{model}")
    assert r.returncode == 2 and "trained for tsptw" in r.stderr
