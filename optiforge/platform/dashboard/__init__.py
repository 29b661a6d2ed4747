"""The web dashboard: campaigns and studies, for the owner of a bearer token.

``optiforge serve`` serves it at ``/`` beside the API (:func:`mount_dashboard`);
``optiforge dashboard`` serves it alone (:func:`create_dashboard_app`), on the embedded store
by default. See :mod:`optiforge.platform.dashboard.app` for the routes and SECURITY.md for
what it guarantees.
"""

from __future__ import annotations

from fastapi import FastAPI

from optiforge.platform.dashboard.app import is_page, mount_dashboard
from optiforge.platform.service.config import ServiceConfig
from optiforge.platform.service.guard import RequestGuard, uvicorn_config
from optiforge.platform.store import Store

__all__ = ["create_dashboard_app", "is_page", "mount_dashboard", "serve_dashboard"]


def create_dashboard_app(store: Store | str | None = None, config: ServiceConfig | None = None) -> FastAPI:
    """The dashboard without the API, behind the service's request guard and limits.

    Parameters
    ----------
    store : Store or str, optional
        A Store, a database URL, or the default store (``$OPTIFORGE_DB`` or the home's SQLite).
    config : ServiceConfig, optional
        The limits (body size, requests per owner, timeouts); the LLM backends are unused.
    """
    cfg = config or ServiceConfig()
    st = store if isinstance(store, Store) else Store(store)
    app = FastAPI(title="optiforge dashboard", docs_url=None, redoc_url=None, openapi_url=None,
                  redirect_slashes=False)
    app.state.store = st
    login = mount_dashboard(app, st)
    app.add_middleware(RequestGuard, limits=cfg.limits, authenticate=st.owner_for_token,
                       is_protected=lambda path: False, login=login)
    return app


def serve_dashboard(host: str = "127.0.0.1", port: int = 8080, store: Store | str | None = None,
                    log_level: str = "warning", config: ServiceConfig | None = None) -> None:
    """Run :func:`create_dashboard_app` with uvicorn until interrupted."""
    import uvicorn

    cfg = config or ServiceConfig()
    uvicorn.Server(uvicorn_config(create_dashboard_app(store, cfg), host, port, cfg.limits,
                                  log_level)).run()
