"""Any OpenAI-compatible chat-completions server (vLLM ``vllm serve``, llama.cpp server, ...)."""

from __future__ import annotations

import math
import os
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from optiforge.platform.llm._common import chat_messages, check_generate_args
from optiforge.types import Completion

_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class LLMServerError(RuntimeError):
    """The server could not be reached or kept failing after all retries."""


class LLMRequestError(ValueError):
    """The server rejected the request (4xx): retrying would not help."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class OpenAILLM:
    """An :class:`~optiforge.agents.protocols.LLM` talking to an OpenAI-compatible server over HTTP.

    Each prompt is one ``POST {base_url}/chat/completions`` request carrying ``n``, ``seed``,
    ``temperature``, ``top_p`` and ``max_tokens``; prompts are sent concurrently (up to
    ``max_concurrency`` in flight) so a batching server such as vLLM sees them together. If
    the server returns fewer than ``n`` choices (llama.cpp's server ignores ``n``), the missing
    samples are requested one by one, with seeds ``seed + 1, seed + 2, ...`` so they differ.

    Parameters
    ----------
    base_url : str
        The API root including the version, e.g. ``http://127.0.0.1:8000/v1``.
    model : str
        The served model name (or a LoRA adapter name on vLLM). Checked against
        ``GET {base_url}/models`` before the first request when the server lists models.
    api_key : str, optional
        Bearer token; defaults to ``$OPTIFORGE_OPENAI_API_KEY``, then ``$OPENAI_API_KEY``.
    timeout : float
        Seconds per HTTP request (connecting, sending, and each wait for response bytes).
    max_retries : int
        Retries (exponential backoff from ``backoff`` seconds, honouring ``Retry-After``) on
        connection errors, timeouts, 429 and 5xx.
    max_concurrency : int
        Requests in flight at once.
    deadline : float, optional
        Seconds one :meth:`generate` call may take in all, retries and extra samples included;
        past it the call raises :class:`LLMServerError` (``None``: only ``timeout`` bounds
        each request). A shared service sets it so a stalled server cannot hold a request
        for ``(max_retries + 1) * timeout``.

    Notes
    -----
    Per-sample ``completion_tokens`` are exact when a response holds one choice. With
    ``n > 1`` in one response the server reports only the total; it is split across the
    choices in proportion to their text length (the sum stays exact).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 3,
        *,
        backoff: float = 0.5,
        max_concurrency: int = 8,
        check_model: bool = True,
        deadline: float | None = None,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url: expected an http(s) URL such as http://127.0.0.1:8000/v1, got {base_url!r}")
        if not isinstance(model, str) or not model.strip():
            raise ValueError("model: expected the served model's name")
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"timeout: expected seconds > 0, got {timeout!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries: expected an int >= 0, got {max_retries!r}")
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise ValueError(f"max_concurrency: expected an int >= 1, got {max_concurrency!r}")
        if deadline is not None and (isinstance(deadline, bool) or not isinstance(deadline, (int, float))
                                     or not math.isfinite(deadline) or deadline <= 0):
            raise ValueError(f"deadline: expected seconds > 0 or None, got {deadline!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.max_retries = max_retries
        self.backoff = float(backoff)
        self.max_concurrency = max_concurrency
        self.timeout = float(timeout)
        self.deadline = None if deadline is None else float(deadline)
        self._check_model = check_model
        self._model_checked = False
        key = api_key or os.environ.get("OPTIFORGE_OPENAI_API_KEY") or os.environ.get("OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(base_url=self.base_url, headers=headers, timeout=float(timeout))
        self._lock = threading.Lock()

    # -- HTTP ----------------------------------------------------------------------------
    def _request(self, method: str, path: str, json: dict[str, Any] | None = None,
                 end: float | None = None) -> Any:
        """One API call with retries; ``end`` is a ``time.monotonic()`` past which to give up."""
        url = f"{self.base_url}{path}"
        last = ""
        for attempt in range(self.max_retries + 1):
            delay = self.backoff * (2 ** attempt) * (1 + 0.25 * random.random())
            timeout = self.timeout
            if end is not None:
                timeout = min(timeout, end - time.monotonic())
                if timeout <= 0:
                    raise LLMServerError(f"llm: {method} {url} got no answer within the deadline of "
                                         f"{self.deadline:g} s; last error: {last or 'none'}")
            try:
                resp = self._client.request(method, path, json=json, timeout=timeout)
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if resp.status_code < 400:
                    try:
                        return resp.json()
                    except ValueError:
                        raise LLMServerError(f"llm: {url} returned non-JSON ({resp.text[:200]!r})") from None
                message = _error_message(resp)
                if resp.status_code not in _RETRY_STATUS:
                    raise LLMRequestError(
                        f"llm: {method} {url} was rejected with HTTP {resp.status_code}: {message}",
                        resp.status_code,
                    )
                last = f"HTTP {resp.status_code}: {message}"
                retry_after = resp.headers.get("retry-after", "")
                if retry_after.replace(".", "", 1).isdigit():
                    delay = max(delay, min(float(retry_after), 60.0))
            if attempt < self.max_retries:
                time.sleep(delay if end is None else max(0.0, min(delay, end - time.monotonic())))
        raise LLMServerError(
            f"llm: {method} {url} failed after {self.max_retries + 1} attempts; last error: {last}"
        )

    def served_models(self, end: float | None = None) -> list[str]:
        """Model names the server lists at ``GET /models``."""
        data = self._request("GET", "/models", end=end)
        return [m.get("id", "") for m in data.get("data", []) if isinstance(m, dict)]

    def _ensure_model(self, end: float | None = None) -> None:
        if not self._check_model or self._model_checked:
            return
        try:
            names = self.served_models(end)
        except LLMRequestError:
            names = []  # the server has no /models endpoint: nothing to check against
        if names and self.model not in names:
            raise ValueError(f"model: {self.model!r} is not served at {self.base_url}; it serves {names}")
        self._model_checked = True

    # -- adapters ------------------------------------------------------------------------
    def load_adapter(self, name: str, path: str | None = None) -> str:
        """Use the LoRA adapter ``name`` as the model from now on.

        With ``path``, first asks a vLLM server to load it: ``POST {base_url}/load_lora_adapter``
        (the server must run with ``--enable-lora`` and ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``).
        Without ``path`` the adapter must already be served (``vllm serve ... --lora-modules
        name=path``).
        """
        if not isinstance(name, str) or not name.strip():
            raise ValueError("name: expected the adapter's served name")
        if path is not None:
            self._request("POST", "/load_lora_adapter", {"lora_name": name, "lora_path": os.fspath(path)})
        with self._lock:
            self.model = name
            self._model_checked = False
        return name

    # -- generation ----------------------------------------------------------------------
    def generate(
        self,
        prompts: Sequence[str],
        n: int = 1,
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.8,
        top_p: float = 1.0,
        seed: int | None = None,
        system: str | None = None,
    ) -> list[list[Completion]]:
        prompts = check_generate_args(prompts, n, max_new_tokens, temperature, top_p, seed, system)
        if not prompts:
            return []
        end = None if self.deadline is None else time.monotonic() + self.deadline
        self._ensure_model(end)

        def one(prompt: str) -> list[Completion]:
            return self._complete(prompt, n, max_new_tokens, temperature, top_p, seed, system, end)

        if len(prompts) == 1:
            return [one(prompts[0])]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(prompts))) as pool:
            return list(pool.map(one, prompts))

    def _complete(self, prompt: str, n: int, max_new_tokens: int, temperature: float, top_p: float,
                  seed: int | None, system: str | None, end: float | None = None) -> list[Completion]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": chat_messages(prompt, system),
            "max_tokens": max_new_tokens,
            "temperature": float(temperature),
            "top_p": float(top_p),
            "n": n,
        }
        if seed is not None:
            body["seed"] = seed
        got = _parse_choices(self._request("POST", "/chat/completions", body, end))[:n]
        k = 0
        while len(got) < n:
            # The server ignored n: ask for the rest one at a time (distinct seeds, else
            # every extra sample would repeat the first).
            k += 1
            extra = dict(body, n=1)
            if seed is not None:
                extra["seed"] = seed + k
            more = _parse_choices(self._request("POST", "/chat/completions", extra, end))
            if not more:
                raise LLMServerError(f"llm: {self.base_url} returned no choices for model {self.model!r}")
            got.append(more[0])
        return got

    def close(self) -> None:
        self._client.close()

    def __repr__(self) -> str:
        return f"OpenAILLM(base_url={self.base_url!r}, model={self.model!r})"


