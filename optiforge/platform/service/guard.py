"""The service's front door: who is asking and how much they send, decided before any work.

:class:`RequestGuard` is an ASGI middleware that, for every request and before the body is
read,

1. refuses too many header fields or too long a request head (431);
2. on the protected routes, checks the bearer token (401 without reading the body) and
   counts the owner's requests in progress (429 with ``Retry-After`` past the limit, instead
   of queueing); the dashboard's pages take the same token from a login cookie
   (:class:`CookieLogin`) and send a browser without a valid one to the login page;
3. refuses a declared ``Content-Length`` over the cap (413), then reads the body itself, at
   most the cap (413 past it, for chunked bodies) and within a deadline (408), and hands it
   to the application.

So an unauthenticated client never makes the server hold more than a few kilobytes, and an
authenticated one at most ``max_body_bytes`` per request. :func:`uvicorn_config` adds what
only the HTTP server can bound: the size of the request head, the time to send it, idle
keep-alive connections and the number of connections.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import anyio
from starlette.requests import cookie_parser
from uvicorn.protocols.http.h11_impl import H11Protocol

from optiforge.platform.service.config import ServiceLimits

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OWNER_KEY = "optiforge.owner"
"""Where the guard leaves the authenticated owner in the ASGI scope."""


async def send_error(send: Send, status: int, kind: str, message: str,
                     headers: dict[str, str] | None = None, close: bool = False) -> None:
    """Answer ``{"error": kind, "message": message}`` with ``status`` (the API's error shape)."""
    body = json.dumps({"error": kind, "message": message}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    if close:
        # The body was not read: closing stops the client from uploading it for nothing.
        raw.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


@dataclass(frozen=True)
class CookieLogin:
    """Routes a browser reaches with the bearer token kept in a cookie (the dashboard).

    Attributes
    ----------
    cookie : str
        Name of the cookie holding the token (set by the login form: HttpOnly, SameSite=Strict).
    is_protected : callable
        ``is_protected(path) -> bool``: does the route need the cookie?
    login_path : str
        Where a browser without a valid token is sent (``303``), with ``?next=`` (no cookie) or
        ``?error=expired`` (an unknown or revoked token, whose cookie is then cleared).
    """

    cookie: str
    is_protected: Callable[[str], bool]
    login_path: str


def _token_ok(token: str) -> bool:
    """The shape every token the guard looks up must have (the store is asked only then)."""
    return bool(token) and token.isascii() and token.isprintable() and len(token) <= 256


class OwnerSlots:
    """Counts what each owner has in progress; ``acquire`` refuses instead of waiting."""

    def __init__(self, per_owner: int, total: int | None = None) -> None:
        self.per_owner = per_owner
        self.total = total
        self._busy: dict[str, int] = {}
        self._lock = threading.Lock()

    def acquire(self, owner: str) -> str | None:
        """Take a slot; ``None`` on success, else ``"owner"`` or ``"total"`` (which limit is full)."""
        with self._lock:
            if self.total is not None and sum(self._busy.values()) >= self.total:
                return "total"
            n = self._busy.get(owner, 0)
            if n >= self.per_owner:
                return "owner"
            self._busy[owner] = n + 1
            return None

    def release(self, owner: str) -> None:
        with self._lock:
            n = self._busy.get(owner, 0) - 1
            if n > 0:
                self._busy[owner] = n
            else:
                self._busy.pop(owner, None)


class RequestGuard:
    """ASGI middleware: authenticate, admit and cap a request before the application reads it.

    Parameters
    ----------
    app : ASGI application
    limits : ServiceLimits
    authenticate : callable
        ``authenticate(token) -> owner or None`` (blocking; run on a worker thread).
    is_protected : callable
        ``is_protected(path) -> bool``: does the route need a bearer token?
    login : CookieLogin, optional
        Routes that take the token from a cookie instead (the dashboard's pages), under the
        same checks and per-owner limits.
    """

    def __init__(self, app: ASGIApp, *, limits: ServiceLimits,
                 authenticate: Callable[[str], str | None], is_protected: Callable[[str], bool],
                 login: CookieLogin | None = None) -> None:
        self.app = app
        self.limits = limits
        self.authenticate = authenticate
        self.is_protected = is_protected
        self.login = login
        self.requests = OwnerSlots(limits.max_requests_per_owner)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = scope["headers"]
        # The HTTP layer bounds a head still arriving; one that arrived whole is measured here.
        head_bytes = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"") + sum(
            len(k) + len(v) + 4 for k, v in headers)
        if len(headers) > self.limits.max_headers or head_bytes > self.limits.max_header_bytes:
            await send_error(send, 431, "headers_too_large",
                             f"at most {self.limits.max_headers} header fields and "
                             f"{self.limits.max_header_bytes} bytes of request head", close=True)
            return
        length = _content_length(headers)
        has_body = length != 0
        owner = None
        bearer = self.is_protected(scope["path"])
        if bearer or (self.login is not None and self.login.is_protected(scope["path"])):
            if bearer:
                owner = await self._owner(headers, send, has_body)
            else:
                owner = await self._cookie_owner(scope, send, has_body)
            if owner is None:
                return
            if self.requests.acquire(owner) is not None:
                await send_error(send, 429, "too_many_requests",
                                 f"at most {self.limits.max_requests_per_owner} requests in progress "
                                 "per owner; retry later",
                                 {"Retry-After": str(self.limits.retry_after_s)}, close=has_body)
                return
            scope[OWNER_KEY] = owner
        try:
            body = await self._read_body(length, receive, send)
            if body is None:
                return
            await self.app(scope, _replay(body, receive), send)
        finally:
            if owner is not None:
                self.requests.release(owner)

    async def _owner(self, headers: list[tuple[bytes, bytes]], send: Send, has_body: bool) -> str | None:
        values = [v for k, v in headers if k == b"authorization"]
        message = "missing bearer token (Authorization: Bearer <token>)"
        who = None
        if len(values) == 1:
            scheme, _, token = values[0].decode("latin-1").partition(" ")
            token = token.strip()
            if scheme.lower() != "bearer" or not _token_ok(token):
                message = "malformed Authorization header; expected 'Bearer <token>'"
            else:
                who = await anyio.to_thread.run_sync(self.authenticate, token)
                message = "unknown or revoked token"
        elif values:
            message = "more than one Authorization header"
        if who is None:
            await send_error(send, 401, "unauthorized", message, {"WWW-Authenticate": "Bearer"}, close=has_body)
        return who

    async def _cookie_owner(self, scope: Scope, send: Send, has_body: bool) -> str | None:
        """The owner of the login cookie's token, or ``None`` after sending the browser to log in."""
        assert self.login is not None
        cookies: dict[str, str] = {}
        for k, v in scope["headers"]:
            if k == b"cookie":
                cookies.update(cookie_parser(v.decode("latin-1")))
        token = cookies.get(self.login.cookie)
        if token is None:
            target = f"{self.login.login_path}?next={quote(scope['path'], safe='/')}"
            await _redirect(send, target, close=has_body)
            return None
        who = await anyio.to_thread.run_sync(self.authenticate, token) if _token_ok(token) else None
        if who is None:
            # Unknown, revoked or malformed: the login page says so, and the cookie goes.
            await _redirect(send, f"{self.login.login_path}?error=expired", close=has_body,
                            clear_cookie=self.login.cookie)
        return who

    async def _read_body(self, length: int | None, receive: Receive, send: Send) -> bytes | None:
        cap = self.limits.max_body_bytes
        too_large = f"request body larger than {cap} bytes"
        if length is not None and length < 0:
            await send_error(send, 400, "bad_request", "malformed Content-Length header", close=True)
            return None
        if length is not None and length > cap:
            await send_error(send, 413, "payload_too_large", too_large, close=True)
            return None
        chunks: list[bytes] = []
        size = 0
        try:
            with anyio.fail_after(self.limits.body_timeout_s):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > cap:
                        await send_error(send, 413, "payload_too_large", too_large, close=True)
                        return None
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(chunks)
        except TimeoutError:
            await send_error(send, 408, "request_timeout",
                             f"the request body took longer than {self.limits.body_timeout_s:g} s",
                             close=True)
            return None


async def _redirect(send: Send, location: str, close: bool = False,
                    clear_cookie: str | None = None) -> None:
    """``303 See Other`` to ``location`` (a path of this server), optionally clearing a cookie."""
    raw = [(b"location", location.encode("latin-1")), (b"content-length", b"0"),
           (b"cache-control", b"no-store")]
    if clear_cookie is not None:
        raw.append((b"set-cookie", f"{clear_cookie}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict".encode()))
    if close:
        raw.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": 303, "headers": raw})
    await send({"type": "http.response.body", "body": b""})


def _content_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    """The declared length; ``None`` if absent (chunked), ``-1`` if malformed."""
    values = {v.strip() for k, v in headers if k == b"content-length"}
    if not values:
        return None
    if len(values) > 1:
        return -1
    value = values.pop()
    if not value.isdigit():
        return -1
    return int(value) if len(value) <= 18 else 10**18  # absurdly long: simply too large (413)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands out the already read ``body``, then defers to the server's."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


# ------------------------------------------------------------------------------ HTTP server
class _HeadTimeoutH11(H11Protocol):
    """uvicorn's h11 protocol plus a deadline on receiving a complete request head.

    uvicorn times out idle keep-alive connections but not a client that trickles a request
    line and headers forever (slowloris): this closes the connection when no complete request
    head has arrived ``head_timeout`` seconds after connecting or after the previous response.
    """

    head_timeout: float = 15.0
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def on_response_complete(self) -> None:
        # Armed before the base class starts a pipelined request (which replaces self.cycle).
        self._arm_head_timer()
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        super().connection_lost(exc)

    def _arm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self.loop.call_later(self.head_timeout, self._on_head_timeout, self.cycle)

    def _on_head_timeout(self, cycle: Any) -> None:
        if self.cycle is cycle and not self.transport.is_closing():
            self.transport.close()


def uvicorn_config(app: Any, host: str, port: int, limits: ServiceLimits, log_level: str = "warning") -> Any:
    """The ``uvicorn.Config`` that serves ``app`` within ``limits`` (h11, bounded heads, timeouts)."""
    import uvicorn

    protocol = type("HeadTimeoutH11", (_HeadTimeoutH11,), {"head_timeout": limits.header_timeout_s})
    return uvicorn.Config(
        app, host=host, port=port, log_level=log_level, http=protocol,
        h11_max_incomplete_event_size=limits.max_header_bytes,
        timeout_keep_alive=limits.keep_alive_timeout_s,
        limit_concurrency=limits.max_connections,
        server_header=False, proxy_headers=False,
    )
