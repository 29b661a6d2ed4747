"""End-to-end tests of the HTTP service: a real uvicorn server on a free loopback port."""

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import uvicorn

from optiforge import Client
from optiforge.blackbox import get_blackbox_task
from optiforge.platform.api import create_app
from optiforge.platform.client import (
    APIError,
    AuthenticationError,
    RemoteConflictError,
    RemoteNotFoundError,
)
from optiforge.platform.service.config import ServiceConfig, ServiceLimits
from optiforge.platform.store import ConflictError, NotFoundError, Store

SPACE = {"x": {"type": "float", "low": -5, "high": 10, "log": False},
         "n": {"type": "int", "low": 1, "high": 8},
         "opt": {"type": "categorical", "choices": ["adam", "sgd"]}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(module_storage_url):
    """The real service in this process (a thread), on SQLite and on PostgreSQL."""
    store = Store(module_storage_url)
    port = _free_port()
    # Eight workers of one owner ask at once in the slow test: the operator allows it.
    limits = ServiceLimits(max_asks_per_owner=8, max_concurrent_asks=8)
    config = uvicorn.Config(create_app(store, ServiceConfig(limits)), host="127.0.0.1", port=port,
                            log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.05)
    yield {"url": f"http://127.0.0.1:{port}", "store": store,
           "alice": store.create_token("alice"), "bob": store.create_token("bob")}
    srv.should_exit = True
    thread.join(timeout=10)


def test_client_end_to_end(server):
    task = get_blackbox_task("branin")
    with Client(server["url"], server["alice"]) as client:
        study = client.create_study(task.space.to_dict(), agent_options={"budget": 24}, seed=0)
        assert study.direction == "minimize" and study.space == task.space.to_dict()
        for _ in range(6):
            for t in study.ask(4):
                assert t.state == "running"
                study.tell(t.id, task(t.params))
        trials = study.trials
        assert len(trials) == 24 and all(t.state == "complete" for t in trials)
        best = study.best_trial
        assert best.value == min(t.value for t in trials) and best.value < 3.0
        failed = study.ask()[0]
        assert study.tell(failed.id, state="failed").state == "failed"
        ext = study.add_trial({"x1": 3.14159, "x2": 2.275}, 0.3979)
        assert study.best_trial.id == ext.id
        assert [t.id for t in study.get_trials(["failed"])] == [failed.id]
        assert study.id in [s["id"] for s in client.list_studies()]
        assert client.get_study(study.id).space == study.space
        # What the server stored is what the client saw.
        stored = server["store"].trials(study.id)
        assert [t.number for t in stored] == [t.id for t in study.trials]


def test_auth_and_ownership(server):
    url = server["url"]
    r = httpx.post(f"{url}/v1/studies", json={"space": SPACE})
    assert r.status_code == 401 and r.json()["error"] == "unauthorized"
    r = httpx.get(f"{url}/v1/studies", headers={"Authorization": "Bearer oft_wrong"})
    assert r.status_code == 401 and "unknown" in r.json()["message"]
    r = httpx.get(f"{url}/v1/studies", headers={"Authorization": "Basic abc"})
    assert r.status_code == 401
    with pytest.raises(AuthenticationError):
        Client(url, "oft_nope").list_studies()
    alice, bob = Client(url, server["alice"]), Client(url, server["bob"])
    s = alice.create_study(SPACE)
    t = s.ask()[0]
    with pytest.raises(RemoteNotFoundError) as info:
        bob.get_study(s.id)
    assert info.value.status_code == 404 and isinstance(info.value, NotFoundError)
    bob_view = type(s)(bob, {"id": s.id, "space": SPACE, "direction": "minimize", "agent": "hollm"})
    for call in (lambda: bob_view.ask(), lambda: bob_view.tell(t.id, 1.0), lambda: bob_view.trials,
                 lambda: bob_view.best_trial):
        with pytest.raises(RemoteNotFoundError):
            call()
    assert s.id not in [x["id"] for x in bob.list_studies()]
    assert httpx.get(f"{url}/v1/health").json() == {"status": "ok"}


def test_bad_inputs_are_4xx_json_and_server_keeps_serving(server):
    url, h = server["url"], {"Authorization": f"Bearer {server['alice']}"}
    sid = httpx.post(f"{url}/v1/studies", json={"space": SPACE}, headers=h).json()["id"]
    tid = httpx.post(f"{url}/v1/studies/{sid}/ask", json={"n": 1}, headers=h).json()["trials"][0]["id"]
    bad = [
        ("POST", "/v1/studies", {"space": {"x": {"type": "float", "low": 1, "high": 0}}}, 422, "space.x: low"),
        ("POST", "/v1/studies", {"space": {}}, 422, "space"),
        ("POST", "/v1/studies", {"space": "x"}, 422, "space"),
        ("POST", "/v1/studies", {"space": SPACE, "direction": "up"}, 422, "direction"),
        ("POST", "/v1/studies", {"space": SPACE, "agent": "tpe"}, 422, "agent"),
        ("POST", "/v1/studies", {"space": SPACE, "agent_options": {"m": -1}}, 422, "agent_options.m"),
        ("POST", "/v1/studies", {"space": SPACE, "agent_options": {"proposer": "llm"}}, 422, "llm"),
        ("POST", "/v1/studies", {"space": SPACE, "extra": 1}, 422, "extra"),
        ("POST", "/v1/studies", {"space": {"c": {"type": "categorical", "choices": []}}}, 422, "choices"),
        ("POST", f"/v1/studies/{sid}/ask", {"n": 0}, 422, "n"),
        ("POST", f"/v1/studies/{sid}/ask", {"n": "3"}, 422, "n"),
        ("POST", f"/v1/studies/{sid}/ask", {"n": 10**9}, 422, "n"),
        ("POST", "/v1/studies/nope/ask", {"n": 1}, 404, "study_id"),
        ("POST", f"/v1/studies/{sid}/tell", {"trial_id": tid}, 422, "value"),
        ("POST", f"/v1/studies/{sid}/tell", {"trial_id": tid, "value": "abc"}, 422, "value"),
        ("POST", f"/v1/studies/{sid}/tell", {"trial_id": "1", "value": 1.0}, 422, "trial_id"),
        ("POST", f"/v1/studies/{sid}/tell", {"trial_id": tid, "value": 1.0, "state": "pruned"}, 422, "state"),
        ("POST", f"/v1/studies/{sid}/tell", {"trial_id": tid, "value": 1.0, "state": "failed"}, 422, "value"),
        ("POST", f"/v1/studies/{sid}/tell", {"trial_id": 10**9, "value": 1.0}, 404, "trial_id"),
        ("POST", f"/v1/studies/{sid}/tell", {"trial_id": -1, "value": 1.0}, 422, "trial_id"),
        ("POST", f"/v1/studies/{sid}/trials", {"params": {"x": 1.0}, "value": 1.0}, 422, "missing"),
        ("POST", f"/v1/studies/{sid}/trials", {"params": {"x": 99.0, "n": 1, "opt": "sgd"}, "value": 1.0}, 422, "params.x"),
        ("GET", f"/v1/studies/{sid}/trials?state=weird", None, 422, "trial states"),
        ("GET", "/v1/nothing-here", None, 404, "Not Found"),
    ]
    for method, path, body, status, needle in bad:
        r = httpx.request(method, f"{url}{path}", json=body, headers=h)
        assert r.status_code == status, (path, body, r.status_code, r.text)
        payload = r.json()
        assert needle in payload["message"], (path, body, payload)
    # Malformed JSON and NaN
    r = httpx.post(f"{url}/v1/studies/{sid}/tell", content=b"{not json", headers={**h, "content-type": "application/json"})
    assert r.status_code == 422 and r.json()["error"] == "invalid"
    r = httpx.post(f"{url}/v1/studies/{sid}/tell", content=b'{"trial_id": %d, "value": NaN}' % tid,
                   headers={**h, "content-type": "application/json"})
    assert r.status_code == 422 and "finite" in r.json()["message"]
    # Told twice -> 409 through the client too.
    ok = httpx.post(f"{url}/v1/studies/{sid}/tell", json={"trial_id": tid, "value": 1.5}, headers=h)
    assert ok.status_code == 200 and ok.json()["value"] == 1.5
    study = Client(url, server["alice"]).get_study(sid)
    with pytest.raises(RemoteConflictError) as info:
        study.tell(tid, 2.0)
    assert isinstance(info.value, ConflictError) and info.value.status_code == 409
    with pytest.raises(APIError):
        study.ask(0)
    # Still serving.
    assert httpx.post(f"{url}/v1/studies/{sid}/ask", json={}, headers=h).status_code == 200


def test_openapi_schema(server):
    spec = httpx.get(f"{server['url']}/openapi.json").json()
    for path in ("/v1/studies", "/v1/studies/{study_id}/ask", "/v1/studies/{study_id}/tell",
                 "/v1/studies/{study_id}/trials", "/v1/studies/{study_id}/best"):
        assert path in spec["paths"]


@pytest.mark.slow
def test_eight_concurrent_clients_hundred_trials_each_nothing_lost(server):
    owner_client = Client(server["url"], server["alice"])
    study = owner_client.create_study(
        {"x": {"type": "float", "low": 0, "high": 1}, "y": {"type": "float", "low": 0, "high": 1}},
        agent_options={"predictor": "random"}, seed=0)

    def worker(w: int) -> list[tuple[int, float]]:
        c = Client(server["url"], server["alice"])
        s = c.get_study(study.id)
        told = []
        for _ in range(100):
            t = s.ask()[0]
            v = t.params["x"] + 10 * t.params["y"] + w * 1e-9
            s.tell(t.id, v)
            told.append((t.id, v))
        c.close()
        return told

    with ThreadPoolExecutor(8) as pool:
        results = [x for r in pool.map(worker, range(8)) for x in r]
    trials = study.trials
    assert len(results) == 800 and len({tid for tid, _ in results}) == 800
    assert len(trials) == 800
    assert sorted(t.number for t in trials) == list(range(800))
    by_id = {t.id: t for t in trials}
    assert all(by_id[tid].state == "complete" and by_id[tid].value == v for tid, v in results)
    assert len({(t.params["x"], t.params["y"]) for t in trials}) == 800  # no duplicate suggestions
