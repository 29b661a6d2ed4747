"""``optiforge scheduling`` as a user runs it: real processes, tables, JSON, the store, bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "optiforge.platform.cli"]


def _cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def test_evaluate_heuristics_and_a_program_as_json(tmp_path):
    prog = tmp_path / "rule.py"
    prog.write_text("def priority(task, vms):\n    return -(vms[:, 3] + vms[:, 4])\n")  # = HEFT, no tie-break
    r = _cli("scheduling", "evaluate", "--scale", "S", "-g", "1.5", "--instances", "2", "-m", "prolis",
             "-m", "heft", "-m", f"program:{prog}", "--json")
    assert r.returncode == 0, r.stderr
    rows = {x["method"]: x for x in json.loads(r.stdout)["results"]}
    assert rows["prolis"]["cost"] < rows["heft"]["cost"]
    assert rows[f"program:{prog}"]["cost"] == pytest.approx(rows["heft"]["cost"], rel=0.05)
    assert all(x["cost"] == pytest.approx(x["vm_cost"] + x["penalty"]) for x in rows.values())


def test_evaluate_prints_a_table_and_generate_writes_instances(tmp_path):
    r = _cli("scheduling", "evaluate", "--scale", "S", "--instances", "1", "-m", "cheapest")
    assert r.returncode == 0, r.stderr
    assert "cheapest" in r.stdout and "cost $" in r.stdout
    out = tmp_path / "s.json"
    r = _cli("scheduling", "generate", "--scale", "M", "--gamma", "2.0", "--instances", "3", "--out", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert len(doc["instances"]) == 3 and len(doc["instances"][0]["workflows"]) == 30
    assert {w.split("_")[1] for w in doc["instances"][0]["workflows"]} <= {"50", "60"}


def test_train_checkpoints_in_the_store_then_evaluate_the_model(home, tmp_path):
    model = tmp_path / "g.pt"
    r = _cli("scheduling", "train", "--method", "gates", "--generations", "0", "2", "--population", "4",
             "--workflows", "1", "--workers", "1", "--out", str(model))
    assert r.returncode == 0, r.stderr
    cid = json.loads(r.stdout)["campaign"]
    from optiforge.platform.store import Store

    store = Store()
    assert [a.name for a in store.artifacts(cid, "checkpoint")] == ["s00-g000001.ckpt", "s00-g000002.ckpt"]
    assert store.get_campaign(cid).status == "finished"
    r = _cli("scheduling", "train", "--resume", cid, "--out", str(model))  # nothing left: same model
    assert r.returncode == 0, r.stderr
    # A training run shares the store with discovery campaigns: listing and showing it work,
    # and `campaign resume` points to the command that resumes it.
    r = _cli("campaign", "list", "--json")
    assert r.returncode == 0, r.stderr
    assert [(c["id"], c["status"]) for c in json.loads(r.stdout)] == [(cid, "finished")]
    r = _cli("campaign", "show", cid, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["checkpoints"] == ["s00-g000001.ckpt", "s00-g000002.ckpt"]
    store.set_campaign_status(cid, "interrupted")
    r = _cli("campaign", "resume", cid)
    assert r.returncode == 2 and r.stderr.strip() == (
        f"error: campaign {cid} is a training run: resume it with `optiforge scheduling train --resume {cid}`")
    r = _cli("scheduling", "evaluate", "--instances", "1", "-m", f"deft:{model}", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["results"][0]["cost"] > 0


@pytest.mark.parametrize("args, word", [
    (["evaluate", "--scale", "XL"], "scale"),
    (["evaluate", "-g", "0"], "gamma"),
    (["evaluate", "-m", "magic"], "method"),
    (["evaluate", "-m", "deft:/nonexistent.pt"], "model"),
    (["evaluate", "-m", "program:/nonexistent.py"], "method"),
    (["evaluate", "--penalty", "huge"], "penalty"),
    (["generate", "--instances", "0"], "instances"),
    (["train", "--method", "ppo"], "method"),
    (["train", "--executor", "slurm"], "executor"),
    (["train", "--population", "3"], "population"),
])
def test_bad_input_is_one_line_and_exit_2(home, args, word):
    # In process (the same command objects; a subprocess per case would import torch ten times).
    from typer.testing import CliRunner

    from optiforge.platform.cli.main import app

    r = CliRunner().invoke(app, ["scheduling", *args])
    assert r.exit_code == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and word in lines[0], r.stderr


def test_an_unwritable_out_path_is_refused_before_training(home, tmp_path):
    from typer.testing import CliRunner

    from optiforge.platform.cli.main import app
    from optiforge.platform.store import Store

    (tmp_path / "a-file").write_text("x")
    for out, words in ((tmp_path, "is a folder"), (tmp_path / "a-file" / "g.pt", "is a file, not a folder")):
        r = CliRunner().invoke(app, ["scheduling", "train", "--generations", "0", "1", "--out", str(out)])
        assert r.exit_code == 2, (r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: out: ") and words in lines[0], r.stderr
    assert Store().list_campaigns() == []  # refused before a campaign was stored


def test_resume_of_an_unknown_or_foreign_campaign_is_one_line_and_exit_2(home, tmp_path):
    from typer.testing import CliRunner

    from optiforge.platform.cli.main import app
    from optiforge.platform.cli.routing import TRAIN_AGENT, TRAIN_DEFAULTS
    from optiforge.platform.store import Store

    routing = Store().create_campaign(task="tsptw", agent=TRAIN_AGENT, llm="none", budget=1, seed=0,
                                      executor="local", config={**TRAIN_DEFAULTS, "problem": "tsptw"})
    for cid, word in (("0123456789ab", "0123456789ab"), (routing, "not a scheduling training run")):
        r = CliRunner().invoke(app, ["scheduling", "train", "--resume", cid, "--out", str(tmp_path / "g.pt")])
        assert r.exit_code == 2, (r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and word in lines[0], r.stderr
    assert not (tmp_path / "g.pt").exists()


@pytest.mark.slow
def test_an_evolution_campaign_on_workflow_runs_end_to_end(home, tmp_path):
    replay = tmp_path / "r.jsonl"
    programs = [
        "def priority(task, vms):\n    meets = vms[:, 5] >= 0\n"
        f"    return np.where(meets, -vms[:, 6] - {k} * vms[:, 3] / 3600, -vms[:, 3] - vms[:, 4])\n"
        for k in (0.01, 0.1)]
    replay.write_text("".join(json.dumps({"text": f"{{idea}}\n```python\n{p}```"}) + "\n" for p in programs))
    r = _cli("campaign", "run", "--task", "workflow", "--budget", "2", "--llm", f"replay:{replay}",
             "--workers", "1", timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    from optiforge.platform.store import Store

    store = Store()
    [campaign] = store.list_campaigns()
    cands = store.candidates(campaign.id)
    assert {c.operator for c in cands} >= {"seed"} and any(c.operator != "seed" for c in cands)
    assert all(c.score is None or c.score > 0 for c in cands)
    assert any(c.valid and c.operator != "seed" for c in cands)
