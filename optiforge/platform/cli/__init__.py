"""The ``optiforge`` command line (typer). Sub-command groups live in sibling modules."""

from optiforge.platform.cli.main import app, main

__all__ = ["app", "main"]
