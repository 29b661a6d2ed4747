"""The dashboard's protections over HTTP, against a real server (no browser needed).

Runs on SQLite, and on a fresh PostgreSQL database too when ``OPTIFORGE_TEST_POSTGRES_URL`` is
set (``module_storage_url``). The data are real black-box campaigns (fast: no LLM), owned by
alice and bob.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from dashboard_helpers import Server, raw_request, start_server, status_of

from optiforge.platform.campaigns import create_campaign, run_campaign
from optiforge.platform.store import Store

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def site(module_storage_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """A fresh database per backend (tests/conftest.py) with alice's and bob's campaigns."""
    tmp = tmp_path_factory.mktemp("dash-sec")
    db = module_storage_url
    store = Store(db, artifacts_root=tmp / "artifacts")
    ids = {}
    for owner in ("alice", "bob"):
        cid = create_campaign(store, task="branin", agent="random", budget=6, seed=3, owner=owner)
        run_campaign(store, cid)
        ids[owner] = cid
    tokens = {owner: store.create_token(owner) for owner in ("alice", "bob")}
    store.close()
    # One request in progress per owner: the per-owner limit test needs only two requests.
    server = start_server(db, "--limit", "max_requests_per_owner=1", "--limit", "max_asks_per_owner=1",
                          "--limit", "max_body_bytes=4096", "--limit", "body_timeout_s=20", tmp=tmp)
    yield {"server": server, "ids": ids, "tokens": tokens}
    server.stop()


def _client(server: Server, token: str | None = None) -> httpx.Client:
    c = httpx.Client(base_url=server.url, follow_redirects=False, timeout=30)
    if token is not None:
        c.cookies.set("optiforge_token", token)
    return c


def _login(c: httpx.Client, token: str) -> httpx.Response:
    c.get("/login")
    return c.post("/login", data={"token": token, "csrf": c.cookies.get("optiforge_csrf"), "next": "/"})


def test_login_sets_an_httponly_samesite_strict_cookie(site) -> None:
    with _client(site["server"]) as c:
        r = _login(c, site["tokens"]["alice"])
        assert r.status_code == 303 and r.headers["location"] == "/"
        cookie = next(v for k, v in r.headers.multi_items() if k == "set-cookie" and "optiforge_token=" in v)
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        page = c.get("/")
        assert page.status_code == 200
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
        assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"


def test_posts_need_the_csrf_token(site) -> None:
    """A cross-site form cannot log a browser in (or out): it lacks the double-submit token."""
    with _client(site["server"]) as c:
        c.get("/login")
        for form in ({"token": site["tokens"]["alice"]},
                     {"token": site["tokens"]["alice"], "csrf": "forged"}):
            r = c.post("/login", data=form)
            assert r.status_code == 403 and "optiforge_token" not in r.headers.get("set-cookie", "")
            assert "The login form expired" in r.text
    with _client(site["server"], site["tokens"]["alice"]) as c:
        r = c.post("/logout", data={"csrf": "forged"})
        assert r.status_code == 403 and "optiforge_token" not in r.headers.get("set-cookie", "")
        assert c.get("/").status_code == 200  # still logged in


def test_login_never_redirects_off_site(site) -> None:
    with _client(site["server"]) as c:
        for target in ("//evil.example/x", "https://evil.example/", "/\\evil.example", "/v1/studies"):
            c.get("/login")
            r = c.post("/login", data={"token": site["tokens"]["alice"], "csrf": c.cookies.get("optiforge_csrf"),
                                       "next": target})
            assert r.headers["location"] == "/", target
        page = c.get("/login", params={"next": "javascript:alert(1)", "error": "<script>"})
        assert 'name="next" value="/"' in page.text and "<script>" not in page.text


def test_another_owners_campaign_is_a_404_like_a_missing_one(site) -> None:
    with _client(site["server"], site["tokens"]["alice"]) as c:
        assert c.get(f"/campaigns/{site['ids']['alice']}").status_code == 200
        theirs = c.get(f"/campaigns/{site['ids']['bob']}")
        missing = c.get("/campaigns/ffffffffffff")
        assert theirs.status_code == missing.status_code == 404
        assert theirs.text == missing.text
        assert site["ids"]["bob"] not in c.get("/").text
        assert c.get(f"/campaigns/{site['ids']['bob']}/live.json").status_code == 404


def test_pages_check_the_token_before_reading_the_body(site) -> None:
    """Without a valid cookie a page answers at once, without waiting for a declared body."""
    server = site["server"]
    for cookie in ("", "Cookie: optiforge_token=oft_unknown\r\n"):
        head = (f"GET / HTTP/1.1\r\nHost: x\r\n{cookie}Content-Length: 50000000\r\n\r\n").encode()
        resp = raw_request(server.port, head, timeout=20)
        assert status_of(resp) == 303, resp[:200]
        location = resp.split(b"location: ")[1].split(b"\r\n")[0]
        assert location == (b"/login?next=/" if not cookie else b"/login?error=expired")


def test_pages_obey_the_body_cap_and_the_per_owner_limit(site) -> None:
    server, token = site["server"], site["tokens"]["alice"]
    big = raw_request(server.port, (b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n\r\n"))
    assert status_of(big) == 413
    # A request of alice's in progress (its body not sent yet) takes her only slot ...
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as held:
        held.sendall(f"GET / HTTP/1.1\r\nHost: x\r\nCookie: optiforge_token={token}\r\n"
                     "Content-Length: 10\r\n\r\n".encode())
        time.sleep(1.0)  # let the server admit it
        with _client(server, token) as c:
            r = c.get("/")
            assert r.status_code == 429 and r.headers["retry-after"]
        with _client(server, site["tokens"]["bob"]) as c:  # ... not bob's
            assert c.get("/").status_code == 200


def test_bad_query_parameters_are_a_400_page_not_a_traceback(site) -> None:
    with _client(site["server"], site["tokens"]["alice"]) as c:
        cid = site["ids"]["alice"]
        study = c.get(f"/campaigns/{cid}").text.split("/studies/")[1].split('"')[0]
        for path in (f"/campaigns/{cid}?offset=-1", f"/campaigns/{cid}?offset=99999999999",
                     f"/studies/{study}?order=code", f"/studies/{study}?state=<x>", "/?campaigns=abc"):
            r = c.get(path)
            assert r.status_code == 400 and "Traceback" not in r.text and "<x>" not in r.text, path
        assert c.get(f"/campaigns/{cid}/candidates/99999999999999").status_code == 404


def test_dashboard_command_serves_the_pages_alone(site, tmp_path: Path) -> None:
    """``optiforge dashboard`` on its own: the pages and their guard, no API."""
    db = site["server"].db
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[3]),
                                                        os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "optiforge.platform.cli", "dashboard", "--port", str(port),
                             "--db", db], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            try:
                login = httpx.get(f"{url}/login", timeout=5)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.3)
        assert login.status_code == 200 and 'for="token"' in login.text
        assert httpx.get(f"{url}/").status_code == 303
        assert httpx.get(f"{url}/v1/health").status_code == 404
        with httpx.Client(base_url=url, follow_redirects=False) as c:
            assert _login(c, site["tokens"]["bob"]).status_code == 303
            assert site["ids"]["bob"] in c.get("/").text
    finally:
        proc.terminate()
        proc.wait(timeout=30)
