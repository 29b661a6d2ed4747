"""``optiforge study | token | serve``: black-box studies from the shell (JSON in, JSON out).

::

    optiforge study create --space '{"x": {"type": "float", "low": -5, "high": 10}}'
    optiforge study ask STUDY_ID --n 2
    optiforge study tell STUDY_ID TRIAL_ID --value 0.25      # or --failed
    optiforge study show STUDY_ID
    optiforge token create --owner alice
    optiforge token list [--owner alice]
    optiforge token revoke --id TOKEN_ID        # or --owner alice, or the token itself
    optiforge serve --host 127.0.0.1 --port 8000 --llm qwen=openai:http://10.0.0.5:8000/v1#Qwen/Qwen2.5-7B-Instruct

The store is ``$OPTIFORGE_DB`` (default ``sqlite:///<home>/optiforge.db``) unless ``--db``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import typer

from optiforge.extras import require
from optiforge.platform.cli.errors import parse_json, read_text_file, user_errors

study_app = typer.Typer(help="Create black-box studies and ask/tell from the shell (JSON output).",
                        no_args_is_help=True)
token_app = typer.Typer(help="Manage API bearer tokens.", no_args_is_help=True)

DB_OPTION = typer.Option(None, "--db", help="Database URL (default $OPTIFORGE_DB or the home store).")


def register(app: typer.Typer) -> None:
    """Add the ``study`` and ``token`` groups and the ``serve`` command to ``app``."""
    app.add_typer(study_app, name="study")
    app.add_typer(token_app, name="token")
    app.command("serve", help="Run the black-box optimizer HTTP service (FastAPI + uvicorn) and the "
                              "web dashboard at /.")(serve)


def check_server_options(port: int, log_level: str) -> None:
    """The checks ``serve`` and ``dashboard`` share (``ValueError`` naming the option)."""
    if not 0 <= port <= 65535:
        raise ValueError(f"port: must be between 0 and 65535, got {port}")
    if log_level not in ("critical", "error", "warning", "info", "debug", "trace"):
        raise ValueError(f"log-level: unknown level {log_level!r}")


def _store(db: str | None) -> Any:
    from optiforge.platform.store import Store

    return Store(db)


def _json_arg(text: str, what: str) -> Any:
    """Parse a JSON option value, or ``@path`` to read it from a file."""
    if text.startswith("@"):
        text = read_text_file(Path(text[1:]), what)
    return parse_json(text, what)


def _emit(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=2, default=str))


@study_app.command("create")
@user_errors
def create(
    space: str = typer.Option(..., help="Search space as JSON, or @file.json."),
    direction: str = typer.Option("minimize", help="minimize | maximize"),
    agent: str = typer.Option("hollm", help="hollm | random | zo-riemannian (manifold parameters)"),
    options: str = typer.Option("{}", "--options", help="agent_options as JSON (proposer, predictor, llm, ...)."),
    seed: int = typer.Option(None, help="Seed of the agent."),
    name: str = typer.Option(None, help="A label for the study."),
    owner: str = typer.Option("local", help="Owner (the HTTP API shows a study only to its owner)."),
    db: str = DB_OPTION,
) -> None:
    """Create a study; prints {"id": ...}."""
    from optiforge.platform.study import create_study

    sp = _json_arg(space, "space")
    opts = _json_arg(options, "options")
    study = create_study(sp, direction=direction, agent=agent, agent_options=opts, storage=_store(db),
                         seed=seed, name=name, owner=owner)
    _emit({"id": study.id, **study.to_dict()})


@study_app.command("ask")
@user_errors
def ask(
    study_id: str = typer.Argument(..., help="Study id."),
    n: int = typer.Option(1, "--n", "-n", help="How many trials to start."),
    db: str = DB_OPTION,
) -> None:
    """Start n trials; prints {"trials": [{id, number, params, ...}]}."""
    from optiforge.platform.study import load_study

    _emit({"trials": [t.to_dict() for t in load_study(study_id, storage=_store(db)).ask(n)]})


@study_app.command("tell")
@user_errors
def tell(
    study_id: str = typer.Argument(..., help="Study id."),
    trial_id: int = typer.Argument(..., help="Trial id (from ask)."),
    value: float = typer.Option(None, help="The objective value."),
    failed: bool = typer.Option(False, "--failed", help="Mark the trial failed instead."),
    db: str = DB_OPTION,
) -> None:
    """Report a trial's value (or --failed); prints the trial."""
    from optiforge.platform.study import load_study

    if failed and value is not None:
        raise ValueError("value: give either --value or --failed, not both")
    if not failed and value is None:
        raise ValueError("value: --value is required (or --failed)")
    if value is not None and not math.isfinite(value):
        raise ValueError(f"value: must be finite, got {value} (use --failed)")
    study = load_study(study_id, storage=_store(db))
    t = study.tell(trial_id, None if failed else value, "failed" if failed else "complete")
    _emit(t.to_dict())


