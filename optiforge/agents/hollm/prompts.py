"""Prompt texts of HOLLM's LLM proposer and LLM surrogate (predictor).

Both follow the structure of the paper's templates (in our own words): the metric and its
direction, the evaluated configurations as JSON, the region box as allowed ranges per
parameter, and a strict JSON answer format. Coordinates are the unit-cube encodings of the
parameters (as in the authors' minimal implementation), labelled with the parameter names.

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


def candidate_prompt(
    names: Sequence[str], X: np.ndarray, y: np.ndarray, lo: np.ndarray, hi: np.ndarray, k: int,
    decimals: int = 4,
) -> str:
    """The proposer prompt: evaluated points + one region's box -> ``k`` JSON candidates."""
    d = len(names)
    ranges = "\n".join(
        f"- {n}: [{_fmt(a, decimals)}, {_fmt(b, decimals)}]" for n, a, b in zip(names, lo, hi, strict=True)
    )
    example = "{" + ", ".join(f'"{n}": <float>' for n in names) + ', "value": <predicted value>}'
    return (
        f"You are helping to minimise an expensive black-box function of {d} parameters. "
        "Lower values are better. Every parameter is normalised to [0, 1].\n\n"
        f"Evaluated points so far:\n{points_json(names, X, y, decimals)}\n\n"
        "Allowed ranges for the new points (stay strictly inside them):\n"
        f"{ranges}\n\n"
        f"Suggest {k} new, distinct points inside the allowed ranges that you expect to have low "
        "values. Do not repeat evaluated points. Balance exploiting the best points with "
        "exploring the allowed region. For each point also predict its value.\n"
        f"Answer with a JSON list of {k} objects and nothing else, each like:\n{example}"
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
