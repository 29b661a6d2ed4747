"""The dashboard's routes: server-rendered pages, the JSON their scripts poll, static files.

Pages are plain HTML (Jinja2, every value escaped) that work without JavaScript; a small
script draws the plots with the installed Plotly package's own ``plotly.min.js`` (never a
CDN) and polls a running campaign. Authentication is the API's: the login form takes a bearer
token and keeps it in an HttpOnly, SameSite=Strict cookie, which
:class:`~optiforge.platform.service.guard.RequestGuard` checks before a page's request is read,
under the same per-owner limits as the API. Only GETs render data; the two POSTs (log in, log
out) also carry a double-submit CSRF token.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader

from optiforge.platform.dashboard import views
from optiforge.platform.service.guard import OWNER_KEY, CookieLogin
from optiforge.platform.store import NotFoundError, Store
from optiforge.platform.store.campaigns import CANDIDATE_ORDERS
from optiforge.platform.store.records import TRIAL_STATES
from optiforge.platform.store.studies import TRIAL_ORDERS

log = logging.getLogger("optiforge.dashboard")

TOKEN_COOKIE = "optiforge_token"
CSRF_COOKIE = "optiforge_csrf"
LOGIN_PATH = "/login"
MAX_OFFSET = 2**31 - 1
POLL_SECONDS = 3
"""How often a running campaign's page asks for news (one small JSON answer)."""

LOGIN_MESSAGES = {
    "expired": "Your token is unknown, revoked or expired. Log in with a valid token.",
    "invalid": "That token is not valid. Create one with: optiforge token create --owner NAME",
    "csrf": "The login form expired. Please try again.",
    "logged_out": "You are logged out.",
}
"""The only messages the login page shows: chosen by key, so nothing a URL says is echoed."""

