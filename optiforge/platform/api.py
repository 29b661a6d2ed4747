"""The black-box optimizer HTTP service (FastAPI): studies, ask, tell, trials, best.

Run it with ``optiforge serve --host 127.0.0.1 --port 8000``; the OpenAPI schema is at
``/openapi.json``, interactive docs at ``/docs`` and the web dashboard at ``/`` (log in with a
token; :mod:`optiforge.platform.dashboard`). Every ``/v1`` route but ``/v1/health``
needs ``Authorization: Bearer <token>`` (``optiforge token create --owner NAME``); a study is
visible only to its owner (another owner's study answers 404, exactly like a missing one).

The service is shared by tenants who need not trust each other (see SECURITY.md): the token
is checked before the body is read, every request and every piece of work is bounded by the
operator's :class:`~optiforge.platform.service.config.ServiceLimits`, and tenants choose an
LLM backend only by a name the operator configured (``optiforge serve --llm NAME=SPEC``).

Errors are JSON ``{"error": <kind>, "message": <one line>}``: 400 (unparsable body), 401 (no
or bad token), 404 (unknown study or trial), 405 (with ``Allow``), 408 (body too slow), 409
(trial already told, study full), 413 (body too large), 422 (malformed input, naming the
field), 429 (too many requests of this owner in progress; ``Retry-After``), 431 (too many
headers), 502 (the LLM backend failed), 503 (the server is at its ask capacity;
``Retry-After``). A bug answers 500 with the same shape and the server keeps serving.

::

    curl -s -X POST localhost:8000/v1/studies -H "Authorization: Bearer $TOKEN" \\
         -H 'content-type: application/json' \\
         -d '{"space": {"x": {"type": "float", "low": -5, "high": 10}}}'
    curl -s -X POST localhost:8000/v1/studies/$ID/ask -H "Authorization: Bearer $TOKEN" \\
         -H 'content-type: application/json' -d '{"n": 2}'
    curl -s -X POST localhost:8000/v1/studies/$ID/tell -H "Authorization: Bearer $TOKEN" \\
         -H 'content-type: application/json' -d '{"trial_id": 1, "value": 0.25}'
"""

# No `from __future__ import annotations`: FastAPI must see the request models built inside
# create_app (from the operator's limits) as objects, not as names it cannot resolve.
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Annotated, Any, Literal

import anyio
from fastapi import Depends, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)
from starlette.exceptions import HTTPException as StarletteHTTPException

from optiforge.agents.registry import agent_names
from optiforge.platform.dashboard import mount_dashboard
from optiforge.platform.service.config import ServiceConfig, ServiceLimits
from optiforge.platform.service.guard import OWNER_KEY, OwnerSlots, RequestGuard, uvicorn_config
from optiforge.platform.service.llms import LLMNotOffered, LLMUnavailable, OfferedLLMs
from optiforge.platform.store import ConflictError, NotFoundError, Store
from optiforge.platform.store.studies import MAX_TRIAL_NUMBER
from optiforge.platform.study import Study, Trial, validate_study

log = logging.getLogger("optiforge.api")

API_VERSION = "v1"
MAX_MESSAGE_CHARS = 300
"""Longest error message (what it echoes of the input is cut, so a 1 MB value is not sent back)."""
MAX_SEED = 2**63 - 1
MAX_INT_BOUND = 2**53
"""Largest magnitude of an int parameter's bounds (integers beyond are not exact as JSON numbers)."""
TRIAL_STATES_PATTERN = r"^(waiting|running|complete|failed)(,(waiting|running|complete|failed))*$"
STUDY_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
PUBLIC_PATHS = frozenset({"/v1/health"})


class TooManyRequests(Exception):
    """The owner has reached a concurrency limit (429 with ``Retry-After``)."""


class ServerBusy(Exception):
    """The server has reached its ask capacity (503 with ``Retry-After``)."""


# ---------------------------------------------------------------------------- schemas
class ErrorOut(BaseModel):
    """Every error answer."""

    error: str = Field(description="Kind: unauthorized, not_found, conflict, invalid, ...")
    message: str = Field(description="One line, naming the offending field.")


