"""Finding 5 (Medium) and the low ones: no 5xx for bad input, bounded and clean messages,
valid UTF-8, slow clients, ``Allow`` on 405, no ``Host``-derived redirects.

On the old server each input below answered 500 (OverflowError, or a missing optional
package), messages echoed unbounded input and scipy's text, a lone surrogate was stored and
later answers were invalid UTF-8, a client could hold a connection open forever, 405s had no
``Allow`` and ``/v1/studies/`` redirected to a ``Location`` built from ``Host``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import httpx
import pytest
from service_helpers import REPO_ROOT, SPACE, read_all, start_server, status_of

from optiforge.platform.api import MAX_MESSAGE_CHARS


@pytest.fixture(scope="module")
def server(storage_url, tmp_path_factory):
    srv = start_server(storage_url, "--limit", "header_timeout_s=1", "--limit", "body_timeout_s=1",
                       "--limit", "keep_alive_timeout_s=1", tmp=tmp_path_factory.mktemp("log"))
    yield srv
    srv.stop()


def _raw_post(server, token, path, text: str):
    # Sent as written: json.dumps would escape what these tests need to send raw.
    return httpx.post(f"{server.url}{path}", content=text.encode("utf-8", "surrogatepass"), timeout=120,
                      headers={**server.headers(token), "content-type": "application/json"})


@pytest.mark.parametrize(("space", "needle"), [
    ('{"x": {"type": "int", "low": -%s, "high": 1}}' % ("9" * 400), "space.x"),
    ('{"x": {"type": "int", "low": 0, "high": %s}}' % ("9" * 400), "space.x"),
    ('{"x": {"type": "float", "low": 0, "high": 1, "step": 5e-324}}', "space.x.step"),
    ('{"x": {"type": "float", "low": -1e308, "high": 1e308}}', "space.x"),
    ('{"x": {"type": "float", "low": 0, "high": 1e400}}', "space.x"),
])
def test_extreme_numbers_in_a_space_are_422(server, space, needle):
    r = _raw_post(server, server.token("alice"), "/v1/studies", '{"space": ' + space + "}")
    assert r.status_code == 422, r.text[:300]
    assert r.json()["message"].startswith(needle), r.json()


@pytest.mark.parametrize("options", [{"m0": 1e300}, {"lam": 1e300}, {"m0": 1e300, "lam": 1e300},
                                     {"alpha_max": 1e308, "alpha_min": 1e308}, {"temperature": 1e300}])
def test_extreme_agent_options_are_422(server, options):
    r = httpx.post(f"{server.url}/v1/studies", json={"space": SPACE, "agent_options": options},
                   headers=server.headers(server.token("alice")), timeout=120)
    assert r.status_code == 422, r.text
    assert r.json()["message"].startswith("agent_options."), r.json()


def test_huge_trial_ids_are_422(server):
    h = server.headers(server.token("alice"))
    sid = httpx.post(f"{server.url}/v1/studies", json={"space": SPACE}, headers=h, timeout=60).json()["id"]
    for tid in (2**63, 2**64, -(2**63) - 1, 10**400):
        r = _raw_post(server, server.token("alice"), f"/v1/studies/{sid}/tell",
                      '{"trial_id": ' + str(tid) + ', "value": 1.0}')
        assert r.status_code == 422 and r.json()["message"].startswith("trial_id"), r.text[:300]
    r = httpx.post(f"{server.url}/v1/studies/{sid}/tell", json={"trial_id": 2**31 - 1, "value": 1.0}, headers=h,
                   timeout=60)
    assert r.status_code == 404, r.text


def test_messages_are_bounded_and_in_our_words(server):
    token = server.token("alice")
    h = server.headers(token)
    big = "A" * 500_000
    for body in ({"space": SPACE, "agent_options": {"proposer": big}},
                 {"space": {"c": {"type": "categorical", "choices": ["a", "a"]}}, "name": "x"},
                 {"space": SPACE, "agent_options": {big[:1000]: 1}}):
        r = httpx.post(f"{server.url}/v1/studies", json=body, headers=h, timeout=120)
        assert r.status_code == 422 and len(r.json()["message"]) <= MAX_MESSAGE_CHARS, r.text[:400]
    sid = httpx.post(f"{server.url}/v1/studies", json={"space": SPACE}, headers=h, timeout=60).json()["id"]
    r = httpx.post(f"{server.url}/v1/studies/{sid}/trials", json={"params": {"x": big, "n": 1}, "value": 1.0},
                   headers=h, timeout=120)
    assert r.status_code == 422 and len(r.json()["message"]) <= MAX_MESSAGE_CHARS
    # The old server asked scipy and echoed it ("Maximum supported dimensionality is 21201.",
    # "data must be finite, check for nan or inf values"): now the bounds say it first.
    wide = {f"p{i}": {"type": "float", "low": 0, "high": 1} for i in range(25_000)}
    r = httpx.post(f"{server.url}/v1/studies", json={"space": wide}, headers=h, timeout=120)
    assert r.status_code in (413, 422) and "dimensionality" not in r.text


def test_lone_surrogates_are_refused_and_answers_stay_utf8(server):
    token = server.token("surrogates")
    for body in ('{"space": {"\\ud800": {"type": "float", "low": 0, "high": 1}}}',
                 '{"space": {"c": {"type": "categorical", "choices": ["\\udfff"]}}}',
                 '{"space": {"x": {"type": "float", "low": 0, "high": 1}}, "name": "a\\ud800b"}',
                 '{"space": {"x": {"type": "float", "low": 0, "high": 1}}, "agent_options": {"\\ud800": 1}}'):
        r = _raw_post(server, token, "/v1/studies", body)
        assert r.status_code == 422 and "Unicode" in r.json()["message"], r.text
        r.content.decode("utf-8")  # the answer itself is valid UTF-8
    # A surrogate *pair* is a real character and is fine.
    r = _raw_post(server, token, "/v1/studies", '{"space": {"\\ud83d\\ude00": {"type": "float", "low": 0, "high": 1}}}')
    assert r.status_code == 201, r.text
    r = httpx.get(f"{server.url}/v1/studies", headers=server.headers(token), timeout=60)
    assert "\U0001f600" in r.content.decode("utf-8")


def test_405_names_the_allowed_methods_and_no_host_redirect(server):
    h = server.headers(server.token("alice"))
    r = httpx.delete(f"{server.url}/v1/studies", headers=h, timeout=60)
    assert r.status_code == 405 and set(r.headers["allow"].split(", ")) >= {"GET", "POST"}
    assert r.json()["error"] == "method_not_allowed"
    r = httpx.put(f"{server.url}/v1/studies/abc/ask", headers=h, timeout=60)
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    r = httpx.get(f"{server.url}/v1/studies/", headers={**h, "Host": "evil.example"}, timeout=60)
    assert r.status_code == 404 and "location" not in r.headers


def test_slow_clients_are_dropped(server):
    # A request head trickled forever: closed once header_timeout_s (1 s here) passes.
    with socket.create_connection(("127.0.0.1", server.port), timeout=120) as s:
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        assert s.recv(1024) == b""  # closed by the server (a hang would raise a timeout)
    # A body that never finishes: 408 once body_timeout_s passes.
    with socket.create_connection(("127.0.0.1", server.port), timeout=120) as s:
        s.sendall(b"POST /v1/studies HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"space\": "
                  % server.token("alice").encode())
        resp = read_all(s)
        assert status_of(resp) == 408 and b"request_timeout" in resp
    # An idle keep-alive connection: closed after keep_alive_timeout_s.
    with socket.create_connection(("127.0.0.1", server.port), timeout=120) as s:
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status_of(read_all(s)) == 200
        assert s.recv(1024) == b""


@pytest.mark.parametrize("spec", ["x=vllm:some/model", "x=replay:/no/such/file.jsonl", "x=hf:/no/such/model",
                                  "x=openai:ftp://host#m", "no-equals-sign"])
def test_bad_operator_llm_specs_fail_at_start_with_one_line(tmp_path, spec):
    r = subprocess.run([sys.executable, "-m", "optiforge.platform.cli", "serve", "--port", "0",
                        "--db", f"sqlite:///{tmp_path / 's.db'}", "--llm", spec],
                       cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert r.stderr.startswith("error: ") and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert len(r.stderr.strip().splitlines()) == 1


def test_bad_config_files_fail_at_start_with_one_line(tmp_path):
    cases = {"bad.toml": "[limits\n", "unknown.toml": "[limits]\nmax_nothing = 3\n",
             "neg.json": json.dumps({"limits": {"max_body_bytes": -1}}), "section.json": json.dumps({"other": {}})}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        r = subprocess.run([sys.executable, "-m", "optiforge.platform.cli", "serve", "--port", "0",
                            "--db", f"sqlite:///{tmp_path / 's.db'}", "--config", str(tmp_path / name)],
                           cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
        assert r.returncode == 2 and r.stderr.startswith("error: "), r.stderr[-2000:]
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
