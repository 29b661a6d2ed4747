"""Argument checks for the public boundaries: each error names the offending argument.

One module for every layer (a leaf, like :mod:`optiforge.types`): the CLI, the HTTP API, the
store, the study and the methods library validate their inputs with these functions, so the
same mistake gets the same message everywhere (``"<name>: <what is wrong>, got <value>"``).
Inner code trusts what a boundary validated.

Echoed values are cut to :data:`MAX_ECHO` characters, so a huge bad value never comes back
in full in an error message.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

C = TypeVar("C")

MAX_NAME = 200
MAX_ECHO = 80


class UnknownTaskError(ValueError):
    """No task of that name (heuristic or black-box); a known name with a bad part, such as a
    black-box dimension or a ``@shift`` instance, raises a plain ``ValueError`` instead."""


def shown(value: Any) -> str:
    """``repr(value)``, cut to :data:`MAX_ECHO` characters for error messages."""
    try:
        text_ = repr(value)
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not turn a 4xx into a crash
        text_ = f"<{type(value).__name__}>"
    return text_ if len(text_) <= MAX_ECHO else text_[: MAX_ECHO - 3] + "..."


def text(value: Any, name: str, *, optional: bool = False, max_len: int | None = MAX_NAME,
         empty: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a string, got {type(value).__name__}")
    if not empty and not value.strip():
        raise ValueError(f"{name}: must not be empty")
    if max_len is not None and len(value) > max_len:
        raise ValueError(f"{name}: longer than {max_len} characters")
    return value


MAX_INT32 = 2**31 - 1
"""Largest value of an ``Integer`` column on every backend (PostgreSQL's ``integer``)."""


def integer(value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer (numpy integers accepted, bools refused) in ``[minimum, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {type(value).__name__} {shown(value)}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {shown(value)}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name}: must be <= {maximum}, got {shown(value)}")
    return value


def real(value: Any, name: str, *, optional: bool = False, minimum: float | None = None,
         maximum: float | None = None, hint: str = "") -> float | None:
    """A finite float (``None`` allowed when ``optional``); NaN/inf are refused."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__} {shown(value)}")
    try:
        value = float(value)
    except OverflowError:  # an int too large for a float
        raise ValueError(f"{name}: must be finite, got an integer of {len(str(value))} digits{hint}") from None
    if not math.isfinite(value):
        raise ValueError(f"{name}: must be finite, got {value}{hint}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name}: must be <= {maximum}, got {value}")
    return value


def finite(value: Any, name: str, *, hint: str = "") -> float:
    """A finite number as a float (``hint`` is appended to the error message)."""
    return real(value, name, hint=hint)  # type: ignore[return-value]


def nonneg(value: Any, name: str) -> float:
    """A finite number >= 0."""
    return real(value, name, minimum=0.0)  # type: ignore[return-value]


def positive(value: Any, name: str) -> float:
    """A finite number > 0."""
    v = finite(value, name)
    if v <= 0:
        raise ValueError(f"{name}: must be > 0, got {v}")
    return v


def unit(value: Any, name: str, *, closed: bool = False) -> float:
    """A number in ``[0, 1)`` (``[0, 1]`` when ``closed``)."""
    v = finite(value, name)
    if not (0.0 <= v <= 1.0) or (v == 1.0 and not closed):
        raise ValueError(f"{name}: must be in [0, 1{']' if closed else ')'}, got {v}")
    return v


def boolean(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if getattr(value, "dtype", None) is not None and value.dtype.kind == "b":  # numpy.bool_
        return bool(value)
    raise TypeError(f"{name}: expected a bool, got {type(value).__name__}")


def choice(value: Any, name: str, choices: tuple[str, ...] | list[str]) -> str:
    """One of ``choices`` (strings)."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}: must be one of {', '.join(choices)}; got {shown(value)}")
    return value


def output_file(path: Any, name: str) -> Path:
    """A file path to write to, checked before any work: not a folder, and its folder exists
    or can be made (it is made here), so that a long run never ends on an unwritable path."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{name}: {shown(str(p))} is a folder; give a file path")
    blocker = next((a for a in p.parents if a.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise ValueError(f"{name}: cannot write {shown(str(p))}: {shown(str(blocker))} is a file, not a folder")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # e.g. no permission
        raise ValueError(f"{name}: cannot write into {shown(str(p.parent))} ({exc.strerror or exc})") from None
    return p


def json_dict(value: Any, name: str, *, optional: bool = False) -> dict[str, Any]:
    """A JSON-safe deep copy of ``value`` (a dict with str keys).

    Copying here means the caller can't mutate what was stored, and what comes back from the
    database equals what went in on every backend (PostgreSQL's JSONB rejects NaN, so it is
    refused up front rather than silently turned into something else).
    """
    if value is None and optional:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"{name}: expected a dict, got {type(value).__name__}")
    return _json(value, name)


def _json(value: Any, path: str) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if getattr(value, "dtype", None) is not None and getattr(value, "shape", None) == ():
        value = value.item()  # numpy scalar
        if isinstance(value, bool):
            return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        if not math.isfinite(f):
            raise ValueError(f"{path}: non-finite number {f} cannot be stored as JSON")
        return f
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{path}: keys must be strings, got {type(k).__name__} {k!r}")
            out[k] = _json(v, f"{path}[{k!r}]")
        return out
    if isinstance(value, (list, tuple)):
        return [_json(v, f"{path}[{i}]") for i, v in enumerate(value)]
    raise TypeError(f"{path}: {type(value).__name__} is not JSON-serializable")


def options(cls: type[C], value: Any, name: str = "agent_options") -> C:
    """Build the dataclass ``cls`` from a mapping of its field names (``None``: the defaults).

    A non-mapping raises TypeError and unknown keys raise ValueError, naming ``name``; the
    values are checked by ``cls`` itself (its ``__post_init__``).
    """
    if value is None:
        return cls()
    if not isinstance(value, Mapping):
        raise TypeError(f"{name}: expected an object, got {type(value).__name__}")
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(value) - known)
    if unknown:
        raise ValueError(f"{name}: unknown option(s) {unknown}; known: {sorted(known)}")
    return cls(**dict(value))
