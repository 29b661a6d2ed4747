"""Finding 3 (High): one tenant could freeze everyone.

All endpoints shared one thread pool and asks queued without end: 45 parallel asks on a study
whose LLM never answers made ``/v1/health`` and other owners' requests time out for minutes.
Now asks run on their own bounded threads, an owner's excess asks are refused at once (429
with ``Retry-After``), and everything else keeps answering.
"""

from __future__ import annotations

import socket
import threading
import time

import httpx
from service_helpers import SPACE, start_server

FLOOD = 45


def test_a_flood_of_asks_on_a_hung_llm_leaves_health_and_other_owners_responsive(sqlite_url, tmp_path):
    # An LLM endpoint that accepts connections and never answers (the kernel completes the
    # handshake from the listen backlog; nobody ever reads or replies).
    hang = socket.socket()
    hang.bind(("127.0.0.1", 0))
    hang.listen(256)
    config = tmp_path / "service.toml"
    config.write_text(
        "[llm]\n"
        f'hung = {{ spec = "openai:http://127.0.0.1:{hang.getsockname()[1]}/v1#m", timeout = 600, max_retries = 0 }}\n')
    server = start_server(sqlite_url, "--config", str(config), tmp=tmp_path)
    flood: list[threading.Thread] = []
    try:
        alice, bob = server.headers(server.token("alice")), server.headers(server.token("bob"))
        body = {"space": SPACE, "agent_options": {"llm": "hung", "proposer": "llm", "n_initial": 1}}
        sid = httpx.post(f"{server.url}/v1/studies", json=body, headers=alice, timeout=60).json()["id"]
        first = httpx.post(f"{server.url}/v1/studies/{sid}/ask", json={}, headers=alice, timeout=60).json()
        httpx.post(f"{server.url}/v1/studies/{sid}/tell", json={"trial_id": first["trials"][0]["id"], "value": 1.0},
                   headers=alice, timeout=60).raise_for_status()
        # From now on every ask of this study waits on the hung LLM.
        answers: list[httpx.Response | Exception] = []
        refused = threading.Event()

        def ask() -> None:
            try:
                r = httpx.post(f"{server.url}/v1/studies/{sid}/ask", json={}, headers=alice, timeout=900)
            except httpx.HTTPError as exc:
                answers.append(exc)
                return
            answers.append(r)
            if r.status_code == 429:
                refused.set()

        flood = [threading.Thread(target=ask, daemon=True) for _ in range(FLOOD)]
        for t in flood:
            t.start()
        assert refused.wait(timeout=300), "the flood was never refused"

        # While alice's admitted asks hang: health, and bob's whole workflow, answer.
        assert httpx.get(f"{server.url}/v1/health", timeout=60).json() == {"status": "ok"}
        r = httpx.post(f"{server.url}/v1/studies", json={"space": SPACE}, headers=bob, timeout=60)
        assert r.status_code == 201, r.text
        bid = r.json()["id"]
        for _ in range(3):
            t = httpx.post(f"{server.url}/v1/studies/{bid}/ask", json={"n": 2}, headers=bob, timeout=60)
            assert t.status_code == 200, t.text
            for trial in t.json()["trials"]:
                told = httpx.post(f"{server.url}/v1/studies/{bid}/tell", headers=bob, timeout=60,
                                  json={"trial_id": trial["id"], "value": trial["params"]["x"] ** 2})
                assert told.status_code == 200, told.text
        assert len(httpx.get(f"{server.url}/v1/studies/{bid}/trials", headers=bob, timeout=60).json()["trials"]) == 6
        assert httpx.get(f"{server.url}/v1/studies/{bid}/best", headers=bob, timeout=60).status_code == 200
        assert bid in [s["id"] for s in httpx.get(f"{server.url}/v1/studies", headers=bob, timeout=60).json()["studies"]]
        # Even alice's own reads are not stuck behind her hung asks.
        assert httpx.get(f"{server.url}/v1/studies/{sid}", headers=alice, timeout=60).status_code == 200

        # The flood was refused, not queued: every refusal says when to come back.
        deadline = time.monotonic() + 300
        while len(answers) < FLOOD - 2:  # at most max_asks_per_owner (2) asks are admitted
            assert time.monotonic() < deadline, f"only {len(answers)} of {FLOOD} asks answered"
            time.sleep(0.1)
        refusals = [a for a in answers if isinstance(a, httpx.Response) and a.status_code == 429]
        assert len(refusals) >= FLOOD - 2
        assert all(a.headers.get("retry-after") == "1" and a.json()["error"] == "too_many_requests"
                   for a in refusals)
    finally:
        hang.close()  # the hung asks now fail (502); then the server can stop
        for t in flood:
            t.join(timeout=120)
        server.stop()
