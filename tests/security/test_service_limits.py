"""Finding 4 (Medium): unbounded work and memory from valid input.

The old server accepted 100,000 parameters, 1,000,000 categorical choices, any ``k``, ``m``,
``budget``, ``retries``, ``context_points``, and answered ``GET /trials`` with everything (111
MB) and ``GET /v1/studies`` without paging. Now each has a documented bound (422), listings are
paged, and the operator sets the numbers (``--limit``, ``--config``).
"""

from __future__ import annotations

import uuid

import httpx
import pytest
from service_helpers import SPACE, start_server

from optiforge import Client
from optiforge.platform.service.config import ServiceLimits

DEFAULTS = ServiceLimits()


@pytest.fixture(scope="module")
def configured_server(storage_url, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("limits")
    config = tmp / "service.toml"
    # The file sets some limits, --limit overrides one of them: both paths are exercised.
    config.write_text("[limits]\npage_size = 3\nmax_page_size = 50\nmax_params = 5\nmax_trials_per_study = 10\n")
    srv = start_server(storage_url, "--config", str(config), "--limit", "max_params=4", tmp=tmp)
    yield srv
    srv.stop()


def _float(i: int) -> dict:
    return {"type": "float", "low": 0, "high": 1 + i}


@pytest.mark.parametrize(("body", "needle"), [
    ({"space": {f"p{i}": _float(i) for i in range(DEFAULTS.max_params + 1)}}, "space"),
    ({"space": {"c": {"type": "categorical", "choices": list(range(DEFAULTS.max_choices + 1))}}}, "space.c"),
    ({"space": {"x" * (DEFAULTS.max_name_chars + 1): _float(0)}}, "space"),
    ({"space": SPACE, "name": "n" * (DEFAULTS.max_name_chars + 1)}, "name"),
    ({"space": SPACE, "agent_options": {"k": 10**6}}, "agent_options.k"),
    ({"space": SPACE, "agent_options": {"m": DEFAULTS.max_m + 1}}, "agent_options.m"),
    ({"space": SPACE, "agent_options": {"b": DEFAULTS.max_b + 1}}, "agent_options.b"),
    ({"space": SPACE, "agent_options": {"budget": 10**12}}, "agent_options.budget"),
    ({"space": SPACE, "agent_options": {"retries": 10**6}}, "agent_options.retries"),
    ({"space": SPACE, "agent_options": {"context_points": 10**7}}, "agent_options.context_points"),
    ({"space": SPACE, "agent_options": {"n_initial": 10**7}}, "agent_options.n_initial"),
    ({"space": SPACE, "agent_options": {"k": 1e300}}, "agent_options.k"),
])
def test_study_bounds_are_422(server, body, needle):
    r = httpx.post(f"{server.url}/v1/studies", json=body,
                   headers=server.headers(server.token("alice")), timeout=120)
    assert r.status_code == 422, r.text[:300]
    assert r.json()["message"].startswith(needle), r.json()


def test_ask_n_is_bounded(server):
    h = server.headers(server.token("alice"))
    sid = httpx.post(f"{server.url}/v1/studies", json={"space": SPACE}, headers=h, timeout=60).json()["id"]
    r = httpx.post(f"{server.url}/v1/studies/{sid}/ask", json={"n": DEFAULTS.max_ask_n + 1}, headers=h,
                   timeout=60)
    assert r.status_code == 422 and r.json()["message"].startswith("n:"), r.text
    r = httpx.post(f"{server.url}/v1/studies/{sid}/ask", json={"n": DEFAULTS.max_ask_n}, headers=h,
                   timeout=120)
    assert r.status_code == 200 and len(r.json()["trials"]) == DEFAULTS.max_ask_n


def test_the_operator_sets_the_limits(configured_server):
    h = configured_server.headers(configured_server.token("alice"))
    five = {f"p{i}": _float(i) for i in range(5)}
    r = httpx.post(f"{configured_server.url}/v1/studies", json={"space": five}, headers=h, timeout=60)
    assert r.status_code == 422 and "at most 4" in r.json()["message"], r.text  # --limit beat the file
    r = httpx.get(f"{configured_server.url}/v1/studies?limit=51", headers=h, timeout=60)
    assert r.status_code == 422 and r.json()["message"].startswith("query.limit"), r.text
    spec = httpx.get(f"{configured_server.url}/openapi.json", timeout=60).json()
    assert spec["components"]["schemas"]["StudyCreate"]["properties"]["space"]["maxProperties"] == 4


def test_listings_are_paged_and_the_client_follows_pages(configured_server):
    token = configured_server.token(f"pager-{uuid.uuid4().hex[:8]}")  # PostgreSQL's database is shared between runs
    h = configured_server.headers(token)
    ids = [httpx.post(f"{configured_server.url}/v1/studies", json={"space": SPACE, "name": f"s{i}"}, headers=h,
                      timeout=60).json()["id"] for i in range(7)]
    first = httpx.get(f"{configured_server.url}/v1/studies", headers=h, timeout=60).json()
    assert len(first["studies"]) == 3 and first["next_offset"] == 3  # page_size from the file
    everything = httpx.get(f"{configured_server.url}/v1/studies?limit=50", headers=h, timeout=60).json()
    assert everything["next_offset"] is None and len(everything["studies"]) == 7
    with Client(configured_server.url, token) as client:
        assert sorted(s["id"] for s in client.list_studies()) == sorted(ids)
        study = client.get_study(ids[0])
        for i in range(8):
            study.add_trial({"x": float(i), "n": 1}, float(i))
        page = httpx.get(f"{configured_server.url}/v1/studies/{ids[0]}/trials?limit=5&offset=5", headers=h, timeout=60).json()
        assert [t["number"] for t in page["trials"]] == [5, 6, 7] and page["next_offset"] is None
        assert [t.number for t in study.trials] == list(range(8))
        assert [t.value for t in study.get_trials(["complete"])] == [float(i) for i in range(8)]


def test_a_study_holds_a_bounded_number_of_trials(configured_server):
    h = configured_server.headers(configured_server.token("alice"))
    sid = httpx.post(f"{configured_server.url}/v1/studies", json={"space": SPACE}, headers=h, timeout=60).json()["id"]
    assert httpx.post(f"{configured_server.url}/v1/studies/{sid}/ask", json={"n": 8}, headers=h, timeout=120).status_code == 200
    r = httpx.post(f"{configured_server.url}/v1/studies/{sid}/ask", json={"n": 3}, headers=h, timeout=60)
    assert r.status_code == 409 and "at most 10" in r.json()["message"], r.text
    assert httpx.post(f"{configured_server.url}/v1/studies/{sid}/ask", json={"n": 2}, headers=h, timeout=120).status_code == 200
    r = httpx.post(f"{configured_server.url}/v1/studies/{sid}/trials", json={"params": {"x": 1.0, "n": 1}, "value": 1.0},
                   headers=h, timeout=60)
    assert r.status_code == 409, r.text


def test_every_limit_is_documented():
    from dataclasses import fields

    from service_helpers import REPO_ROOT

    security = (REPO_ROOT / "SECURITY.md").read_text()
    readme = (REPO_ROOT / "README.md").read_text()
    for f in fields(ServiceLimits):
        assert f"`{f.name}`" in security and f"`{f.name}`" in readme, f.name
