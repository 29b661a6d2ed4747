"""A manifold study driven over HTTP: a real uvicorn server, the zo-riemannian agent, a restart."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import httpx
import numpy as np
import pytest
import uvicorn

from optiforge import Client
from optiforge.blackbox import Space
from optiforge.platform.api import create_app
from optiforge.platform.store import Store

SPACE = {"w": {"type": "simplex", "dim": 3}, "u": {"type": "sphere", "dim": 3},
         "S": {"type": "spd", "n": 2}}
Q = np.array([0.6, 0.3, 0.1])


def objective(p):
    return float(np.sum((np.array(p["w"]) - Q) ** 2) + np.array(p["u"]) @ np.diag([2.0, 1.0, 0.5]) @ p["u"]
                 + np.sum((np.array(p["S"]) - np.eye(2)) ** 2))


@contextlib.contextmanager
def serving(store):
    """The real service on a free port, in a thread of this process; stopped on exit."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(create_app(store), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not srv.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def store(storage_url):
    """SQLite, and PostgreSQL when configured: replay matches points after a JSONB round trip."""
    return Store(storage_url)


def test_manifold_study_over_http_survives_a_server_restart(store):
    token = store.create_token("alice")
    with serving(store) as url, Client(url, token) as client:
        study = client.create_study(SPACE, agent="zo-riemannian", seed=2,
                                    agent_options={"eta": 0.3, "mu": 0.05, "schedule": "constant"})
        for _ in range(40):
            for t in study.ask(2):
                study.tell(t.id, objective(t.params))
        sid = study.id
    # A new server: a fresh agent, fed the stored trials.
    with serving(store) as url, Client(url, token) as client:
        study = client.get_study(sid)
        for _ in range(40):
            for t in study.ask(2):
                study.tell(t.id, objective(t.params))
        trials = study.trials
    space = Space(SPACE)
    assert len(trials) == 160 and all(space.validate(t.params) for t in trials)
    values = [t.value for t in trials]
    assert np.mean(values[-10:]) < np.mean(values[:10])


@pytest.mark.parametrize(("body", "needle"), [
    ({"space": {"w": {"type": "simplex", "dim": 1}}, "agent": "zo-riemannian"}, "space.w.simplex.dim"),
    ({"space": {"S": {"type": "spd", "n": 31}}, "agent": "zo-riemannian"}, "space.S.spd.n"),
    ({"space": {"u": {"type": "sphere", "dim": 1001}}, "agent": "zo-riemannian"}, "space.u.sphere.dim"),
    ({"space": {"S": {"type": "spd", "n": 2, "scale": 0}}, "agent": "zo-riemannian"}, "space.S.spd.scale"),
    ({"space": {"w": {"type": "simplex"}}, "agent": "zo-riemannian"}, "space.w.simplex.dim"),
    ({"space": {"w": {"type": "simplex", "dim": 3, "low": 0}}, "agent": "zo-riemannian"}, "space.w.simplex.low"),
    ({"space": {"w": {"type": "simplex", "dim": 3}}, "agent": "hollm"},
     "space.w: the hollm agent searches box parameters"),
    ({"space": {"n": {"type": "int", "low": 0, "high": 3}}, "agent": "zo-riemannian"}, "space.n:"),
    ({"space": SPACE, "agent": "zo-riemannian", "agent_options": {"budget": 10**9}}, "agent_options.budget"),
])
def test_bad_manifold_studies_are_4xx_json_naming_the_field(store, body, needle):
    token = store.create_token("bob")
    with serving(store) as url:
        r = httpx.post(f"{url}/v1/studies", json=body, headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 422, r.text
    assert r.json()["error"] == "invalid" and needle in r.json()["message"], r.json()
