"""One clear line and exit code 2 for bad input; never a traceback for a user's mistake."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from optiforge.extras import MissingExtraError

F = TypeVar("F", bound=Callable[..., Any])

USAGE_ERROR = 2


def fail(message: str) -> typer.Exit:
    """Print ``error: message`` to stderr and return the exit to raise."""
    print(f"error: {message}", file=sys.stderr)
    return typer.Exit(USAGE_ERROR)


def user_errors(func: F) -> F:
    """Turn the library's ValueError/TypeError/FileNotFoundError/KeyError and a missing extra
    into exit 2."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (ValueError, TypeError, FileNotFoundError, KeyError, MissingExtraError) as exc:
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            raise fail(str(msg)) from None

    return wrapper  # type: ignore[return-value]
