import json

import pytest
from typer.testing import CliRunner

from optiforge.platform.cli.main import app
from optiforge.platform.store import Store

SPACE = '{"x": {"type": "float", "low": -5, "high": 10}, "opt": {"type": "categorical", "choices": ["a", "b"]}}'


@pytest.fixture
def db(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("OPTIFORGE_DB", url)
    return url


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_create_ask_tell_show(db, tmp_path):
    space_file = tmp_path / "space.json"
    space_file.write_text(SPACE)
    r = run("study", "create", "--space", f"@{space_file}", "--seed", "3", "--options", '{"n_initial": 2}')
    assert r.exit_code == 0, r.output
    sid = json.loads(r.output)["id"]
    for i in range(4):
        r = run("study", "ask", sid, "--n", "1")
        assert r.exit_code == 0, r.output
        trial = json.loads(r.output)["trials"][0]
        assert set(trial["params"]) == {"x", "opt"} and trial["state"] == "running"
        r = run("study", "tell", sid, str(trial["id"]), "--value", str(float(i)))
        assert r.exit_code == 0 and json.loads(r.output)["state"] == "complete"
    t = json.loads(run("study", "ask", sid).output)["trials"][0]
    assert json.loads(run("study", "tell", sid, str(t["id"]), "--failed").output)["state"] == "failed"
    shown = json.loads(run("study", "show", sid).output)
    assert len(shown["trials"]) == 5 and shown["best"]["value"] == 0.0
    assert shown["study"]["agent_options"] == {"n_initial": 2, "seed": 3}
    # The CLI wrote to the store the environment points at.
    assert len(Store(db).trials(sid)) == 5
    listed = json.loads(run("study", "list").output)
    assert [s["id"] for s in listed] == [sid]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("study", "create", "--space", "{bad json"), "space: not valid JSON"),
        (("study", "create", "--space", "@/nonexistent.json"), "space: no such file"),
        (("study", "create", "--space", '{"x": {"type": "float", "low": 2, "high": 1}}'), "space.x: low"),
        (("study", "create", "--space", SPACE, "--direction", "sideways"), "direction"),
        (("study", "create", "--space", SPACE, "--options", '{"k": 0}'), "agent_options.k"),
        (("study", "ask", "nosuchstudy"), "study_id"),
    ],
)
def test_bad_input_exit_2_one_line(db, args, needle):
    r = run(*args)
    assert r.exit_code == 2, r.output
    assert needle in r.output and "Traceback" not in r.output
    assert len([ln for ln in r.output.splitlines() if ln.strip()]) == 1


def test_tell_errors_exit_2(db):
    sid = json.loads(run("study", "create", "--space", SPACE).output)["id"]
    tid = json.loads(run("study", "ask", sid).output)["trials"][0]["id"]
    for args, needle in [
        (("study", "tell", sid, str(tid)), "--value is required"),
        (("study", "tell", sid, str(tid), "--value", "1", "--failed"), "not both"),
        (("study", "tell", sid, str(tid), "--value", "nan"), "finite"),
        (("study", "tell", sid, "999999", "--value", "1"), "trial_id"),
    ]:
        r = run(*args)
        assert r.exit_code == 2 and needle in r.output, (args, r.output)
    assert run("study", "tell", sid, str(tid), "--value", "1").exit_code == 0
    r = run("study", "tell", sid, str(tid), "--value", "2")
    assert r.exit_code == 2 and "already finished" in r.output


def test_token_create_is_stored_hashed(db):
    r = run("token", "create", "--owner", "alice")
    assert r.exit_code == 0
    token = r.output.strip()
    store = Store(db)
    assert store.owner_for_token(token) == "alice"
    assert run("token", "revoke", token).exit_code == 0
    assert store.owner_for_token(token) is None
    assert run("token", "create").exit_code == 2  # --owner is required


def test_serve_rejects_bad_port(db):
    r = run("serve", "--port", "70000")
    assert r.exit_code == 2 and "port" in r.output


def test_serve_runs_the_real_server(db, tmp_path):
    import os
    import socket
    import subprocess
    import sys
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = run("token", "create", "--owner", "bob").output.strip()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    proc = subprocess.Popen(
        [sys.executable, "-c", "from optiforge.platform.cli.main import main; main()", "serve",
         "--port", str(port), "--log-level", "warning"],
        cwd=root, env={**os.environ, "OPTIFORGE_DB": db, "PYTHONPATH": root},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.post(f"http://127.0.0.1:{port}/v1/studies", json={"space": json.loads(SPACE)},
                               headers={"Authorization": f"Bearer {token}"})
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and proc.poll() is None, "server did not come up"
                time.sleep(0.2)
        assert r.status_code == 201
        assert Store(db).get_study(r.json()["id"]).owner == "bob"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
