"""Robust parsing of LLM answers: JSON candidate objects and lists of predicted values.

Small models wrap JSON in prose or code fences, use single quotes, trailing commas or
unquoted keys, or stop mid-list. The parsers recover every complete, well-formed item and
ignore the rest; the caller decides whether enough came back (and retries if not).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

_OBJECT = re.compile(r"\{[^{}]*\}")
_FLAT_LIST = re.compile(r"\[[^\[\]{}]*\]")
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_UNQUOTED_KEY = re.compile(r"([{,]\s*)([A-Za-z_][\w\-]*)\s*:")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_LINE_PREFIX = re.compile(r"^\s*(?:\d+[.):]\s+|[-*]\s+|[pP]\d+:\s*)")  # "1. ", "- ", the "p1: " label
_SEPARATORS = re.compile(r"[,;\s]+")


def _loads_lenient(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    fixed = _TRAILING_COMMA.sub(r"\1", text.replace("'", '"'))
    fixed = _UNQUOTED_KEY.sub(r'\1"\2":', fixed)
    try:
        return json.loads(fixed)
    except ValueError:
        return None


def _as_float(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        f = float(v)
    elif isinstance(v, str):
        try:
            f = float(v.strip())
        except ValueError:
            return None
    else:
        return None
    return f if math.isfinite(f) else None


def parse_candidates(text: str, names: Sequence[str]) -> list[tuple[list[float], float | None]]:
    """Extract points ``[(coords, predicted_value_or_None), ...]`` from an LLM answer.

    Accepts objects with every name in ``names`` (plus an optional ``"value"``), else flat
    lists of ``d`` (or ``d + 1``, the last being the value) numbers, else lines of ``d`` or
    ``d + 1`` numbers separated by commas or spaces (the proposer prompt's format). Items
    missing a coordinate or holding non-numbers are skipped.
    """
    out: list[tuple[list[float], float | None]] = []
    for m in _OBJECT.finditer(text):
        obj = _loads_lenient(m.group(0))
        coords: list[float] = []
        if isinstance(obj, dict):
            for n in names:
                v = _as_float(obj.get(n))
                if v is None:
                    break
                coords.append(v)
            value = _as_float(obj.get("value"))
        else:
            # Not JSON even after repairs: read ``name: number`` pairs directly.
            raw = m.group(0)
            for n in names:
                hit = re.search(
                    r'["\']?' + re.escape(n) + r'["\']?\s*[:=]\s*(' + _NUMBER + ")", raw
                )
                if hit is None:
                    break
                coords.append(float(hit.group(1)))
            hit = re.search(r'["\']?value["\']?\s*[:=]\s*(' + _NUMBER + ")", raw)
            value = float(hit.group(1)) if hit else None
        if len(coords) == len(names) and all(math.isfinite(c) for c in coords):
            out.append((coords, value))
    if out:
        return out
    d = len(names)
    for m in _FLAT_LIST.finditer(text):
        _append_numbers(out, [_as_float(x) for x in m.group(0)[1:-1].split(",") if x.strip()], d)
    if out:
        return out
    # Lines of numbers, as the proposer prompt asks for (``x1,...,xd,value``); a leading
    # list marker ("1.", "-", the constrained format's "p1:") and enclosing brackets are ignored.
    for line in text.splitlines():
        body = _LINE_PREFIX.sub("", line).strip().strip("[]()").strip()
        if body:
            _append_numbers(
                out, [_as_float(x) for x in _SEPARATORS.split(body) if x], d, run_on=True
            )
    return out


def _append_numbers(
    out: list[tuple[list[float], float | None]],
    nums: list[float | None],
    d: int,
    run_on: bool = False,
) -> None:
    """Append ``d`` coordinates (and a value when there are ``d + 1`` numbers) if all are numbers.

    With ``run_on``, a longer row is read as consecutive complete ``coords..., value`` groups
    of ``d + 1`` (a small model that was asked for one point per line often leaves out the
    line breaks); an incomplete last group is dropped.
    """
    if any(v is None for v in nums):
        return
    if len(nums) == d:
        out.append(([float(v) for v in nums], None))  # type: ignore[arg-type]
    elif len(nums) == d + 1 or (run_on and len(nums) > d + 1):
        for s in range(0, len(nums) - d, d + 1):
            out.append(([float(v) for v in nums[s : s + d]], float(nums[s + d])))  # type: ignore[arg-type]


def parse_values(text: str, n: int) -> list[float] | None:
    """Extract ``n`` predicted values from an LLM answer, or ``None`` if it holds fewer.

    Looks for a flat JSON list of ``n`` numbers first, then for ``"value"`` fields of
    objects in order, then for bare numbers one per line.
    """
    for m in _FLAT_LIST.finditer(text):
        nums = [_as_float(x) for x in m.group(0)[1:-1].split(",") if x.strip()]
        if len(nums) >= n and all(v is not None for v in nums[:n]):
            return [float(v) for v in nums[:n]]  # type: ignore[arg-type]
    vals = []
    for m in _OBJECT.finditer(text):
        obj = _loads_lenient(m.group(0))
        if isinstance(obj, dict):
            v = _as_float(obj.get("value", obj.get("prediction")))
            if v is not None:
                vals.append(v)
    if len(vals) >= n:
        return vals[:n]
    lines = [
        _as_float(re.sub(r"^\s*(?:\d+[.):]\s+|-\s+)", "", ln))
        for ln in text.splitlines()
        if ln.strip()
    ]
    nums = [v for v in lines if v is not None]
    return nums[:n] if len(nums) >= n else None