def _check_text(data: Any) -> Any:
    """Refuse strings that are not valid Unicode (lone surrogates) anywhere in a body.

    ``json`` accepts ``"\\ud800"``; stored, it would make every later answer invalid UTF-8.
    Iterative, so a deeply nested body cannot exhaust the stack.
    """
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("text must be valid Unicode (a lone surrogate escape was sent)") from None
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return data


def _whole(value: Any) -> Any:
    """JSON's integers include ``48.0``; strings and fractions stay errors (strict models)."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**63:
        return int(value)
    return value


Int = Annotated[int, BeforeValidator(_whole)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Request(_Body):
    """A whole request body (checked for lone surrogates once, at the top)."""

    @model_validator(mode="before")
    @classmethod
    def _valid_unicode(cls, data: Any) -> Any:
        return _check_text(data)


def _schemas(limits: ServiceLimits, llm_names: list[str]) -> dict[str, type[BaseModel]]:
    """The request and response models, with the operator's limits in their constraints."""
    Name = Annotated[str, StringConstraints(min_length=1, max_length=limits.max_name_chars)]
    Finite = Annotated[float, Field(allow_inf_nan=False)]
    Bound = Annotated[Int, Field(ge=-MAX_INT_BOUND, le=MAX_INT_BOUND)]

    class FloatParamSpec(_Body):
        type: Literal["float"]
        low: Finite
        high: Finite = Field(description="Must be > low.")
        log: bool = False
        step: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None

    class IntParamSpec(_Body):
        type: Literal["int"]
        low: Bound
        high: Bound = Field(description="Must be > low.")
        step: Int = Field(1, ge=1, le=MAX_INT_BOUND)
        log: bool = False

    class CategoricalParamSpec(_Body):
        type: Literal["categorical"]
        choices: list[Annotated[str, StringConstraints(max_length=limits.max_name_chars)] | Bound | Finite | bool | None] = Field(
            min_length=1, max_length=limits.max_choices, description="Distinct JSON scalars.")

    ManifoldDim = Annotated[Int, Field(ge=2, le=limits.max_manifold_dim)]

    class SimplexParamSpec(_Body):
        type: Literal["simplex"]
        dim: ManifoldDim = Field(description="Number of weights (>= 0, summing to 1).")

    class SphereParamSpec(_Body):
        type: Literal["sphere"]
        dim: ManifoldDim = Field(description="Dimension of the ambient space (unit vectors).")

    class SpdParamSpec(_Body):
        type: Literal["spd"]
        n: Annotated[Int, Field(ge=1, le=limits.max_spd_n)] = Field(description="Matrix size.")
        scale: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 1.0

    ParamSpec = Annotated[FloatParamSpec | IntParamSpec | CategoricalParamSpec | SimplexParamSpec
                          | SphereParamSpec | SpdParamSpec, Field(discriminator="type")]
    bounds = ", ".join(f"{k} <= {v}" for k, v in limits.agent_option_bounds.items())
    llms = ", ".join(llm_names) or "none configured"

    class StudyCreate(_Request):
        space: dict[Name, ParamSpec] = Field(
            min_length=1, max_length=limits.max_params,
            description='Search space, e.g. {"x": {"type": "float", "low": 0, "high": 1}}')
        direction: Literal["minimize", "maximize"] = "minimize"
        agent: Literal[tuple(agent_names("blackbox"))] = "hollm"  # type: ignore[valid-type]
        agent_options: dict[str, Any] | None = Field(
            None, description=f"HOLLM options: proposer, predictor, llm (an offered name: {llms}), "
                              f"n_initial, m, k, b, alpha_max, alpha_min, budget, m0, lam, "
                              f"context_points, retries, temperature, constrained, gaussian_scale, seed. Bounds: {bounds}. "
                              f"zo-riemannian options: budget, eta, mu, schedule, sampler, directions, "
                              f"barrier, seed.")
        name: Name | None = None
        seed: Int | None = Field(None, ge=0, le=MAX_SEED)

    class AskBody(_Request):
        n: Int = Field(1, ge=1, le=limits.max_ask_n)

    class TellBody(_Request):
        trial_id: Int = Field(ge=0, le=MAX_TRIAL_NUMBER)
        value: Finite | None = Field(None, description="Required when state is complete; omitted when failed.")
        state: Literal["complete", "failed"] = "complete"

    class AddTrialBody(_Request):
        params: dict[Name, Any] = Field(max_length=limits.max_params)
        value: Finite | None = None
        state: Literal["complete", "failed"] = "complete"

    return {"StudyCreate": StudyCreate, "AskBody": AskBody, "TellBody": TellBody,
            "AddTrialBody": AddTrialBody}


