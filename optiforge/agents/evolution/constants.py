"""The numeric constants of a program, as a search space (the ``tune`` operator's view).

An LLM-written heuristic often has the right shape and the wrong numbers (``0.5 * (r < item)``
where ``0.17`` would pack better). :func:`find_constants` reads a program's numeric literals
through the AST -- the program is parsed, never run -- and :func:`tune_space` turns them into
a box for a black-box study; :func:`substitute` writes a point of that box back into the
source, changing nothing but the literals (comments and layout stay as the LLM wrote them).

Integer literals that index, slice, count or size something are left alone: changing
``bins[0]`` to ``bins[2]`` or ``range(3)`` to ``range(5)`` is a different program, not a
tuned one, and most such values are not on a scale a box search could use.

References
----------
van Stein, Bäck. "LLaMEA-HPO: LLM-driven algorithm design with an HPO inner loop" (the
idea of letting an optimiser, not the LLM, set a generated algorithm's parameters);
arXiv:2410.16309 (2024), as "In-the-loop hyper-parameter optimization for LLM-based
automated design of heuristics".
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# Calls whose integer arguments are positions, counts or shapes, not magnitudes.
_STRUCTURAL_CALLS = frozenset({
    "range", "enumerate", "reshape", "zeros", "ones", "empty", "full", "eye", "identity",
    "arange", "linspace", "tile", "repeat", "roll", "argpartition", "partition", "take",
    "split", "array_split", "resize", "expand_dims", "squeeze", "swapaxes", "transpose",
    "sorted", "round", "pop", "insert", "islice", "randint", "choice", "nsmallest", "nlargest",
    "diff", "concatenate", "stack", "sum", "mean", "argmax", "argmin", "argsort",
    "sort", "cumsum", "prod", "std", "var", "any", "all", "median", "percentile", "quantile",
})
# Keyword arguments that name an axis, a shape or a count.
_STRUCTURAL_KEYWORDS = frozenset({
    "axis", "axes", "ndim", "ndmin", "shape", "size", "k", "n", "ord", "decimals", "minlength",
    "start", "stop", "step", "num", "kth", "repeats", "maxlen", "key",
})

MAGNITUDES = (1e-12, 1e9)
"""Nonzero literals outside this range of magnitudes are left alone: sentinels (``1e18``,
``-np.inf`` stand-ins) and epsilons are not weights, and their boxes would not be finite."""

MAX_SCALE = 4.0
"""A nonzero float constant is searched on a log scale within a factor of this, sign kept."""


@dataclass(frozen=True)
class Constant:
    """One tunable literal: its value and where it sits in the source.

    ``start``/``end`` are ``(line, column)`` pairs (1-based lines, 0-based UTF-8 byte
    columns, as :mod:`ast` reports them) of the literal, including a leading unary minus.
    """

    name: str
    value: float
    is_int: bool
    start: tuple[int, int]
    end: tuple[int, int]


def _call_name(node: ast.Call) -> str | None:
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


def _number(node: ast.AST) -> float | int | None:
    """The value of a numeric literal (``-3.5`` included), else ``None``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _number(node.operand)
        if inner is None or isinstance(node.operand, ast.UnaryOp):
            return None
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


class _Finder(ast.NodeVisitor):
    """Collects numeric literals in source order, skipping integers in structural places."""

    def __init__(self) -> None:
        self.found: list[tuple[ast.AST, float | int]] = []
        self._structural = 0  # > 0 while inside a subscript, or a structural call's argument

    def _visit_structural(self, nodes: list[ast.AST]) -> None:
        self._structural += 1
        for n in nodes:
            self.visit(n)
        self._structural -= 1

    def visit_Subscript(self, node: ast.Subscript) -> None:
        self.visit(node.value)
        self._visit_structural([node.slice])

    def visit_Call(self, node: ast.Call) -> None:
        self.visit(node.func)
        if _call_name(node) in _STRUCTURAL_CALLS:
            self._visit_structural(list(node.args))
        else:
            for a in node.args:
                self.visit(a)
        for kw in node.keywords:
            if kw.arg in _STRUCTURAL_KEYWORDS:
                self._visit_structural([kw.value])
            else:
                self.visit(kw.value)

    def _literal(self, node: ast.AST) -> bool:
        value = _number(node)
        if value is None:
            return False
        if isinstance(value, int) and self._structural:
            return True  # an index / count: not a constant to tune (and not looked into)
        if not math.isfinite(value) or (value != 0 and not MAGNITUDES[0] <= abs(value) <= MAGNITUDES[1]):
            return True
        self.found.append((node, value))
        return True

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if not self._literal(node):
            self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        self._literal(node)


