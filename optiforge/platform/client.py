"""Python client of the HTTP service, with the same methods as a local Study.

>>> from optiforge import Client
>>> client = Client("http://127.0.0.1:8000", token="oft_...")           # doctest: +SKIP
>>> study = client.create_study({"x": {"type": "float", "low": -5, "high": 10}})  # doctest: +SKIP
>>> trial = study.ask()[0]                                              # doctest: +SKIP
>>> study.tell(trial.id, (trial.params["x"] - 2) ** 2)                  # doctest: +SKIP

Errors come back as exceptions carrying the server's one-line message: 404 ->
:class:`RemoteNotFoundError` (a ``NotFoundError``), 409 -> :class:`RemoteConflictError` (a
``ConflictError``), 401 -> :class:`AuthenticationError`, other 4xx -> :class:`APIError`
(all ``ValueError``), so code written against a local Study handles them unchanged. A 429 or
503 (the owner's or the server's concurrency limit; nothing was done) is retried after the
server's ``Retry-After``, a few times, before it is raised. Listings follow the server's pages.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from optiforge.platform.store.errors import ConflictError, NotFoundError
from optiforge.platform.study import Trial


class APIError(ValueError):
    """An error answer from the service (``status_code`` and the server's message)."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code


class AuthenticationError(APIError):
    """401: missing, malformed or revoked token."""


class RemoteNotFoundError(APIError, NotFoundError):
    """404: unknown study or trial (or another owner's)."""


class RemoteConflictError(APIError, ConflictError):
    """409: the trial was already told."""


def _trial(d: Mapping[str, Any]) -> Trial:
    return Trial(id=int(d["id"]), params=dict(d["params"]), value=d.get("value"),
                 state=str(d["state"]))


class Client:
    """Talks to ``optiforge serve``.

    Parameters
    ----------
    url : str
        Base URL, e.g. ``"http://127.0.0.1:8000"``.
    token : str
        Bearer token from ``optiforge token create``.
    timeout : float
        Seconds per request (asks with an LLM proposer can take a while).
    busy_retries : int
        How often a 429/503 answer (refused before any work) is retried after ``Retry-After``.
    """

    def __init__(self, url: str, token: str, timeout: float = 120.0, busy_retries: int = 5) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url: expected an http(s) URL, got {url!r}")
        if not isinstance(token, str) or not token:
            raise ValueError("token: expected a non-empty string")
        if isinstance(busy_retries, bool) or not isinstance(busy_retries, int) or busy_retries < 0:
            raise ValueError(f"busy_retries: expected an int >= 0, got {busy_retries!r}")
        self.url = url.rstrip("/")
        self.busy_retries = busy_retries
        self._http = httpx.Client(base_url=self.url, timeout=timeout,
                                  headers={"Authorization": f"Bearer {token}"})

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        for _ in range(self.busy_retries):
            resp = self._http.request(method, path, **kwargs)
            if resp.status_code not in (429, 503):
                break
            wait = resp.headers.get("retry-after", "1")
            time.sleep(min(float(wait), 30.0) if wait.isdigit() else 1.0)
        else:
            resp = self._http.request(method, path, **kwargs)
        if resp.status_code >= 400:
            try:
                message = resp.json().get("message", resp.text)
            except ValueError:
                message = resp.text
            cls = {401: AuthenticationError, 404: RemoteNotFoundError,
                   409: RemoteConflictError}.get(resp.status_code, APIError)
            raise cls(resp.status_code, message)
        return resp.json()

    # ------------------------------------------------------------------ studies
    def create_study(self, space: Mapping[str, Any], direction: str = "minimize", agent: str = "hollm",
                     agent_options: Mapping[str, Any] | None = None, seed: int | None = None,
                     name: str | None = None) -> RemoteStudy:
        """Create a study on the server (same arguments as :func:`optiforge.blackbox.create_study`)."""
        if hasattr(space, "to_dict"):
            space = space.to_dict()  # type: ignore[union-attr]
        body = {"space": dict(space), "direction": direction, "agent": agent,
                "agent_options": dict(agent_options or {}), "seed": seed, "name": name}
        return RemoteStudy(self, self._request("POST", "/v1/studies", json=body))

    def get_study(self, study_id: str) -> RemoteStudy:
        return RemoteStudy(self, self._request("GET", f"/v1/studies/{study_id}"))

    load_study = get_study

    def list_studies(self) -> list[dict[str, Any]]:
        """All the owner's studies, newest first (every page)."""
        seen: set[str] = set()
        # A study created while paging shifts later pages by one: skip what was already seen.
        return [s for s in self._pages("/v1/studies", "studies", {})
                if s["id"] not in seen and not seen.add(s["id"])]

    def _pages(self, path: str, key: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        offset: int | None = 0
        while offset is not None:
            out = self._request("GET", path, params={**params, "offset": offset})
            yield from out[key]
            offset = out.get("next_offset")


class RemoteStudy:
    """A study on the server: ``ask``, ``tell``, ``add_trial``, ``trials``, ``best_trial``."""

    def __init__(self, client: Client, info: Mapping[str, Any]) -> None:
        self._client = client
        self.id: str = info["id"]
        self.name: str | None = info.get("name")
        self.space: dict[str, Any] = info["space"]
        self.direction: str = info["direction"]
        self.agent_name: str = info["agent"]
        self.agent_options: dict[str, Any] = info.get("agent_options") or {}

    def ask(self, n: int = 1) -> list[Trial]:
        out = self._client._request("POST", f"/v1/studies/{self.id}/ask", json={"n": n})
        return [_trial(t) for t in out["trials"]]

    def tell(self, trial_id: int, value: float | None = None, state: str = "complete") -> Trial:
        body: dict[str, Any] = {"trial_id": trial_id, "state": state}
        if value is not None:
            body["value"] = value
        return _trial(self._client._request("POST", f"/v1/studies/{self.id}/tell", json=body))

    def add_trial(self, params: Mapping[str, Any], value: float | None = None,
                  state: str = "complete") -> Trial:
        body = {"params": dict(params), "value": value, "state": state}
        return _trial(self._client._request("POST", f"/v1/studies/{self.id}/trials", json=body))

    def get_trials(self, states: list[str] | tuple[str, ...] | None = None) -> list[Trial]:
        """Trials by number, optionally filtered by state (every page)."""
        params = {"state": ",".join(states)} if states else {}
        return [_trial(t) for t in self._client._pages(f"/v1/studies/{self.id}/trials", "trials", params)]

    @property
    def trials(self) -> list[Trial]:
        return self.get_trials()

    @property
    def best_trial(self) -> Trial | None:
        t = self._client._request("GET", f"/v1/studies/{self.id}/best")["trial"]
        return None if t is None else _trial(t)

    def __repr__(self) -> str:
        return f"RemoteStudy(id={self.id!r}, url={self._client.url!r})"