class TrialOut(BaseModel):
    id: int
    number: int
    params: dict[str, Any]
    value: float | None
    state: Literal["waiting", "running", "complete", "failed"]


class StudyOut(BaseModel):
    id: str
    name: str | None
    space: dict[str, Any]
    direction: Literal["minimize", "maximize"]
    agent: str
    agent_options: dict[str, Any]
    n_trials: int


class AskOut(BaseModel):
    trials: list[TrialOut]


class TrialsOut(BaseModel):
    trials: list[TrialOut]
    next_offset: int | None = Field(description="Pass as ?offset= for the next page; null on the last.")


class BestOut(BaseModel):
    trial: TrialOut | None


class StudiesOut(BaseModel):
    studies: list[StudyOut]
    next_offset: int | None = Field(description="Pass as ?offset= for the next page; null on the last.")


class HealthOut(BaseModel):
    status: Literal["ok"]


def _trial_out(t: Trial) -> dict[str, Any]:
    return t.to_dict()


def _responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    text = {400: "Unparsable body", 401: "Missing, malformed or revoked token", 404: "Unknown study or trial",
            408: "Body sent too slowly", 409: "Conflict (trial already told, study full)",
            413: "Body too large", 422: "Invalid input (the message names the field)",
            429: "Too many requests of this owner in progress (see Retry-After)",
            431: "Too many header fields", 502: "The LLM backend failed",
            503: "At ask capacity (see Retry-After)"}
    retry = {"Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}}
    return {c: {"model": ErrorOut, "description": text[c], **({"headers": retry} if c in (429, 503) else {})}
            for c in codes}


_COMMON = (400, 401, 404, 408, 413, 422, 429, 431)
_STUDY = {"study_id": "$response.body#/id"}
# OpenAPI links: how a client (and a stateful tester) goes from a new study to its operations.
_STUDY_LINKS = {name: {"operationId": name, "parameters": _STUDY}
                for name in ("getStudy", "ask", "addTrial", "listTrials", "best")}
_TRIAL_LINKS = {"tell": {"operationId": "tell", "parameters": {"study_id": "$request.path.study_id"},
                         "requestBody": {"trial_id": "$response.body#/trials/0/id", "value": 1.0}}}


# ---------------------------------------------------------------------------- app
def _error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Response:
    """The one error shape; the message is cut and ASCII-escaped so any echo is safe to send."""
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 3] + "..."
    body = json.dumps({"error": kind, "message": message}, ensure_ascii=True)
    return Response(body, status_code=status, media_type="application/json", headers=headers)


_PATTERN_HINTS = {
    TRIAL_STATES_PATTERN: "expected comma-separated trial states (waiting, running, complete, failed)",
    STUDY_ID_PATTERN: "expected a study id (1-64 letters, digits, '_' or '-')",
}


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "body"
        msg = _PATTERN_HINTS.get((err.get("ctx") or {}).get("pattern"), err.get("msg", "invalid"))
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)