def find_constants(code: str, max_constants: int | None = None) -> list[Constant]:
    """The tunable numeric literals of ``code``, in source order (parsed, never executed).

    Parameters
    ----------
    code : str
        A Python program.
    max_constants : int, optional
        Keep only the first this many (a box search gets weak as the dimension grows).

    Returns
    -------
    list of Constant
        Named ``c0, c1, ...``; empty for a program without constants or that does not parse.
    """
    if not isinstance(code, str):
        raise TypeError(f"code: expected a string, got {type(code).__name__}")
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    finder = _Finder()
    finder.visit(tree)
    out = []
    for node, value in finder.found[:max_constants]:
        start, end = node_span(node)
        out.append(Constant(name=f"c{len(out)}", value=float(value), is_int=isinstance(value, int),
                            start=start, end=end))
    return out


def tune_space(constants: list[Constant]) -> dict[str, dict[str, Any]]:
    """A box around each constant, in the JSON form of :class:`~optiforge.blackbox.Space`.

    A nonzero float ``c`` is searched log-uniformly on ``|c|/4 .. 4|c|`` with its sign kept
    (a weight's scale matters more than its last digit, and its sign is the LLM's idea); a
    zero float on ``-1 .. 1``; an integer ``c`` on the integers of
    ``c - max(2, |c|) .. c + max(2, |c|)``. Every box contains its constant.
    """
    space: dict[str, dict[str, Any]] = {}
    for c in constants:
        if c.is_int:
            w = max(2, abs(int(c.value)))
            space[c.name] = {"type": "int", "low": int(c.value) - w, "high": int(c.value) + w}
        elif c.value == 0.0:
            space[c.name] = {"type": "float", "low": -1.0, "high": 1.0}
        else:
            # Searched on |c|: the sign is put back by :func:`signed_values`.
            space[c.name] = {"type": "float", "low": abs(c.value) / MAX_SCALE,
                             "high": abs(c.value) * MAX_SCALE, "log": True}
    return space


def signed_values(constants: list[Constant], params: Mapping[str, Any]) -> dict[str, float]:
    """A point of :func:`tune_space` as constant values (negative constants get their sign back)."""
    out = {}
    for c in constants:
        v = float(params[c.name])
        out[c.name] = -v if (not c.is_int and c.value < 0) else v
    return out


def space_point(constants: list[Constant]) -> dict[str, float | int]:
    """The program's own constants as a point of :func:`tune_space` (the study's first trial)."""
    return {c.name: int(c.value) if c.is_int else abs(c.value) for c in constants}


def _literal_text(value: float, is_int: bool) -> str:
    if is_int:
        return str(int(round(value)))
    return repr(float(f"{value:.6g}"))  # six significant digits: a readable program


def substitute(code: str, constants: list[Constant], values: Mapping[str, float]) -> str:
    """``code`` with each constant's literal replaced by ``values[name]``; nothing else changes.

    Parameters
    ----------
    code : str
        The program :func:`find_constants` read ``constants`` from.
    constants : list of Constant
    values : dict
        Constant name -> new value (as returned by :func:`signed_values`); names not given
        keep their literal.
    """
    lines = code.encode("utf-8").splitlines(keepends=True)
    # From the last literal to the first, so earlier offsets stay valid.
    for c in sorted(constants, key=lambda c: c.start, reverse=True):
        if c.name not in values:
            continue
        replace_span(lines, c.start, c.end, _literal_writer(_literal_text(float(values[c.name]), c.is_int)))
    return b"".join(lines).decode("utf-8")


def _literal_writer(text: str) -> Callable[[bytes, bytes, bytes], bytes]:
    new = text.encode("utf-8")

    def write(head: bytes, _old: bytes, tail: bytes) -> bytes:
        if new.startswith(b"-") and not (head.rstrip().endswith(b"(") and tail.lstrip().startswith(b")")):
            return b"(" + new + b")"  # `a - (-0.3)` reads better than `a - -0.3`
        return new

    return write


def node_span(node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
    """A node's ``(start, end)`` source positions, as :class:`Constant` stores them."""
    return ((node.lineno, node.col_offset),
            (node.end_lineno or node.lineno, node.end_col_offset or node.col_offset))


def replace_span(lines: list[bytes], start: tuple[int, int], end: tuple[int, int],
                 new: Callable[[bytes, bytes, bytes], bytes]) -> None:
    """Replace, in place, the source between two :mod:`ast` positions by ``new(head, old, tail)``.

    ``lines`` are the program's UTF-8 lines with their endings; ``start``/``end`` are
    ``(line, column)`` pairs (1-based lines, 0-based byte columns), possibly on different lines.
    ``head``/``tail`` are the text before and after the span on its first and last line.
    """
    (l0, c0), (l1, c1) = start, end
    head, tail = lines[l0 - 1][:c0], lines[l1 - 1][c1:]
    old = lines[l0 - 1][c0:c1] if l0 == l1 else lines[l0 - 1][c0:] + b"".join(lines[l0: l1 - 1]) + lines[l1 - 1][:c1]
    lines[l0 - 1: l1] = [head + new(head, old, tail) + tail]
