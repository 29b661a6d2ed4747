"""One clear line and exit code 2 for bad input; never a traceback for a user's mistake.

Commands validate their arguments where they read them (naming the argument); the helpers
here are the checks several commands share: JSON option values and user-named text files.
:func:`user_errors` turns what the library raises for bad input into ``error: ...``.
"""

from __future__ import annotations

import functools
import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from optiforge.extras import MissingExtraError
from optiforge.platform.config import InsecurePermissionsWarning

F = TypeVar("F", bound=Callable[..., Any])

USAGE_ERROR = 2
MAX_MESSAGE = 500
"""Longest error line printed: a message quoting a 10 MB argument must not print 10 MB."""


def fail(message: str) -> typer.Exit:
    """Print ``error: message`` (one line, at most ``MAX_MESSAGE`` characters) to stderr and
    return the exit to raise."""
    line = " ".join(str(message).split())
    if len(line) > MAX_MESSAGE:
        line = line[: MAX_MESSAGE - 20] + f"... ({len(line)} characters)"
    print(f"error: {line}", file=sys.stderr)
    return typer.Exit(USAGE_ERROR)


def user_errors(func: F) -> F:
    """Turn the library's bad-input exceptions into ``error: ...`` and exit 2.

    ``ValueError``/``TypeError``/``FileNotFoundError``/``KeyError`` and a missing extra carry
    the library's own message, which names the argument. ``OverflowError`` and
    ``RecursionError`` are a last resort: input too large or too deeply nested for a check
    that should have caught it first.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with warnings.catch_warnings():
                warnings.showwarning = _show_warning
                return func(*args, **kwargs)
        except (ValueError, TypeError, FileNotFoundError, KeyError, MissingExtraError) as exc:
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            raise fail(str(msg)) from None
        except OverflowError as exc:
            raise fail(f"a number is out of range ({exc})") from None
        except RecursionError:
            raise fail("the input is nested too deeply") from None

    return wrapper  # type: ignore[return-value]


_default_showwarning = warnings.showwarning


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    # The user's own setup (a shared home) deserves one plain line, not a source location.
    if issubclass(category, InsecurePermissionsWarning):
        print(f"warning: {message}", file=sys.stderr)
        return
    _default_showwarning(message, category, filename, lineno, file, line)


def parse_json(text: str, what: str) -> Any:
    """Parse a JSON option value; a ValueError naming ``what`` if it is not JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what}: not valid JSON ({exc.msg} at line {exc.lineno} "
                         f"column {exc.colno})") from None
    except RecursionError:
        raise ValueError(f"{what}: JSON nested too deeply") from None


def read_text_file(path: Path, what: str) -> str:
    """The UTF-8 text of a file the user named; a ValueError naming ``what`` otherwise."""
    if not path.exists():
        raise ValueError(f"{what}: no such file {str(path)!r}")
    if path.is_dir():
        raise ValueError(f"{what}: {str(path)!r} is a folder, not a file")
    if not path.is_file():
        raise ValueError(f"{what}: {str(path)!r} is not a regular file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"{what}: cannot read {str(path)!r}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what}: {str(path)!r} is not UTF-8 text (invalid byte at offset "
                         f"{exc.start})") from None
