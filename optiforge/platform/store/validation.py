"""Argument checks shared by the Store's methods: each error names the offending argument."""

from __future__ import annotations

import math
import numbers
from typing import Any

MAX_NAME = 200


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


def integer(value: Any, name: str, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {value}")
    return value


def real(value: Any, name: str, *, optional: bool = False, minimum: float | None = None) -> float | None:
    """A finite float (``None`` allowed when ``optional``); NaN/inf are refused."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name}: must be finite, got {value}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {value}")
    return value


def boolean(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if getattr(value, "dtype", None) is not None and value.dtype.kind == "b":  # numpy.bool_
        return bool(value)
    raise TypeError(f"{name}: expected a bool, got {type(value).__name__}")


def choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}: must be one of {', '.join(choices)}; got {value!r}")
    return value


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
