"""A campaign knows which process runs it: a killed run reads as interrupted, a live one can't be
claimed twice (on SQLite, and on PostgreSQL when the suite has one)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from store_helpers import make_campaign, subprocess_env

from optiforge.platform.store import Store
from optiforge.platform.store.errors import ConflictError
from optiforge.platform.store.runners import runner_state, this_process

CLAIM_AND_WAIT = """
import sys, time
from optiforge.platform.store import Store
Store(sys.argv[1]).set_campaign_status(sys.argv[2], "running")
print("claimed", flush=True)
time.sleep(120)
"""


def _claiming_child(url: str, cid: str) -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, "-c", CLAIM_AND_WAIT, url, cid], stdout=subprocess.PIPE,
                             text=True, env=subprocess_env())
    assert child.stdout.readline().strip() == "claimed"
    return child


def test_a_live_run_cannot_be_claimed_twice_and_a_killed_one_reads_interrupted(store: Store,
                                                                                storage_url: str) -> None:
    cid = make_campaign(store)
    child = _claiming_child(storage_url, cid)
    try:
        c = store.get_campaign(cid)
        assert c.status == "running" and c.runner.split("/")[2] == str(child.pid)
        with pytest.raises(ConflictError, match=rf"already running \(process {child.pid} on "):
            store.set_campaign_status(cid, "running")
        assert store.get_campaign(cid).runner == c.runner  # the refused claim changed nothing
        os.kill(child.pid, signal.SIGKILL)
        # Not reaped yet (a zombie) and then reaped: both are a dead run.
        deadline = time.monotonic() + 10
        while store.get_campaign(cid).status == "running" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.get_campaign(cid).status == "interrupted"
    finally:
        child.kill()
        child.wait()
    assert store.get_campaign(cid).status == "interrupted"
    assert [c.status for c in store.list_campaigns() if c.id == cid] == ["interrupted"]
    resumed = store.set_campaign_status(cid, "running")  # the resume takes it over
    assert resumed.status == "running" and resumed.runner == this_process()
    ended = store.set_campaign_status(cid, "finished")
    assert ended.runner is None and ended.status == "finished"


def test_the_same_process_may_set_running_again(store: Store) -> None:
    cid = make_campaign(store)
    store.set_campaign_status(cid, "running")
    assert store.set_campaign_status(cid, "running").status == "running"


def test_runner_states() -> None:
    me = this_process()
    host, boot, pid, start = me.rsplit("/", 3)
    assert runner_state(me) == "alive"
    parent = f"{host}/{boot}/{os.getppid()}/1"  # a live pid, but not the process that started then
    assert runner_state(parent) == "gone"
    assert runner_state(f"{host}/another-boot/{pid}/{start}") == "gone"
    assert runner_state(f"not-{socket.gethostname()}/{boot}/{pid}/{start}") == "unknown"
    assert runner_state(None) == "unknown" and runner_state("garbage") == "unknown"


def test_cli_resume_of_a_live_run_exits_2_with_one_line(home) -> None:
    store = Store()  # the CLI's own store, in the test's OPTIFORGE_HOME
    url, cid = store.url, make_campaign(store)
    store.close()
    child = _claiming_child(url, cid)
    try:
        r = subprocess.run([sys.executable, "-m", "optiforge.platform.cli", "campaign", "resume", cid],
                           capture_output=True, text=True, timeout=120, env=subprocess_env())
    finally:
        child.kill()
        child.wait()
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines == [f"error: campaign {cid} is already running (process {child.pid} on "
                     f"{socket.gethostname()}); stop that run before starting another"]
