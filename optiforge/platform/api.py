"""The black-box optimizer HTTP service (FastAPI): studies, ask, tell, trials, best.

Run it with ``optiforge serve --host 127.0.0.1 --port 8000``; the OpenAPI schema is at
``/openapi.json`` and interactive docs at ``/docs``. Every ``/v1`` route needs
``Authorization: Bearer <token>`` (``optiforge token create --owner NAME``); a study is
visible only to its owner (another owner's study answers 404, exactly like a missing one).

Errors are JSON ``{"error": <kind>, "message": <one line>}`` with a 4xx status: 401 (no or
bad token), 404 (unknown study or trial), 409 (trial already told), 422 (malformed input,
naming the field). A bug answers 500 with the same shape and the server keeps serving.

::

    curl -s -X POST localhost:8000/v1/studies -H "Authorization: Bearer $TOKEN" \\
         -d '{"space": {"x": {"type": "float", "low": -5, "high": 10}}}'
    curl -s -X POST localhost:8000/v1/studies/$ID/ask -H "Authorization: Bearer $TOKEN" -d '{"n": 2}'
    curl -s -X POST localhost:8000/v1/studies/$ID/tell -H "Authorization: Bearer $TOKEN" \\
         -d '{"trial_id": 1, "value": 0.25}'
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any, Literal

from fastapi import Depends, FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from optiforge.platform.store import ConflictError, NotFoundError, Store
from optiforge.platform.study import Study, Trial, validate_study

log = logging.getLogger("optiforge.api")

API_VERSION = "v1"


class AuthError(Exception):
    """Missing or unknown bearer token (answered 401)."""


# ---------------------------------------------------------------------------- schemas
class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StudyCreate(_Body):
    space: dict[str, Any] = Field(description="Search space, e.g. {\"x\": {\"type\": \"float\", \"low\": 0, \"high\": 1}}")
    direction: Literal["minimize", "maximize"] = "minimize"
    agent: str = Field("hollm", description="hollm | random")
    agent_options: dict[str, Any] | None = Field(None, description="HOLLM options: proposer, predictor, llm, n_initial, m, k, b, alpha_max, alpha_min, budget, seed")
    name: str | None = None
    seed: int | None = Field(None, ge=0)


class AskBody(_Body):
    n: int = Field(1, ge=1, le=1000, strict=True)


class TellBody(_Body):
    trial_id: int = Field(strict=True)
    value: float | None = Field(None, strict=True)
    state: Literal["complete", "failed"] = "complete"


class AddTrialBody(_Body):
    params: dict[str, Any]
    value: float | None = Field(None, strict=True)
    state: Literal["complete", "failed"] = "complete"


class TrialOut(BaseModel):
    id: int
    number: int
    params: dict[str, Any]
    value: float | None
    state: str


class StudyOut(BaseModel):
    id: str
    name: str | None
    space: dict[str, Any]
    direction: str
    agent: str
    agent_options: dict[str, Any]
    n_trials: int


class AskOut(BaseModel):
    trials: list[TrialOut]


class TrialsOut(BaseModel):
    trials: list[TrialOut]


class BestOut(BaseModel):
    trial: TrialOut | None


class StudiesOut(BaseModel):
    studies: list[StudyOut]


def _trial_out(t: Trial) -> dict[str, Any]:
    return t.to_dict()


# ---------------------------------------------------------------------------- app
def _error(status: int, kind: str, message: str) -> JSONResponse:
    return JSONResponse({"error": kind, "message": message}, status_code=status)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "body"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def create_app(store: Store | str | None = None, *, max_cached_studies: int = 256) -> FastAPI:
    """Build the FastAPI application over ``store`` (a Store, a database URL, or the default)."""
    st = store if isinstance(store, Store) else Store(store)
    app = FastAPI(
        title="optiforge black-box optimizer",
        version="0.1.0",
        description="Ask/tell black-box optimization (HOLLM) with bearer-token auth.",
    )
    app.state.store = st
    studies: OrderedDict[str, Study] = OrderedDict()
    cache_lock = threading.Lock()

    # -------------------------------------------------------------- errors
    @app.exception_handler(AuthError)
    async def _auth(_: Request, exc: AuthError) -> JSONResponse:
        resp = _error(401, "unauthorized", str(exc))
        resp.headers["WWW-Authenticate"] = "Bearer"
        return resp

    @app.exception_handler(NotFoundError)
    async def _nf(_: Request, exc: NotFoundError) -> JSONResponse:
        return _error(404, "not_found", str(exc))

    @app.exception_handler(ConflictError)
    async def _conflict(_: Request, exc: ConflictError) -> JSONResponse:
        return _error(409, "conflict", str(exc))

    @app.exception_handler(ValueError)
    async def _value(_: Request, exc: ValueError) -> JSONResponse:
        return _error(422, "invalid", str(exc))

    @app.exception_handler(TypeError)
    async def _type(_: Request, exc: TypeError) -> JSONResponse:
        return _error(422, "invalid", str(exc))

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, "invalid", _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return _error(exc.status_code, kind, str(exc.detail))

    @app.exception_handler(Exception)
    async def _bug(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return _error(500, "internal", f"internal error: {type(exc).__name__}")

    # -------------------------------------------------------------- auth
    def owner(authorization: str | None = Header(None, description="Bearer <token>")) -> str:
        if not authorization:
            raise AuthError("missing bearer token (Authorization: Bearer <token>)")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError("malformed Authorization header; expected 'Bearer <token>'")
        who = st.owner_for_token(token.strip())
        if who is None:
            raise AuthError("unknown or revoked token")
        return who

    def study_for(study_id: str, who: str) -> Study:
        with cache_lock:
            s = studies.get(study_id)
            if s is not None:
                studies.move_to_end(study_id)
        if s is None:
            s = Study(st, study_id, owner=who)
            with cache_lock:
                s = studies.setdefault(study_id, s)
                while len(studies) > max_cached_studies:
                    studies.popitem(last=False)
        if s.owner != who:
            raise NotFoundError(f"study_id: no study {study_id!r}")
        return s

    def study_out(s: Study) -> dict[str, Any]:
        rec = st.get_study(s.id)
        return {**s.to_dict(), "n_trials": rec.n_trials}

    # -------------------------------------------------------------- routes
    @app.get("/v1/health", tags=["meta"])
    def health() -> dict[str, str]:
        """Liveness probe (no token needed)."""
        return {"status": "ok"}

    @app.post("/v1/studies", response_model=StudyOut, status_code=201, tags=["studies"])
    def create_study(body: StudyCreate, who: str = Depends(owner)) -> dict[str, Any]:
        """Create a study owned by the token's owner."""
        opts = dict(body.agent_options or {})
        if body.seed is not None:
            opts["seed"] = body.seed
        space, opts = validate_study(body.space, body.direction, body.agent, opts)
        sid = st.create_study(who, space.to_dict(), body.direction, body.agent, opts, name=body.name)
        return study_out(study_for(sid, who))

    @app.get("/v1/studies", response_model=StudiesOut, tags=["studies"])
    def list_studies(who: str = Depends(owner)) -> dict[str, Any]:
        """The caller's studies, newest first."""
        return {"studies": [
            {"id": r.id, "name": r.name, "space": r.space, "direction": r.direction, "agent": r.agent,
             "agent_options": r.agent_options or {}, "n_trials": r.n_trials}
            for r in st.list_studies(who)
        ]}

    @app.get("/v1/studies/{study_id}", response_model=StudyOut, tags=["studies"])
    def get_study(study_id: str, who: str = Depends(owner)) -> dict[str, Any]:
        return study_out(study_for(study_id, who))

    @app.post("/v1/studies/{study_id}/ask", response_model=AskOut, tags=["trials"])
    def ask(study_id: str, body: AskBody | None = None, who: str = Depends(owner)) -> dict[str, Any]:
        """Suggest ``n`` points; each becomes a running trial."""
        n = body.n if body is not None else 1
        return {"trials": [_trial_out(t) for t in study_for(study_id, who).ask(n)]}

    @app.post("/v1/studies/{study_id}/tell", response_model=TrialOut, tags=["trials"])
    def tell(study_id: str, body: TellBody, who: str = Depends(owner)) -> dict[str, Any]:
        """Report a trial's value, or ``{"trial_id": ..., "state": "failed"}``."""
        return _trial_out(study_for(study_id, who).tell(body.trial_id, body.value, body.state))

    @app.post("/v1/studies/{study_id}/trials", response_model=TrialOut, status_code=201, tags=["trials"])
    def add_trial(study_id: str, body: AddTrialBody, who: str = Depends(owner)) -> dict[str, Any]:
        """Record a point evaluated elsewhere."""
        return _trial_out(study_for(study_id, who).add_trial(body.params, body.value, body.state))

    @app.get("/v1/studies/{study_id}/trials", response_model=TrialsOut, tags=["trials"])
    def trials(study_id: str, state: str | None = None, who: str = Depends(owner)) -> dict[str, Any]:
        """All trials by number (``?state=complete`` to filter; comma-separated for several)."""
        states = [s.strip() for s in state.split(",")] if state else None
        return {"trials": [_trial_out(t) for t in study_for(study_id, who).get_trials(states)]}

    @app.get("/v1/studies/{study_id}/best", response_model=BestOut, tags=["trials"])
    def best(study_id: str, who: str = Depends(owner)) -> dict[str, Any]:
        """The best complete trial (``null`` before the first)."""
        b = study_for(study_id, who).best_trial
        return {"trial": None if b is None else _trial_out(b)}

    return app


def serve(host: str = "127.0.0.1", port: int = 8000, store: Store | str | None = None,
          log_level: str = "warning") -> None:
    """Run the service with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(create_app(store), host=host, port=port, log_level=log_level)
