"""Entry point of the ``optiforge`` command: registers the sub-command groups."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="optiforge",
    help="LLM-orchestrated optimization and heuristic discovery.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def main() -> None:
    app()
