"""Prompt texts of HOLLM's LLM proposer and LLM surrogate (predictor).

Both follow the structure of the paper's templates (in our own words): the metric and its
direction, the evaluated configurations, the region box as allowed ranges per parameter, and a
strict answer format. Coordinates are the unit-cube encodings of the parameters (as in the
authors' minimal implementation). The surrogate prompt uses JSON as the paper does; the
proposer prompt uses CSV lines, which a small local model follows better (see
:func:`candidate_prompt`).

References
----------
.. [1] A. Schwanke et al., "Improving LLM-based Global Optimization with Search Space
   Partitioning", arXiv:2505.21372 (ICLR 2026), App. (prompt templates).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np


def _fmt(v: float, decimals: int) -> float:
    return round(float(v), decimals)


def points_json(names: Sequence[str], X: np.ndarray, y: np.ndarray | None, decimals: int) -> str:
    """Evaluated points as a compact JSON list of ``{name: coord, ..., "value": v}``."""
    rows = []
    for i in range(X.shape[0]):
        row = {n: _fmt(x, decimals) for n, x in zip(names, X[i], strict=True)}
        if y is not None:
            row["value"] = _fmt(y[i], 6)
        rows.append(row)
    return json.dumps(rows, separators=(",", ":"))


def points_lines(X: np.ndarray, y: np.ndarray, decimals: int) -> str:
    """Evaluated points as comma-separated lines ``coord,...,coord,value`` (one per point)."""
    return "\n".join(
        ",".join(f"{v:.{decimals}f}" for v in X[i]) + f",{_fmt(y[i], 4):g}"
        for i in range(X.shape[0])
    )


def candidate_prompt(
    names: Sequence[str],
    X: np.ndarray,
    y: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    k: int,
    decimals: int = 4,
    with_values: bool = True,
) -> str:
    """The proposer prompt: evaluated points + one region's box -> ``k`` new points, one per line.

    With ``with_values=False`` the answer asked for is the coordinates alone (the format of
    :class:`~optiforge.agents.hollm.answer_format.RegionPoints`, for constrained decoding).

    Deviation from the paper's template (JSON objects keyed by parameter name, in and out): a
    135M model answered that format with prose or code (0 of 2 answers parsed, measured in
    docs/benchmarks/hollm.md), and the names cost about 4 tokens per coordinate. Here the
    points are CSV lines under a header, at most 3 decimals, and the answer asked for is more
    such lines, which a small model can continue by imitation. The contents (points, values,
    box, ``k``) are the paper's.
    """
    d = len(names)
    decimals = min(decimals, 3)
    ranges = "\n".join(
        f"- {n}: [{_fmt(a, decimals)}, {_fmt(b, decimals)}]"
        for n, a, b in zip(names, lo, hi, strict=True)
    )
    header = ",".join(names) + ",value"
    if with_values:
        answer = (f"Write each point on its own line, in the same format ({header}), where value is "
                  f"your predicted value. Answer with the {k} lines only.")
    else:
        answer = (f"Write each point on its own line as a label and its {d} coordinates "
                  f"(p1: {','.join(names)}), without a value. Answer with the {k} lines only.")
    return (
        f"Minimise a black-box function of {d} parameters (each in [0, 1]); lower values are better.\n\n"
        f"Evaluated points, one per line ({header}):\n{points_lines(X, y, decimals)}\n\n"
        "Allowed ranges for the new points:\n"
        f"{ranges}\n\n"
        f"Suggest {k} new points inside the allowed ranges that you expect to have low values. "
        f"{answer}"
    )


def surrogate_prompt(
    names: Sequence[str], X: np.ndarray, y: np.ndarray, candidates: np.ndarray, decimals: int = 4
) -> str:
    """The surrogate prompt: evaluated points + candidates -> one predicted value per candidate."""
    n = candidates.shape[0]
    return (
        f"You are a surrogate model of an expensive black-box function of {len(names)} parameters "
        "(lower values are better; parameters normalised to [0, 1]).\n\n"
        f"Evaluated points:\n{points_json(names, X, y, decimals)}\n\n"
        f"Candidate points:\n{points_json(names, candidates, None, decimals)}\n\n"
        f"Predict the function value of each of the {n} candidates from the evaluated points. "
        f"Answer with a JSON list of {n} numbers, in the candidates' order, and nothing else."
    )
