"""Finding 1 (High): the operator's key went to a URL the tenant picked.

The old server accepted any ``agent_options.llm`` spec: ``openai:<any url>`` received the
operator's ``OPTIFORGE_OPENAI_API_KEY`` (link-local metadata addresses included) and the other
service's error text came back in the 422; ``replay:`` / ``hf:`` paths told a tenant whether
a file exists; each ``smollm2`` / ``hf:`` variant loaded a model that was never freed. Now the
operator offers backends by name and a tenant can only pick a name.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from service_helpers import SPACE, start_server

OPERATOR_KEY = "sk-operator-secret-123"
UPSTREAM_SECRET = "UPSTREAM-INTERNAL-DETAIL-42"


class _FakeOpenAI(BaseHTTPRequestHandler):
    """A minimal OpenAI-compatible server that records who called it, with what key."""

    calls: list[tuple[str, str, str | None]]
    fail = False

    def _answer(self, status: int, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        type(self).calls.append(("GET", self.path, self.headers.get("authorization")))
        self._answer(200, {"data": [{"id": "m"}]})

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length", 0)))
        type(self).calls.append(("POST", self.path, self.headers.get("authorization")))
        if type(self).fail:
            self._answer(400, {"error": {"message": UPSTREAM_SECRET}})
            return
        text = json.dumps([{"x": 0.3, "n": 0.5, "value": 1.0}, {"x": 0.6, "n": 0.2, "value": 2.0}])
        self._answer(200, {"choices": [{"index": 0, "message": {"content": text}, "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 10, "completion_tokens": 10}})

    def log_message(self, *args):
        pass


def _fake_server():
    handler = type("Fake", (_FakeOpenAI,), {"calls": [], "fail": False})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, handler


@pytest.fixture(scope="module")
def upstream():
    srv, handler = _fake_server()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", handler
    srv.shutdown()


@pytest.fixture(scope="module")
def server(storage_url, upstream, tmp_path_factory):
    srv = start_server(storage_url, "--llm", f"offered=openai:{upstream[0]}#m",
                       env={"OPTIFORGE_OPENAI_API_KEY": OPERATOR_KEY}, tmp=tmp_path_factory.mktemp("log"))
    yield srv
    srv.stop()


def _create(server, token, llm, **options):
    body = {"space": SPACE, "agent_options": {"llm": llm, **options}}
    return httpx.post(f"{server.url}/v1/studies", json=body, headers=server.headers(token), timeout=120)


def test_a_tenant_cannot_send_the_operator_key_to_its_own_url(server):
    trap, trap_handler = _fake_server()
    try:
        token = server.token("mallory")
        for url in (f"http://127.0.0.1:{trap.server_address[1]}/v1", "http://169.254.169.254/latest"):
            r = _create(server, token, f"openai:{url}#m", proposer="llm")
            assert r.status_code == 422, r.text
            assert r.json()["error"] == "invalid"
            assert "not an LLM this service offers" in r.json()["message"]
            assert "offered: offered" in r.json()["message"]  # the names, never the specs
        assert trap_handler.calls == []  # nothing, let alone the key, reached the tenant's URL
    finally:
        trap.shutdown()


@pytest.mark.parametrize(("existing", "missing"), [
    ("replay:/etc/passwd", "replay:/no/such/file.jsonl"),
    ("hf:/etc", "hf:/no/such/model"),
])
def test_llm_specs_cannot_probe_the_filesystem(server, existing, missing):
    token = server.token("mallory")
    a, b = _create(server, token, existing), _create(server, token, missing)
    assert a.status_code == b.status_code == 422
    # Exactly the same answer apart from the echoed value: nothing tells the files apart.
    assert a.json()["message"].replace(existing, "?") == b.json()["message"].replace(missing, "?")


@pytest.mark.parametrize("spec", ["vllm:some/model", "smollm2", "smollm2:int8", "hf:Qwen/Qwen2.5-0.5B"])
def test_unoffered_backends_are_422_not_loaded(server, spec):
    r = _create(server, server.token("mallory"), spec)
    assert r.status_code == 422 and "not an LLM this service offers" in r.json()["message"], r.text


def test_an_offered_llm_is_used_by_name_and_its_failures_are_not_reflected(server, upstream):
    _, handler = upstream
    token = server.token("alice")
    h = server.headers(token)
    r = _create(server, token, "offered", proposer="llm", n_initial=1)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    assert r.json()["agent_options"]["llm"] == "offered"
    first = httpx.post(f"{server.url}/v1/studies/{sid}/ask", json={"n": 1}, headers=h, timeout=120).json()
    tid = first["trials"][0]["id"]
    assert httpx.post(f"{server.url}/v1/studies/{sid}/tell", json={"trial_id": tid, "value": 1.0},
                      headers=h, timeout=120).status_code == 200
    handler.calls.clear()
    r = httpx.post(f"{server.url}/v1/studies/{sid}/ask", json={"n": 1}, headers=h, timeout=120)
    assert r.status_code == 200, r.text
    assert any(c[:2] == ("POST", "/v1/chat/completions") for c in handler.calls)
    assert {c[2] for c in handler.calls} == {f"Bearer {OPERATOR_KEY}"}  # the operator's URL, only

    handler.fail = True
    try:
        r = httpx.post(f"{server.url}/v1/studies/{sid}/ask", json={"n": 1}, headers=h, timeout=120)
    finally:
        handler.fail = False
    assert r.status_code == 502 and r.json()["error"] == "llm_unavailable", r.text
    assert "'offered'" in r.json()["message"]
    assert UPSTREAM_SECRET not in r.text and "127.0.0.1" not in r.text


def test_offered_llms_are_built_once(tmp_path):
    # In process, to count: every study naming the backend shares the one built at start-up.
    import uvicorn
    from service_helpers import free_port

    from optiforge.platform.api import create_app
    from optiforge.platform.llm import from_spec
    from optiforge.platform.service.config import OfferedLLM
    from optiforge.platform.service.llms import OfferedLLMs
    from optiforge.platform.store import Store

    replay = tmp_path / "r.jsonl"
    replay.write_text(json.dumps({"text": '[{"x": 0.5, "n": 0.5}]'}) + "\n")
    built = []

    def build(spec, **options):
        built.append(spec)
        return from_spec(spec, **options)

    offered = OfferedLLMs({"r": OfferedLLM("r", f"replay:{replay}")}, build=build)
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    token = store.create_token("alice")
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(create_app(store, llms=offered), host="127.0.0.1", port=port,
                                        log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    try:
        url, h = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {token}"}
        while not srv.started:
            thread.join(0.05)
        for _ in range(5):
            body = {"space": SPACE, "agent_options": {"llm": "r", "proposer": "llm", "n_initial": 1}}
            sid = httpx.post(f"{url}/v1/studies", json=body, headers=h, timeout=120).json()["id"]
            for _ in range(2):
                t = httpx.post(f"{url}/v1/studies/{sid}/ask", json={}, headers=h, timeout=120).json()["trials"][0]
                httpx.post(f"{url}/v1/studies/{sid}/tell", json={"trial_id": t["id"], "value": 1.0},
                           headers=h, timeout=120).raise_for_status()
        assert built == [f"replay:{replay}"]
    finally:
        srv.should_exit = True
        thread.join(timeout=30)
