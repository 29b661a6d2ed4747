"""Entry point of the ``optiforge`` command: registers the sub-command groups."""

from __future__ import annotations

import typer

from optiforge.platform.cli import campaign

app = typer.Typer(
    name="optiforge",
    help="LLM-orchestrated optimization and heuristic discovery.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
campaign.register(app)
from optiforge.platform.cli import study as _study  # noqa: E402

_study.register(app)


def main() -> None:
    app()
