"""The campaign CLI as a user runs it: real processes, kill -9 and resume, exports."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from optiforge.blackbox import get_blackbox_task
from optiforge.platform.campaigns import campaign_summary
from optiforge.platform.campaigns.runner import DEFAULT_LLM
from optiforge.platform.campaigns.summary import NOT_LLM_WRITTEN
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
        (["campaign", "run", "--task", "binpacking", "--budget", "2", "--lora", "dora"], "lora"),
        (["campaign", "run", "--task", "binpacking", "--budget", "2", "--rl", "none", "--lora", "bilora"], "lora"),
        (["campaign", "run", "--task", "binpacking", "--budget", "2", "--timeout", "0"], "timeout"),
        (["campaign", "resume", "doesnotexist", "--timeout", "-5"], "timeout"),
        (["campaign", "show", "doesnotexist"], "doesnotexist"),
        (["campaign", "run", "--task", "levy-10@shiftx", "--agent", "hollm", "--budget", "3"], "@shift"),
        (["tasks", "show", "levy-10@shift-1"], "instance number"),
        (["tasks", "show", "ackley-1"], "dimension of 'ackley-1' must be between 2 and 1000"),
        (["evaluate", "--task", "binpacking", "--program", "/no/such/file.py"], "program"),
        (["evaluate", "--task", "binpacking", "--program", __file__, "--split", "xx"], "split"),
    ],
)
def test_bad_input_exits_2_with_one_line(home, args, word):
    r = _cli(*args)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and word in lines[0]


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


def _start(args: list[str], log: Path) -> subprocess.Popen:
    """Start ``optiforge <args>`` in its own session (as a terminal would), output to ``log``.

    Never a pipe nobody reads: a full pipe would block the campaign's progress output.
    """
    with open(log, "w") as out:
        return subprocess.Popen([*CLI, *args], stdout=out, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)


def _only_campaign(store: Store) -> str | None:
    campaigns = store.list_campaigns()
    return campaigns[0].id if campaigns else None


# The replayed programs score as best fit does, so the pool never keeps one to tune and every
# tune round would be a graft round (~100 sandboxed runs); these tests are about the store.
NO_GRAFT = ("--options", '{"graft_terms": 0}')


def _unique_replay(tmp_path: Path, n: int) -> Path:
    # Every response a distinct program, so every round really runs the sandbox and the
    # campaign is still going when it is stopped (duplicates would make rounds near-instant).
    replay = tmp_path / "unique.jsonl"
    replay.write_text("".join(
        json.dumps({"text": "{The idea of the algorithm is to penalise slack.}\n```python\n"
                            f"def priority(item, bins):\n    return -(bins - item) - {k / 1000} * bins\n```"})
        + "\n" for k in range(n)))
    return replay


def test_kill_9_and_resume_loses_nothing(home, tmp_path, wait_for):
    budget = 120
    replay = _unique_replay(tmp_path, budget)
    proc = _start(["campaign", "run", "--task", "binpacking", "--budget", str(budget),
                   "--llm", f"replay:{replay}", "--workers", "1", *NO_GRAFT], tmp_path / "run.log")
    store = Store()
    cid = wait_for(lambda: (c := _only_campaign(store)) and store.rounds_done(c) >= 3 and c,
                   "3 committed rounds")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {(c.id, c.hash, c.score, c.valid) for c in store.candidates(cid)}
    rounds_before = store.rounds_done(cid)
    generated_before = sum(c.operator not in NOT_LLM_WRITTEN for c in store.candidates(cid))
    assert generated_before < budget, "the campaign finished before it could be killed"
    # It died without a chance to say so; the store sees its process is gone.
    assert store.get_campaign(cid).status == "interrupted"

    r = _cli("campaign", "resume", cid)
    assert r.returncode == 0, r.stdout + r.stderr
    after = {(c.id, c.hash, c.score, c.valid) for c in store.candidates(cid)}
    assert before <= after  # every evaluation stored before the kill survived, unchanged
    generated = [c for c in store.candidates(cid) if c.operator not in NOT_LLM_WRITTEN]
    assert budget <= len(generated) < budget + 4  # continued to the budget, not restarted
    assert store.rounds_done(cid) > rounds_before
    assert store.get_campaign(cid).status == "finished"
    assert cid in r.stdout

    shown = json.loads(_cli("campaign", "show", cid, "--json").stdout)
    assert shown["llm_written"] == len(generated) and shown["best"][0]["test_score"] is not None
    out = tmp_path / "export"
    r = _cli("campaign", "export", cid, "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "best_1.py").read_text().count("def priority") == 1
    rows = json.loads((out / "evaluations.json").read_text())
    assert len(rows) == len(store.candidates(cid))
    assert (out / "evaluations.csv").read_text().splitlines()[0].startswith("round,operator")
    listed = json.loads(_cli("campaign", "list", "--json").stdout)
    assert [c["id"] for c in listed] == [cid]


def _summary(cid: str) -> dict:
    """``campaign show --json``, as the user reads it."""
    r = _cli("campaign", "show", cid, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _evaluations(store: Store) -> int:
    # The same summary `campaign show --json` prints, read in process: polling through the CLI
    # costs seconds per call, long enough for a short campaign to finish unobserved.
    cid = _only_campaign(store)
    return 0 if cid is None else campaign_summary(store, cid)["evaluations"]


def test_hollm_campaign_killed_and_resumed_spends_its_budget_exactly(home, tmp_path, wait_for):
    budget = 40
    proc = _start(["campaign", "run", "--task", "ackley-5", "--agent", "hollm", "--budget",
                   str(budget), "--seed", "3"], tmp_path / "run.log")
    store = Store()
    wait_for(lambda: _evaluations(store) >= 10, "10 evaluations")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    cid = _only_campaign(store)
    killed = _summary(cid)
    assert killed["status"] == "interrupted" and 10 <= killed["evaluations"] < budget, killed
    study = killed["study_id"]
    before = [(t.number, t.params, t.value) for t in store.trials(study, ["complete"])]

    r = _cli("campaign", "resume", cid)
    assert r.returncode == 0, r.stdout + r.stderr
    done = _summary(cid)
    assert done["status"] == "finished" and done["evaluations"] == budget
    assert done["running"] == 0 and done["failed"] == 0
    out = tmp_path / "export"
    assert _cli("campaign", "export", cid, "--out", str(out)).returncode == 0
    rows = json.loads((out / "evaluations.json").read_text())
    # Exactly the budget: no evaluation lost, none run twice, every value the true objective.
    assert [row["id"] for row in rows] == list(range(budget))
    assert all(row["state"] == "complete" for row in rows)
    assert len({json.dumps(row["params"], sort_keys=True) for row in rows}) == budget
    task = get_blackbox_task("ackley-5")
    assert all(row["value"] == pytest.approx(task(row["params"])) for row in rows)
    after = {row["id"]: (row["params"], row["value"]) for row in rows}
    assert all(after[n] == (params, value) for n, params, value in before)  # kept unchanged
    assert done["best"][0]["value"] == min(row["value"] for row in rows)


def test_ctrl_c_marks_the_campaign_interrupted_and_says_how_to_resume(home, tmp_path, wait_for):
    budget = 120
    replay = _unique_replay(tmp_path, budget)
    log = tmp_path / "run.log"
    proc = _start(["campaign", "run", "--task", "binpacking", "--budget", str(budget),
                   "--llm", f"replay:{replay}", "--workers", "1", *NO_GRAFT], log)
    store = Store()
    cid = wait_for(lambda: (c := _only_campaign(store)) and store.rounds_done(c) >= 2 and c,
                   "2 committed rounds")
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the terminal's whole process group
    assert proc.wait(timeout=120) == 130
    text = log.read_text()
    assert f"interrupted; resume with: optiforge campaign resume {cid}" in text
    assert "Traceback" not in text
    shown = _summary(cid)
    assert shown["status"] == "interrupted" and shown["llm_written"] < budget
    r = _cli("campaign", "resume", cid)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _summary(cid)["status"] == "finished"


def test_timeout_reports_the_best_so_far_and_how_to_resume(home, replay_file):
    r = _cli("campaign", "run", "--task", "binpacking", "--budget", "8", "--llm",
             f"replay:{replay_file}", "--timeout", "0.001")
    assert r.returncode == 0, r.stdout + r.stderr
    cid = _only_campaign(Store())
    assert "time limit (0.001 s) reached before the budget was spent" in r.stdout
    assert f"resume with: optiforge campaign resume {cid}" in r.stdout
    assert "no discovery" in r.stdout  # the seeds are the best so far, and said to be
    assert re.search(r"\b0:00 left\b", r.stdout)  # the progress bar's clock, run down
    text = " ".join(r.stdout.split())
    assert "test split by dataset" in text and "weibull_5k" in text and "or4" in text
    assert _summary(cid)["status"] == "interrupted"


def test_tasks_lists_heuristic_and_blackbox_tasks(home):
    r = _cli("tasks", "--json")
    assert r.returncode == 0, r.stderr
    rows = {row["name"]: row for row in json.loads(r.stdout)}
    assert rows["binpacking"]["kind"] == "heuristic" and rows["binpacking"]["entry_point"] == "priority"
    assert rows["binpacking"]["baseline"] == "best_fit"
    assert rows["tsp"]["kind"] == "heuristic"
    assert {"ackley-20", "branin"} <= {n for n, row in rows.items() if row["kind"] == "blackbox"}
    table = _cli("tasks", env={**os.environ, "COLUMNS": "100"})
    assert table.returncode == 0 and all(name in table.stdout for name in ("binpacking", "tsp", "ackley-20"))
    # One line per task at 100 columns: the long description is `tasks show`'s, not the table's.
    lines = table.stdout.splitlines()
    assert max(len(ln) for ln in lines) <= 100
    assert len([ln for ln in lines if "binpacking" in ln]) == 1
    assert len(lines) < len(rows) + 10


def test_tasks_show_prints_the_full_description(home):
    from optiforge.heuristics import get_task

    r = _cli("tasks", "show", "binpacking", env={**os.environ, "COLUMNS": "100"})
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert " ".join(get_task("binpacking").description.split()) in text
    assert "best_fit" in text and "def priority" in text
    assert "graft features" in text and "bins - item: 10" in text
    tsp = json.loads(_cli("tasks", "show", "tsp", "--json").stdout)
    assert tsp["graft_features"] == dict(get_task("tsp").features)
    assert json.loads(_cli("tasks", "show", "matching", "--json").stdout)["graft_features"] is None
    shown = json.loads(_cli("tasks", "show", "ackley-5", "--json").stdout)
    assert shown["kind"] == "blackbox" and shown["dimension"] == 5
    moved = json.loads(_cli("tasks", "show", "levy-10@shift3", "--json").stdout)
    assert moved["name"] == "levy-10@shift3" and moved["optimum"] == 0.0 and "moved" in moved["description"]
    bad = _cli("tasks", "show", "nope")
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "nope" in bad.stderr


def test_hollm_options_are_applied(home, tmp_path):
    options = {"proposer": "sobol", "predictor": "random", "b": 3}
    r = _cli("campaign", "run", "--task", "branin", "--agent", "hollm", "--budget", "7",
             "--options", json.dumps(options))
    assert r.returncode == 0, r.stdout + r.stderr
    cid = _only_campaign(Store())
    shown = _summary(cid)
    assert shown["config"]["agent_options"] == options and shown["evaluations"] == 7
    assert f"campaign id: {cid}  (7 evaluations)" in r.stdout  # a study counts evaluations
    study = _cli("study", "show", shown["study_id"])  # JSON output
    assert study.returncode == 0, study.stderr
    assert {k: json.loads(study.stdout)["study"]["agent_options"][k] for k in options} == options
    bad = _cli("campaign", "run", "--task", "branin", "--agent", "hollm", "--budget", "3",
               "--options", '{"proposer": "nope"}')
    assert bad.returncode == 2 and "proposer" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_make_run_command_line(home):
    """`make run`'s exact arguments (RUN_ARGS in the Makefile), with `--budget 4` and the
    0.5B coder model appended (the last value of an option wins): one round of the default
    campaign instead of twelve, on the test suite's model, for time."""
    makefile = (Path(__file__).resolve().parents[3] / "Makefile").read_text()
    run_args = next(ln.split("?=", 1)[1].split() for ln in makefile.splitlines()
                    if ln.startswith("RUN_ARGS"))
    assert "--budget" in run_args
    assert run_args[run_args.index("--llm") + 1] == DEFAULT_LLM  # make run uses the default writer
    r = _cli("campaign", "run", *run_args, "--budget", "4", "--llm", "llamacpp:qwen-coder-0.5b", timeout=1200)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cid = _only_campaign(Store())
    shown = _summary(cid)
    assert shown["status"] == "finished" and shown["llm_written"] == 4
    assert shown["llm"] == "llamacpp:qwen-coder-0.5b" and shown["config"]["rl"] == "none"
    assert shown["best"] and shown["best"][0]["test_score"] is not None
    text = " ".join(r.stdout.split())  # rich wraps the report at the terminal's width
    assert f"campaign id: {cid}" in text and "gap vs baseline" in text
    # a plain verdict, and the seed is never presented as a discovery
    assert "discovery" in text
    if shown["best"][0]["operator"] == "seed":
        assert "no discovery" in text
