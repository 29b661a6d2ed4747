"""Hyper-parameter checks shared by the optimizers (each error names the argument)."""

from __future__ import annotations

import math


def check_nonneg(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def check_finite(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def check_positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def check_unit(name: str, value: float, *, closed: bool = False) -> float:
    """A value in [0, 1) (or [0, 1] when ``closed``)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value and (
        value <= 1 if closed else value < 1
    )
    if not ok:
        raise ValueError(f"{name} must be in [0, 1{']' if closed else ')'}, got {value!r}")
    return float(value)


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return str(value)


def check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value