@study_app.command("show")
@user_errors
def show(
    study_id: str = typer.Argument(..., help="Study id."),
    db: str = DB_OPTION,
) -> None:
    """Print the study, its trials and its best trial as JSON."""
    from optiforge.platform.study import load_study

    study = load_study(study_id, storage=_store(db))
    best = study.best_trial
    _emit({"study": study.to_dict(), "trials": [t.to_dict() for t in study.trials],
           "best": None if best is None else best.to_dict()})


@study_app.command("list")
@user_errors
def list_(
    owner: str = typer.Option(None, help="Only this owner's studies."),
    db: str = DB_OPTION,
) -> None:
    """List studies (id, name, direction, agent, trials) as JSON."""
    rows = _store(db).list_studies(owner)
    _emit([{"id": r.id, "owner": r.owner, "name": r.name, "direction": r.direction, "agent": r.agent,
            "n_trials": r.n_trials} for r in rows])


@token_app.command("create")
@user_errors
def token_create(
    owner: str = typer.Option(..., help="Who the token belongs to (owns the studies it creates)."),
    as_json: bool = typer.Option(False, "--json", help='Print {"token", "id", "owner", "created_at"}.'),
    db: str = DB_OPTION,
) -> None:
    """Create a bearer token (stored hashed: this is the only time it is shown)."""
    store = _store(db)
    token = store.create_token(owner)
    if as_json:
        _emit({"token": token, **_token_dict(store.token_info(token))})
    else:
        typer.echo(token)


@token_app.command("list")
@user_errors
def token_list(
    owner: str = typer.Option(None, help="Only this owner's tokens."),
    db: str = DB_OPTION,
) -> None:
    """List tokens as JSON: id, owner, created_at, revoked_at (never the tokens themselves)."""
    _emit([_token_dict(t) for t in _store(db).list_tokens(owner)])


@token_app.command("revoke")
@user_errors
def token_revoke(
    token: str = typer.Argument(None, help="The token to revoke (or use --id / --owner)."),
    token_id: str = typer.Option(None, "--id", help="Revoke the token with this id (see `token list`)."),
    owner: str = typer.Option(None, help="Revoke every token of this owner."),
    db: str = DB_OPTION,
) -> None:
    """Revoke one token (by plaintext or --id) or all of an owner's tokens (--owner)."""
    given = [name for name, value in (("TOKEN", token), ("--id", token_id), ("--owner", owner))
             if value is not None]
    if len(given) != 1:
        raise ValueError("token: give exactly one of TOKEN, --id or --owner"
                         + (f" (got {', '.join(given)})" if given else ""))
    store = _store(db)
    if token is not None:
        store.revoke_token(token)
        typer.echo("revoked")
    elif token_id is not None:
        typer.echo(f"revoked {store.revoke_token_id(token_id).id}")
    else:
        n = store.revoke_owner_tokens(owner)
        typer.echo(f"revoked {n} live token{'s' if n != 1 else ''} of {owner}")


def _token_dict(info: Any) -> dict[str, Any]:
    return {"id": info.id, "owner": info.owner, "created_at": info.created_at.isoformat(),
            "revoked_at": None if info.revoked_at is None else info.revoked_at.isoformat()}


@user_errors
def serve(
    host: str = typer.Option("127.0.0.1", help="Interface to bind (put a TLS reverse proxy in front; see SECURITY.md)."),
    port: int = typer.Option(8000, help="TCP port."),
    db: str = DB_OPTION,
    log_level: str = typer.Option("info", help="uvicorn log level."),
    llm: list[str] = typer.Option(
        None, "--llm", metavar="NAME=SPEC",
        help="Offer an LLM backend to tenants under NAME (repeatable), e.g. "
             "qwen=openai:http://10.0.0.5:8000/v1#Qwen/Qwen2.5-7B-Instruct. Tenants pick it with "
             "agent_options.llm = NAME; they never give a spec themselves."),
    limit: list[str] = typer.Option(
        None, "--limit", metavar="NAME=VALUE",
        help="Override one service limit (repeatable), e.g. max_body_bytes=2097152; the limits "
             "and their defaults are listed in SECURITY.md."),
    config: Path = typer.Option(
        None, "--config", help="TOML (.toml) or JSON file with [limits] and [llm] tables; "
                               "--limit and --llm override it."),
) -> None:
    """Serve the HTTP API (OpenAPI at /openapi.json, docs at /docs) and the dashboard at /."""
    require("server", "the HTTP service")
    from optiforge.platform.api import serve as run
    from optiforge.platform.service.config import build_config

    check_server_options(port, log_level)
    cfg = build_config(config, limit or (), llm or ())
    run(host=host, port=port, store=_store(db), log_level=log_level, config=cfg)
