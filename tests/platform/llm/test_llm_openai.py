"""OpenAILLM against a REAL OpenAI-compatible server: llama.cpp serving the bundled GGUF on loopback."""

from __future__ import annotations

import contextlib
import importlib.util
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from optiforge.agents.protocols import LLM
from optiforge.platform.llm import LLMRequestError, LLMServerError, OpenAILLM, from_spec

pytestmark = pytest.mark.slow

MODEL = "smollm2"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """Start `python -m llama_cpp.server` on a free loopback port; stop it afterwards."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama_cpp is not importable: CMAKE_ARGS=-DGGML_NATIVE=off pip install 'llama-cpp-python[server]'")
    from optiforge.platform.llm import bundled_gguf_path

    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(bundled_gguf_path()),
         "--model_alias", MODEL, "--host", "127.0.0.1", "--port", str(port),
         "--n_ctx", "2048", "--n_threads", "2", "--verbose", "false"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 180
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama.cpp server exited early: {proc.stderr.read()[-2000:]}")
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama.cpp server did not come up within 180 s")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_generate_n_seed_and_token_counts(server):
    llm = from_spec(f"openai:{server}#{MODEL}")
    assert isinstance(llm, OpenAILLM) and isinstance(llm, LLM)
    out = llm.generate(["Name a prime number.", "Say hello in French."], n=3, max_new_tokens=8,
                       temperature=1.0, seed=11)
    assert [len(r) for r in out] == [3, 3]
    for row in out:
        for c in row:
            assert c.text and 1 <= c.completion_tokens <= 8 and c.prompt_tokens > 10
            if c.finish_reason == "length":
                assert c.completion_tokens == 8
        # llama.cpp ignores n: the client filled in with distinct seeds, so samples differ
        assert len({c.text for c in row}) > 1
    again = llm.generate(["Name a prime number.", "Say hello in French."], n=3, max_new_tokens=8,
                         temperature=1.0, seed=11)
    assert [[c.text for c in r] for r in again] == [[c.text for c in r] for r in out]


def test_greedy_batch_matches_single_requests_in_order(server):
    llm = OpenAILLM(server, MODEL)
    prompts = ["Name a colour.", "Name an animal.", "Name a fruit."]
    batch = llm.generate(prompts, max_new_tokens=6, temperature=0)
    singles = [llm.generate([p], max_new_tokens=6, temperature=0)[0] for p in prompts]
    assert [r[0].text for r in batch] == [r[0].text for r in singles]


def test_system_prompt_reaches_the_model(server):
    llm = OpenAILLM(server, MODEL)
    a = llm.generate(["What is your name?"], max_new_tokens=12, temperature=0)[0][0].text
    b = llm.generate(["What is your name?"], max_new_tokens=12, temperature=0,
                     system="You are a pirate named Blackbeard.")[0][0].text
    assert a != b


def test_unknown_model_name_is_a_clear_error(server):
    llm = OpenAILLM(server, "no-such-model")
    with pytest.raises(ValueError, match=r"^model: 'no-such-model' is not served .*smollm2"):
        llm.generate(["hi"], max_new_tokens=2)


def test_rejected_request_is_not_retried(server):
    # llama.cpp has no runtime LoRA endpoint: a 4xx that must surface at once, unretried. The
    # counting proxy shows how many requests reached the server.
    with _proxy(server, fail=0) as (url, handler):
        llm = OpenAILLM(url, MODEL, max_retries=5, backoff=5.0)
        with pytest.raises(LLMRequestError, match="HTTP 404") as err:
            llm.load_adapter("v1", path="/tmp/adapter")
        assert err.value.status_code == 404 and handler.seen == 1
    assert llm.model == MODEL


def test_server_down_is_retried_then_clear_error():
    port = _free_port()  # nothing listens here
    llm = OpenAILLM(f"http://127.0.0.1:{port}/v1", MODEL, max_retries=2, backoff=0.05)
    t0 = time.monotonic()
    with pytest.raises(LLMServerError, match=r"failed after 3 attempts; last error: Connect"):
        llm.generate(["hi"], max_new_tokens=2)
    assert time.monotonic() - t0 >= 0.05 + 0.1  # backoff slept between attempts


class _FlakyProxy(BaseHTTPRequestHandler):
    """Answers the first `fail` chat requests with 503 (Retry-After), then forwards to the server."""

    upstream = ""
    fail = 0
    seen = 0

    def do_GET(self):  # noqa: N802
        self._forward(None)

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        type(self).seen += 1
        if type(self).seen <= type(self).fail:
            self.send_response(503)
            self.send_header("retry-after", "0")
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": {"message": "overloaded"}}')
            return
        self._forward(body)

    def _forward(self, body):
        r = httpx.request(self.command, self.upstream + self.path, content=body,
                          headers={"content-type": "application/json"}, timeout=120)
        self.send_response(r.status_code)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(r.content)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def _proxy(server: str, fail: int):
    """A _FlakyProxy in front of ``server``: yields (its base URL, its handler class)."""
    handler = type("Flaky", (_FlakyProxy,), {"upstream": server.rsplit("/v1", 1)[0], "fail": fail,
                                              "seen": 0})
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{proxy.server_address[1]}/v1", handler
    finally:
        proxy.shutdown()


def test_overloaded_server_is_retried_until_it_answers(server):
    with _proxy(server, fail=2) as (url, handler):
        llm = OpenAILLM(url, MODEL, max_retries=3, backoff=0.01)
        out = llm.generate(["Name a prime number."], max_new_tokens=4, temperature=0)
        assert out[0][0].text and handler.seen == 3
        handler.seen, handler.fail = 0, 10
        with pytest.raises(LLMServerError, match="HTTP 503: overloaded"):
            llm.generate(["Name a prime number."], max_new_tokens=4, temperature=0)
        assert handler.seen == 4  # 1 try + 3 retries


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="^base_url:"):
        OpenAILLM("127.0.0.1:8000", MODEL)
    with pytest.raises(ValueError, match="^max_retries:"):
        OpenAILLM("http://127.0.0.1:8000/v1", MODEL, max_retries=-1)
    with pytest.raises(ValueError, match="^model:"):
        OpenAILLM("http://127.0.0.1:8000/v1", "")


def test_api_key_from_environment(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPTIFORGE_OPENAI_API_KEY", "sk-test-123")
    llm = OpenAILLM("http://127.0.0.1:8000/v1", MODEL)
    assert llm._client.headers["authorization"] == "Bearer sk-test-123"
    assert "sk-test" not in repr(llm)


def test_deadline_bounds_a_call_to_a_server_that_never_answers():
    # A server that accepts connections and never answers: without a deadline the call would
    # take (max_retries + 1) * timeout = 4000 s; with one it gives up after about 1 s.
    hang = socket.socket()
    hang.bind(("127.0.0.1", 0))
    hang.listen(16)
    try:
        llm = OpenAILLM(f"http://127.0.0.1:{hang.getsockname()[1]}/v1", MODEL, timeout=1000,
                        max_retries=3, deadline=1.0)
        with pytest.raises(LLMServerError, match="no answer within the deadline of 1 s"):
            llm.generate(["hi"], max_new_tokens=2)
    finally:
        hang.close()
    with pytest.raises(ValueError, match="^deadline:"):
        OpenAILLM("http://127.0.0.1:8000/v1", MODEL, deadline=0)