SECURITY_HEADERS = {
    # Plotly injects <style> elements (hence 'unsafe-inline' for styles only); no script runs
    # but the dashboard's own files, so escaped text can never become code.
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data:; object-src 'none'; base-uri 'none'; "
                               "frame-ancestors 'none'; form-action 'self'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}


def is_page(path: str) -> bool:
    """Does ``path`` show an owner's data (so it needs the login cookie)?"""
    return path == "/" or path.startswith(("/campaigns/", "/studies/"))


def cookie_login() -> CookieLogin:
    """What the request guard needs to protect the dashboard's pages."""
    return CookieLogin(cookie=TOKEN_COOKIE, is_protected=is_page, login_path=LOGIN_PATH)


@lru_cache(maxsize=1)
def _templates() -> Environment:
    env = Environment(loader=PackageLoader("optiforge.platform.dashboard", "templates"),
                      autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = _num
    return env


def _num(value: Any, digits: int = 4) -> str:
    """A number for a table cell: ``-`` for none, 4 significant digits for floats."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


@lru_cache(maxsize=1)
def _static_files() -> dict[str, Path]:
    """The files under ``/static/``: the dashboard's own and the installed ``plotly.min.js``."""
    here = Path(__file__).resolve().parent / "static"
    files = {p.name: p for p in here.iterdir() if p.suffix in (".css", ".js")}
    try:
        import plotly

        js = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
        if js.is_file():
            files["plotly.min.js"] = js
    except ImportError:  # the pages still work: tables without plots
        log.warning("plotly is not installed: the dashboard shows no plots")
    return files


def _static_version() -> str:
    """A cache-busting suffix: files may be cached for a week, so a new version needs a new URL."""
    try:
        import plotly

        return f"{plotly.__version__}-1"
    except ImportError:
        return "1"


class _BadParam(ValueError):
    """A query parameter that is not what the page accepts (a 400 page names it)."""


def _int_param(request: Request, name: str, default: int, maximum: int = MAX_OFFSET) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or len(raw) > 10 or int(raw) > maximum:
        raise _BadParam(f"{name}: expected a whole number from 0 to {maximum}")
    return int(raw)


def _choice_param(request: Request, name: str, choices: tuple[str, ...], default: str) -> str:
    raw = request.query_params.get(name, default) or default
    if raw not in choices:
        raise _BadParam(f"{name}: expected one of {', '.join(choices)}")
    return raw


def _safe_next(target: str | None) -> str:
    """Where to go after logging in: a dashboard page of this server, never another site."""
    if target and target.startswith("/") and not target.startswith(("//", "/\\")) and is_page(target) \
            and target.isascii() and target.isprintable() and len(target) <= 300:
        return target
    return "/"


class Dashboard:
    """The dashboard over one store; :meth:`add_routes` puts its pages on an app."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.static = _static_files()
        self.version = _static_version()

    def add_routes(self, app: FastAPI) -> None:
        """Register the pages on ``app`` itself (not the OpenAPI document: they are not API)."""
        for path, endpoint, method in (
            ("/login", self.login_form, "GET"),
            ("/login", self.login, "POST"),
            ("/logout", self.logout, "POST"),
            ("/static/{name}", self.static_file, "GET"),
            ("/", self.index, "GET"),
            ("/campaigns/{campaign_id}", self.campaign, "GET"),
            ("/campaigns/{campaign_id}/live.json", self.campaign_live, "GET"),
            ("/campaigns/{campaign_id}/candidates/{number}", self.candidate, "GET"),
            ("/studies/{study_id}", self.study, "GET"),
            ("/studies/{study_id}/plots.json", self.study_plots, "GET"),
        ):
            app.add_api_route(path, endpoint, methods=[method], include_in_schema=False)

    # ------------------------------------------------------------------ rendering
    def _render(self, request: Request, template: str, status: int = 200,
                csrf: str | None = None, **context: Any) -> HTMLResponse:
        csrf = csrf or request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(24)
        html = _templates().get_template(template).render(
            owner=request.scope.get(OWNER_KEY), csrf=csrf, version=self.version,
            has_plotly="plotly.min.js" in self.static, request_path=request.url.path,
            query=request.query_params, poll_seconds=POLL_SECONDS, **context)
        response = HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)
        if request.cookies.get(CSRF_COOKIE) != csrf:
            self._set_cookie(request, response, CSRF_COOKIE, csrf)
        return response

    @staticmethod
    def _set_cookie(request: Request, response: Response, name: str, value: str) -> None:
        # HttpOnly: no script reads it; SameSite=Strict: no other site's page sends it, so
        # neither a cross-site form nor a link from elsewhere acts with the owner's token.
        response.set_cookie(name, value, httponly=True, samesite="strict", path="/",
                            secure=request.url.scheme == "https")

    def _page(self, request: Request, build: Callable[[], dict[str, Any]], template: str) -> Response:
        """Render ``template`` with ``build()``; a missing (or another owner's) item is a 404
        page, a bad query parameter a 400 page."""
        try:
            context = build()
        except NotFoundError:
            return self._render(request, "error.html", 404, title="Not found",
                                message="There is no such campaign, study or candidate.")
        except _BadParam as exc:
            return self._render(request, "error.html", 400, title="Bad request", message=str(exc))
        return self._render(request, template, **context)

    def _json(self, build: Callable[[], dict[str, Any]]) -> Response:
        try:
            return JSONResponse(build(), headers=SECURITY_HEADERS)
        except NotFoundError:
            return JSONResponse({"error": "not_found", "message": "no such item"}, 404,
                                headers=SECURITY_HEADERS)

    # ------------------------------------------------------------------ login
    def login_form(self, request: Request) -> Response:
        message = LOGIN_MESSAGES.get(request.query_params.get("error", ""))
        status = 401 if request.query_params.get("error") == "expired" else 200
        return self._render(request, "login.html", status, message=message,
                            next=_safe_next(request.query_params.get("next")))

    async def _form(self, request: Request) -> dict[str, str]:
        # The guard has already capped the body at max_body_bytes and its sending time.
        body = (await request.body()).decode("utf-8", "replace")
        fields = parse_qs(body, max_num_fields=8)
        return {k: v[0] for k, v in fields.items() if v}

    def _csrf_ok(self, request: Request, form: dict[str, str]) -> bool:
        cookie = request.cookies.get(CSRF_COOKIE, "")
        return bool(cookie) and hmac.compare_digest(cookie.encode(), form.get("csrf", "").encode())

    async def login(self, request: Request) -> Response:
        form = await self._form(request)
        target = _safe_next(form.get("next"))
        if not self._csrf_ok(request, form):
            return self._render(request, "login.html", 403, message=LOGIN_MESSAGES["csrf"], next=target)
        token = form.get("token", "").strip()
        owner = None
        if token and token.isascii() and token.isprintable() and len(token) <= 256:
            owner = await anyio.to_thread.run_sync(self.store.owner_for_token, token)
        if owner is None:
            return self._render(request, "login.html", 401, message=LOGIN_MESSAGES["invalid"], next=target)
        response = RedirectResponse(target, status_code=303, headers={"cache-control": "no-store"})
        self._set_cookie(request, response, TOKEN_COOKIE, token)
        return response

    async def logout(self, request: Request) -> Response:
        form = await self._form(request)
        if not self._csrf_ok(request, form):
            return self._render(request, "error.html", 403, title="Forbidden",
                                message="The form expired; reload the page and log out again.")
        response = RedirectResponse(f"{LOGIN_PATH}?error=logged_out", status_code=303)
        response.delete_cookie(TOKEN_COOKIE, path="/", httponly=True, samesite="strict")
        return response

    def static_file(self, name: str) -> Response:
        path = self.static.get(name)
        if path is None:
            return Response("not found", 404, media_type="text/plain")
        media = "text/css" if name.endswith(".css") else "text/javascript"
        return FileResponse(path, media_type=media, headers={
            "cache-control": "public, max-age=604800, immutable", "x-content-type-options": "nosniff"})

    # ------------------------------------------------------------------ pages
    def index(self, request: Request) -> Response:
        owner = request.scope[OWNER_KEY]
        return self._page(request, lambda: views.overview(
            self.store, owner, _int_param(request, "campaigns", 0), _int_param(request, "studies", 0)),
            "index.html")

    def campaign(self, request: Request, campaign_id: str) -> Response:
        owner = request.scope[OWNER_KEY]

        def build() -> dict[str, Any]:
            valid = {"all": None, "valid": True, "invalid": False}[
                _choice_param(request, "show", ("all", "valid", "invalid"), "all")]
            return views.campaign_page(
                self.store, owner, campaign_id, offset=_int_param(request, "offset", 0),
                order=_choice_param(request, "order", CANDIDATE_ORDERS, "number"), valid=valid)

        return self._page(request, build, "campaign.html")

    def campaign_live(self, request: Request, campaign_id: str) -> Response:
        return self._json(lambda: views.campaign_live(self.store, request.scope[OWNER_KEY], campaign_id))

    def candidate(self, request: Request, campaign_id: str, number: str) -> Response:
        owner = request.scope[OWNER_KEY]

        def build() -> dict[str, Any]:
            if not number.isdigit() or len(number) > 10:
                raise NotFoundError(f"number: no candidate {number!r}")
            return views.candidate_page(self.store, owner, campaign_id, int(number))

        return self._page(request, build, "candidate.html")

    def study(self, request: Request, study_id: str) -> Response:
        owner = request.scope[OWNER_KEY]

        def build() -> dict[str, Any]:
            state = _choice_param(request, "state", ("all", *TRIAL_STATES), "all")
            return views.study_page(
                self.store, owner, study_id, offset=_int_param(request, "offset", 0),
                order=_choice_param(request, "order", TRIAL_ORDERS, "number"),
                states=None if state == "all" else [state])

        return self._page(request, build, "study.html")

    def study_plots(self, request: Request, study_id: str) -> Response:
        return self._json(lambda: views.study_plots(self.store, request.scope[OWNER_KEY], study_id))


def mount_dashboard(app: FastAPI, store: Store) -> CookieLogin:
    """Add the dashboard's routes to ``app``; returns what the request guard must protect.

    The caller adds :class:`~optiforge.platform.service.guard.RequestGuard` with
    ``login=`` this value, so the pages pass the same checks and limits as the API.
    """
    Dashboard(store).add_routes(app)
    return cookie_login()