def _error_message(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.text[:300] or resp.reason_phrase
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data))
        if isinstance(err, dict):
            return str(err.get("message", err))
        return str(err)
    return str(data)[:300]


def _parse_choices(data: Any) -> list[Completion]:
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list):
        raise LLMServerError(f"llm: malformed chat-completions response (no choices): {str(data)[:200]}")
    usage = data.get("usage") or {}
    prompt_tokens = int(usage.get("prompt_tokens") or 0)
    total = int(usage.get("completion_tokens") or 0)
    choices = sorted(choices, key=lambda c: c.get("index", 0))
    texts = [((c.get("message") or {}).get("content") or "") for c in choices]
    counts = _split_count(total, [len(t) for t in texts])
    return [
        Completion(text=t, prompt_tokens=prompt_tokens, completion_tokens=k,
                   finish_reason=str(c.get("finish_reason") or "stop"))
        for c, t, k in zip(choices, texts, counts, strict=True)
    ]


def _split_count(total: int, weights: list[int]) -> list[int]:
    """Split ``total`` into integers proportional to ``weights`` that sum exactly to ``total``."""
    if len(weights) <= 1:
        return [total] * len(weights)
    wsum = sum(weights)
    if wsum == 0:
        weights, wsum = [1] * len(weights), len(weights)
    raw = [total * w / wsum for w in weights]
    out = [int(r) for r in raw]
    # Largest-remainder rounding keeps the sum exact.
    for i in sorted(range(len(raw)), key=lambda i: raw[i] - out[i], reverse=True)[: total - sum(out)]:
        out[i] += 1
    return out
