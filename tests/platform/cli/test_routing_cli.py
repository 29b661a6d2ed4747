"""``optiforge routing generate | evaluate`` as a user runs it: real processes, JSON, bad input."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

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


TINY_TRAIN = ("--n", "8", "--steps", "1", "--batch-size", "2", "--samples", "2", "--embed-dim", "8",
              "--layers", "1", "--heads", "2", "--ff-dim", "8")


def _campaign_id(stderr: str) -> str:
    """The id from the one line that tells the user how to resume."""
    match = re.search(r"training campaign (\w+) .*; resume with --resume (\w+)", stderr)
    assert match and match[1] == match[2], stderr
    return match[1]


def test_train_then_evaluate_the_model(home, tmp_path):
    model = tmp_path / "m.pt"
    r = _cli("train", "--problem", "tsptw", "--epochs", "1", *TINY_TRAIN, "--out", str(model))
    assert r.returncode == 0, r.stderr
    cid = _campaign_id(r.stderr)
    assert model.is_file() and f"1 epochs (campaign {cid})" in r.stdout
    from optiforge.platform.store import Store

    store = Store()
    assert [a.name for a in store.artifacts(cid, "checkpoint")] == ["epoch-000001.ckpt"]
    campaign = store.get_campaign(cid)
    assert campaign.status == "finished" and campaign.task == "tsptw" and campaign.config["n"] == 8
    r = _cli("evaluate", "--problem", "tsptw", "--n", "8", "--instances", "2", "-m", f"lmask:{model}",
             "-m", f"pip:{model}", "--budget", "-1", "--json")
    assert r.returncode == 0, r.stderr
    res = {x["method"].split(":")[0]: x for x in json.loads(r.stdout)["results"]}
    assert res["lmask"]["inst_inf_pct"] == 0.0  # R = inf on feasible (hard) instances
    r = _cli("evaluate", "--problem", "tspdl", "--n", "8", "-m", f"lmask:{model}")
    assert r.returncode == 2 and "trained for tsptw" in r.stderr


def test_resume_continues_from_the_stored_checkpoint(home, tmp_path):
    import torch

    from optiforge.platform.store import Store

    model = tmp_path / "m.pt"
    r = _cli("train", "--problem", "tspdl", "--hardness", "medium", "--epochs", "1", *TINY_TRAIN,
             "--out", str(model))
    assert r.returncode == 0, r.stderr
    cid = _campaign_id(r.stderr)
    store = Store()
    (first,) = store.artifacts(cid, "checkpoint")
    # Mark the stored state: only a run that resumed from it (not one that restarted) keeps the mark.
    state = torch.load(first.path, weights_only=True)
    assert state["epoch"] == 1 and len(state["history"]) == 1
    state["history"][0]["loss"] = 12345.0
    torch.save(state, first.path)
    r = _cli("train", "--resume", cid, "--epochs", "3", "--out", str(model))
    assert r.returncode == 0, r.stderr
    assert _campaign_id(r.stderr) == cid and f"3 epochs (campaign {cid})" in r.stdout
    assert [a.name for a in store.artifacts(cid, "checkpoint")] == [
        "epoch-000001.ckpt", "epoch-000002.ckpt", "epoch-000003.ckpt"]
    final = torch.load(model, weights_only=True)
    assert final["epoch"] == 3 and len(final["history"]) == 3
    assert final["history"][0]["loss"] == 12345.0  # epoch 1 came from the store, epochs 2-3 ran
    assert final["config"]["problem"] == "tspdl" and final["train_config"]["hardness"] == "medium"
    assert store.get_campaign(cid).status == "finished"
    # A run stopped while extending to 4 epochs aims at 4 again when resumed without --epochs.
    last = store.artifacts(cid, "checkpoint")[-1]
    state = torch.load(last.path, weights_only=True)
    state["train_config"]["epochs"] = 4
    torch.save(state, last.path)
    r = _cli("train", "--resume", cid, "--out", str(model))
    assert r.returncode == 0, r.stderr
    assert f"4 epochs (campaign {cid})" in r.stdout and len(store.artifacts(cid, "checkpoint")) == 4


def test_an_interrupted_run_is_marked_and_resumes(home, tmp_path):
    from optiforge.platform.store import Store

    model = tmp_path / "m.pt"
    store = Store()  # the store exists before the run opens it: this process polls it meanwhile
    env = {**os.environ, "COLUMNS": "160"}
    proc = subprocess.Popen([*CLI, "train", "--problem", "tsptw", "--epochs", "1000", *TINY_TRAIN,
                             "--out", str(model)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        deadline = time.monotonic() + 120
        cid = None
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            campaigns = store.list_campaigns()
            if campaigns and store.artifacts(campaigns[0].id, "checkpoint"):
                cid = campaigns[0].id
                break
        assert cid is not None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode != 0 and not model.exists()  # the model is written only when training ends
    assert store.get_campaign(cid).status == "interrupted"
    done = len(store.artifacts(cid, "checkpoint"))
    assert 1 <= done < 1000
    r = _cli("train", "--resume", cid, "--epochs", str(done + 1), "--out", str(model))
    assert r.returncode == 0, r.stderr
    assert f"{done + 1} epochs" in r.stdout  # one more epoch, not a restart
    assert len(store.artifacts(cid, "checkpoint")) == done + 1
    assert store.get_campaign(cid).status == "finished"


def _invoke(*args: str):
    # In process (the same command objects; a subprocess per case would import torch each time).
    from typer.testing import CliRunner

    from optiforge.platform.cli.main import app

    return CliRunner().invoke(app, ["routing", *args])


def test_bad_resume_is_one_line_and_exit_2(home, tmp_path):
    from optiforge.platform.cli.routing import TRAIN_AGENT, TRAIN_DEFAULTS
    from optiforge.platform.store import Store

    store = Store()
    other = store.create_campaign(task="workflow", agent="deft-es", llm="none", budget=1, seed=0,
                                  executor="local", config={"method": "gates"})
    routing = store.create_campaign(task="tsptw", agent=TRAIN_AGENT, llm="none", budget=1, seed=0,
                                    executor="local", config={**TRAIN_DEFAULTS, "problem": "tsptw"})
    out = str(tmp_path / "m.pt")
    cases = [
        (["--resume", "0123456789ab"], "0123456789ab"),
        (["--resume", other], "not a routing training run"),
        (["--resume", routing, "--problem", "tspdl"], "--problem 'tspdl' differs"),
        (["--resume", routing, "--n", "50"], "--n 50 differs"),
        (["--resume", routing, "--no-rie"], "--no-rie differs"),
        ([], "problem: give --problem"),
        (["--problem", "tsptw", "--heads", "3"], "heads"),
    ]
    for args, word in cases:
        r = _invoke("train", *args, "--out", out)
        assert r.exit_code == 2, (args, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and word in lines[0], (args, r.stderr)
    assert not (tmp_path / "m.pt").exists()
    assert [a for c in (other, routing) for a in store.artifacts(c)] == []  # nothing trained
    assert len(store.list_campaigns()) == 2  # a rejected new run opens no campaign
