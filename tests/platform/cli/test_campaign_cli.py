"""The campaign CLI as a user runs it: real processes, kill -9 and resume, exports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from optiforge.platform.store import Store

CLI = [sys.executable, "-m", "optiforge.platform.cli"]


def _cli(*args: str, env=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.mark.parametrize(
    "args, word",
    [
        (["campaign", "run", "--task", "nope", "--budget", "3"], "task"),
        (["campaign", "run", "--task", "binpacking", "--budget", "0"], "budget"),
        (["campaign", "run", "--task", "binpacking", "--budget", "2", "--llm", "bogus"], "llm"),
        (["campaign", "run", "--task", "binpacking", "--budget", "2", "--executor", "x"], "executor"),
        (["campaign", "show", "doesnotexist"], "doesnotexist"),
        (["evaluate", "--task", "binpacking", "--program", "/no/such/file.py"], "program"),
        (["evaluate", "--task", "binpacking", "--program", __file__, "--split", "xx"], "split"),
    ],
)
def test_bad_input_exits_2_with_one_line(home, args, word):
    r = _cli(*args)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and word in lines[0]


def test_evaluate_json(home, tmp_path):
    prog = tmp_path / "bf.py"
    prog.write_text("def priority(item, bins):\n    return -(bins - item)\n")
    r = _cli("evaluate", "--task", "binpacking", "--program", str(prog), "--split", "train", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["valid"] is True and 0 < out["score"] < 10
    assert set(out) >= {"valid", "score", "metrics", "error", "runtime_s"}
    bad = tmp_path / "bad.py"
    bad.write_text("def priority(item, bins):\n    import os\n    os._exit(0)\n")
    r = _cli("evaluate", "--task", "binpacking", "--program", str(bad), "--split", "train", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["valid"] is False


def test_kill_9_and_resume_loses_nothing(home, tmp_path):
    # Every response a distinct program, so every round really runs the sandbox and the
    # campaign is still going when it is killed (duplicates would make rounds near-instant).
    budget = 120
    replay = tmp_path / "unique.jsonl"
    replay.write_text("".join(
        json.dumps({"text": "{The idea of the algorithm is to penalise slack.}\n```python\n"
                            f"def priority(item, bins):\n    return -(bins - item) - {k / 1000} * bins\n```"})
        + "\n" for k in range(budget)))
    proc = subprocess.Popen(
        [*CLI, "campaign", "run", "--task", "binpacking", "--budget", str(budget),
         "--llm", f"replay:{replay}", "--workers", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    store = Store()
    deadline = time.time() + 240
    cid = None
    while time.time() < deadline:
        campaigns = store.list_campaigns()
        if campaigns and store.rounds_done(campaigns[0].id) >= 3:
            cid = campaigns[0].id
            break
        time.sleep(0.05)
    assert cid is not None, "campaign made no progress"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {(c.id, c.hash, c.score, c.valid) for c in store.candidates(cid)}
    rounds_before = store.rounds_done(cid)
    generated_before = sum(c.operator != "seed" for c in store.candidates(cid))
    assert generated_before < budget, "the campaign finished before it could be killed"
    assert store.get_campaign(cid).status == "running"  # died without a chance to say so

    r = _cli("campaign", "resume", cid)
    assert r.returncode == 0, r.stdout + r.stderr
    after = {(c.id, c.hash, c.score, c.valid) for c in store.candidates(cid)}
    assert before <= after  # every evaluation stored before the kill survived, unchanged
    generated = [c for c in store.candidates(cid) if c.operator != "seed"]
    assert budget <= len(generated) < budget + 4  # continued to the budget, not restarted
    assert store.rounds_done(cid) > rounds_before
    assert store.get_campaign(cid).status == "finished"
    assert cid in r.stdout

    shown = json.loads(_cli("campaign", "show", cid, "--json").stdout)
    assert shown["generated"] == len(generated) and shown["best"][0]["test_score"] is not None
    out = tmp_path / "export"
    r = _cli("campaign", "export", cid, "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "best_1.py").read_text().count("def priority") == 1
    rows = json.loads((out / "evaluations.json").read_text())
    assert len(rows) == len(store.candidates(cid))
    assert (out / "evaluations.csv").read_text().splitlines()[0].startswith("round,operator")
    listed = json.loads(_cli("campaign", "list", "--json").stdout)
    assert [c["id"] for c in listed] == [cid]
