"""``optiforge dashboard``: the web dashboard alone, on the embedded store by default.

::

    optiforge token create --owner local        # once: the token to log in with
    optiforge dashboard --port 8080             # then open http://127.0.0.1:8080/

``optiforge serve`` serves the same dashboard at ``/`` beside the HTTP API.
"""

from __future__ import annotations

from pathlib import Path

import typer

from optiforge.extras import require
from optiforge.platform.cli.errors import user_errors
from optiforge.platform.cli.study import DB_OPTION, check_server_options


def register(app: typer.Typer) -> None:
    app.command("dashboard", help="Serve the web dashboard alone (campaigns and studies).")(dashboard)


@user_errors
def dashboard(
    host: str = typer.Option("127.0.0.1", help="Interface to bind (put a TLS reverse proxy in front; see SECURITY.md)."),
    port: int = typer.Option(8080, help="TCP port."),
    db: str = DB_OPTION,
    log_level: str = typer.Option("warning", help="uvicorn log level."),
    limit: list[str] = typer.Option(
        None, "--limit", metavar="NAME=VALUE",
        help="Override one service limit (repeatable), as for `optiforge serve`."),
    config: Path = typer.Option(None, "--config", help="The service's TOML/JSON file (its limits table)."),
) -> None:
    """Serve the dashboard; log in with a token from `optiforge token create --owner NAME`."""
    require("server", "the dashboard")
    from optiforge.platform.dashboard import serve_dashboard
    from optiforge.platform.service.config import build_config
    from optiforge.platform.store import Store

    check_server_options(port, log_level)
    cfg = build_config(config, limit or ())
    store = Store(db)
    typer.echo(f"optiforge dashboard on http://{host}:{port}/ (log in with a token of "
               "`optiforge token create --owner NAME`; Ctrl-C stops it)", err=True)
    serve_dashboard(host=host, port=port, store=store, log_level=log_level, config=cfg)