def create_app(store: Store | str | None = None, config: ServiceConfig | None = None, *,
               llms: OfferedLLMs | None = None, dashboard: bool = True) -> FastAPI:
    """Build the FastAPI application over ``store`` (a Store, a database URL, or the default).

    Parameters
    ----------
    store : Store or str, optional
    config : ServiceConfig, optional
        The operator's limits and offered LLM backends (default: the default limits, no LLM).
    llms : OfferedLLMs, optional
        Already built backends (default: built from ``config.llms``, once, here).
    dashboard : bool
        Serve the web dashboard at ``/`` too (:mod:`optiforge.platform.dashboard`).

    Raises
    ------
    ValueError
        An offered LLM backend that cannot be built.
    """
    cfg = config or ServiceConfig()
    limits = cfg.limits
    offered = llms if llms is not None else OfferedLLMs(cfg.llms)
    st = store if isinstance(store, Store) else Store(store)
    schemas = _schemas(limits, offered.names)
    StudyCreate, AskBody = schemas["StudyCreate"], schemas["AskBody"]
    TellBody, AddTrialBody = schemas["TellBody"], schemas["AddTrialBody"]

    app = FastAPI(
        title="optiforge black-box optimizer",
        version="0.1.0",
        description="Ask/tell black-box optimization (HOLLM) with bearer-token auth. "
                    "Limits of this server: " + ", ".join(f"{k}={v}" for k, v in limits.to_dict().items()),
        redirect_slashes=False,
    )
    app.state.store = st
    app.state.limits = limits
    studies: OrderedDict[str, Study] = OrderedDict()
    cache_lock = threading.Lock()
    asks = OwnerSlots(limits.max_asks_per_owner, limits.max_concurrent_asks)
    # Asks get their own threads: however many hang on a slow LLM, the other routes keep theirs.
    ask_threads = anyio.CapacityLimiter(limits.max_concurrent_asks)
    retry_after = {"Retry-After": str(limits.retry_after_s)}

    # -------------------------------------------------------------- errors
    @app.exception_handler(NotFoundError)
    async def _nf(_: Request, exc: NotFoundError) -> Response:
        return _error(404, "not_found", str(exc))

    @app.exception_handler(ConflictError)
    async def _conflict(_: Request, exc: ConflictError) -> Response:
        return _error(409, "conflict", str(exc))

    @app.exception_handler(ValueError)
    async def _value(_: Request, exc: ValueError) -> Response:
        return _error(422, "invalid", str(exc))

    @app.exception_handler(TypeError)
    async def _type(_: Request, exc: TypeError) -> Response:
        return _error(422, "invalid", str(exc))

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> Response:
        return _error(422, "invalid", _validation_message(exc))

    @app.exception_handler(TooManyRequests)
    async def _too_many(_: Request, exc: TooManyRequests) -> Response:
        return _error(429, "too_many_requests", str(exc), retry_after)

    @app.exception_handler(ServerBusy)
    async def _busy(_: Request, exc: ServerBusy) -> Response:
        return _error(503, "busy", str(exc), retry_after)

    @app.exception_handler(LLMUnavailable)
    async def _llm(_: Request, exc: LLMUnavailable) -> Response:
        return _error(502, "llm_unavailable", str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        kind = {400: "bad_request", 404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            # Starlette names only the first route of the path; several routes may share it.
            methods = {m for r in app.router.routes if isinstance(r, APIRoute)
                       and r.path_regex.match(request.url.path) for m in r.methods}
            headers["Allow"] = ", ".join(sorted(methods))
        return _error(exc.status_code, kind, str(exc.detail), headers)

    @app.exception_handler(Exception)
    async def _bug(_: Request, exc: Exception) -> Response:
        log.error("unhandled error", exc_info=exc)
        return _error(500, "internal", f"internal error: {type(exc).__name__}")

    # -------------------------------------------------------------- auth
    bearer = HTTPBearer(auto_error=False, description="A token from `optiforge token create --owner NAME`.")

    async def owner(request: Request, _: HTTPAuthorizationCredentials | None = Depends(bearer)) -> str:
        # The guard authenticated the request before its body was read; this declares the
        # scheme in the OpenAPI document and hands the owner to the route.
        return request.scope[OWNER_KEY]

    def study_for(study_id: str, who: str) -> Study:
        with cache_lock:
            s = studies.get(study_id)
            if s is not None:
                studies.move_to_end(study_id)
        if s is None:
            s = Study(st, study_id, owner=who, llm_resolver=offered)
            with cache_lock:
                s = studies.setdefault(study_id, s)
                while len(studies) > limits.max_cached_studies:
                    studies.popitem(last=False)
        if s.owner != who:
            raise NotFoundError(f"study_id: no study {study_id!r}")
        return s

    def study_out(s: Study) -> dict[str, Any]:
        rec = st.get_study(s.id)
        return {**s.to_dict(), "n_trials": rec.n_trials}

    def room_for(study_id: str, n: int) -> None:
        have = st.get_study(study_id).n_trials
        if have + n > limits.max_trials_per_study:
            raise ConflictError(f"study_id: the study holds {have} trials; this service keeps at most "
                                f"{limits.max_trials_per_study} per study")

    def page(limit: int | None, offset: int, rows: Callable[[int, int], list[Any]]) -> tuple[list[Any], int | None]:
        """One page of ``rows(limit + 1, offset)`` and the next offset (``None`` at the end)."""
        size = limits.page_size if limit is None else limit
        got = rows(size + 1, offset)
        return got[:size], (offset + size if len(got) > size else None)

    StudyId = Annotated[str, PathParam(pattern=STUDY_ID_PATTERN, description="A study id.")]
    Limit = Annotated[int | None, Query(ge=1, le=limits.max_page_size,
                                        description=f"Page size (default {limits.page_size}).")]
    Offset = Annotated[int, Query(ge=0, le=2**31 - 1, description="Items to skip.")]
    Owner = Annotated[str, Depends(owner)]

    # -------------------------------------------------------------- routes
    @app.get("/v1/health", response_model=HealthOut, tags=["meta"], operation_id="health",
             responses=_responses(400, 408, 413, 431))
    async def health() -> dict[str, str]:
        """Liveness probe (no token needed; never waits for a worker thread)."""
        return {"status": "ok"}

    @app.post("/v1/studies", response_model=StudyOut, status_code=201, tags=["studies"],
              operation_id="createStudy", responses={**_responses(*_COMMON), 201: {"links": _STUDY_LINKS}})
    def create_study(body: StudyCreate, who: Owner) -> dict[str, Any]:  # type: ignore[valid-type]
        """Create a study owned by the token's owner."""
        opts = dict(body.agent_options or {})
        if body.seed is not None:
            opts["seed"] = body.seed
        limits.check_agent_options(opts)
        space = {name: p.model_dump(exclude_unset=True) for name, p in body.space.items()}
        sp, opts = validate_study(space, body.direction, body.agent, opts, check_llm=offered.check)
        sid = st.create_study(who, sp.to_dict(), body.direction, body.agent, opts, name=body.name)
        return study_out(study_for(sid, who))

    @app.get("/v1/studies", response_model=StudiesOut, tags=["studies"], operation_id="listStudies",
             responses=_responses(*_COMMON))
    def list_studies(who: Owner, limit: Limit = None, offset: Offset = 0) -> dict[str, Any]:
        """The caller's studies, newest first, a page at a time."""
        rows, nxt = page(limit, offset, lambda n, o: st.list_studies(who, limit=n, offset=o))
        return {"studies": [
            {"id": r.id, "name": r.name, "space": r.space, "direction": r.direction, "agent": r.agent,
             "agent_options": r.agent_options or {}, "n_trials": r.n_trials}
            for r in rows
        ], "next_offset": nxt}

    @app.get("/v1/studies/{study_id}", response_model=StudyOut, tags=["studies"], operation_id="getStudy",
             responses=_responses(*_COMMON))
    def get_study(study_id: StudyId, who: Owner) -> dict[str, Any]:
        return study_out(study_for(study_id, who))

    def run_ask(study_id: str, who: str, n: int) -> dict[str, Any]:
        s = study_for(study_id, who)
        room_for(study_id, n)
        try:
            trials = s.ask(n)
        except (LLMUnavailable, LLMNotOffered, NotFoundError, ConflictError):
            raise  # LLMNotOffered: a study made elsewhere names a backend this server lacks
        except (ValueError, TypeError) as exc:
            # Everything a tenant sent was validated when the study was made: an error now is
            # a library's (scipy, numpy), its text is not the tenant's to read. Logged; a 500.
            raise RuntimeError(f"ask failed inside the agent: {type(exc).__name__}") from exc
        return {"trials": [_trial_out(t) for t in trials]}

    @app.post("/v1/studies/{study_id}/ask", response_model=AskOut, tags=["trials"], operation_id="ask",
              responses={**_responses(*_COMMON, 409, 502, 503), 200: {"links": _TRIAL_LINKS}})
    async def ask(study_id: StudyId, who: Owner, body: AskBody | None = None) -> dict[str, Any]:  # type: ignore[valid-type]
        """Suggest ``n`` points; each becomes a running trial.

        At most ``max_asks_per_owner`` asks of one owner run at once (429 past it) and
        ``max_concurrent_asks`` in all (503 past it): asks are refused, never queued.
        """
        n = body.n if body is not None else 1
        full = asks.acquire(who)
        if full == "owner":
            raise TooManyRequests(f"at most {limits.max_asks_per_owner} asks in progress per owner; retry later")
        if full == "total":
            raise ServerBusy(f"the server runs {limits.max_concurrent_asks} asks already; retry later")
        try:
            return await anyio.to_thread.run_sync(run_ask, study_id, who, n, limiter=ask_threads)
        finally:
            asks.release(who)

    @app.post("/v1/studies/{study_id}/tell", response_model=TrialOut, tags=["trials"], operation_id="tell",
              responses=_responses(*_COMMON, 409))
    def tell(study_id: StudyId, body: TellBody, who: Owner) -> dict[str, Any]:  # type: ignore[valid-type]
        """Report a trial's value, or ``{"trial_id": ..., "state": "failed"}``."""
        return _trial_out(study_for(study_id, who).tell(body.trial_id, body.value, body.state))

    @app.post("/v1/studies/{study_id}/trials", response_model=TrialOut, status_code=201, tags=["trials"],
              operation_id="addTrial", responses=_responses(*_COMMON, 409))
    def add_trial(study_id: StudyId, body: AddTrialBody, who: Owner) -> dict[str, Any]:  # type: ignore[valid-type]
        """Record a point evaluated elsewhere."""
        s = study_for(study_id, who)
        room_for(study_id, 1)
        return _trial_out(s.add_trial(body.params, body.value, body.state))

    @app.get("/v1/studies/{study_id}/trials", response_model=TrialsOut, tags=["trials"],
             operation_id="listTrials", responses=_responses(*_COMMON))
    def trials(study_id: StudyId, who: Owner,
               state: Annotated[str | None, Query(pattern=TRIAL_STATES_PATTERN, max_length=200,
                                                  description="Comma-separated states to keep.")] = None,
               limit: Limit = None, offset: Offset = 0) -> dict[str, Any]:
        """Trials by number, a page at a time (``?state=complete`` to filter)."""
        states = state.split(",") if state else None
        s = study_for(study_id, who)
        rows, nxt = page(limit, offset, lambda n, o: s.get_trials(states, limit=n, offset=o))
        return {"trials": [_trial_out(t) for t in rows], "next_offset": nxt}

    @app.get("/v1/studies/{study_id}/best", response_model=BestOut, tags=["trials"], operation_id="best",
             responses=_responses(*_COMMON))
    def best(study_id: StudyId, who: Owner) -> dict[str, Any]:
        """The best complete trial (``null`` before the first)."""
        b = study_for(study_id, who).best_trial
        return {"trial": None if b is None else _trial_out(b)}

    # The dashboard's pages take the same tokens (from a login cookie) under the same guard.
    login = mount_dashboard(app, st) if dashboard else None
    app.add_middleware(
        RequestGuard, limits=limits, authenticate=st.owner_for_token,
        is_protected=lambda path: path.startswith("/v1/") and path not in PUBLIC_PATHS, login=login)
    return app


def serve(host: str = "127.0.0.1", port: int = 8000, store: Store | str | None = None,
          log_level: str = "warning", config: ServiceConfig | None = None) -> None:
    """Run the service with uvicorn until interrupted (within ``config.limits``)."""
    import uvicorn

    cfg = config or ServiceConfig()
    app = create_app(store, cfg)
    uvicorn.Server(uvicorn_config(app, host, port, cfg.limits, log_level)).run()
