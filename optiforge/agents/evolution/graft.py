"""The ``graft`` operator: one new term, built from the task's features, added to a program's score.

A small model rarely writes a *new* structure (docs/benchmarks/discovery.md: its valid programs
are copies of their parents, or monotone rescalings such as ``score * 2`` that pick the same
bins). The tune operator can set constants, but only of a structure that exists. ``graft``
supplies structure without an LLM: it takes a pool program whose entry point returns one score
per option (and returns it once), and adds one term ``shape(feature)`` to that value, or
to the scores an ``argmin`` / ``argmax`` in it picks from::

    return <expr>      ->      return (<expr>) + (-10.0) * (((bins - item) > 0.0) & ((bins - item) < 10.0))
    return nodes[np.argmin(<d>)]      ->      return nodes[np.argmin((<d>) + 0.2 * (<feature>))]

A *feature* is an expression in the entry point's parameters that the task declares with its
typical magnitude (:class:`GraftableTask`); a *shape* is one of a few generic forms (linear,
square, threshold, band, decay, :data:`SHAPES`). The term's constants start at the scales the
task declares, so they are right in order of magnitude and wrong in detail: exactly what the
``tune`` operator then sets. Grafting only edits text through the AST's positions (the program
is parsed, never run); the child is evaluated in the sandbox like any other program.

This is genetic programming's subtree insertion (Koza 1992) restricted to one additive term,
with the constants left to an inner optimiser as in LLaMEA-HPO; it is not part of CALM.

References
----------
Koza. "Genetic Programming: On the Programming of Computers by Means of Natural Selection."
MIT Press (1992).
van Stein, Bäck. "In-the-loop hyper-parameter optimization for LLM-based automated design of
heuristics" (LLaMEA-HPO), arXiv:2410.16309 (2024).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from optiforge.agents.evolution.constants import Constant, node_span, replace_span

SHAPES = ("linear", "square", "below", "band", "decay")
"""The term forms, for a feature ``f`` of typical magnitude ``s`` and the task's score scale ``S``:
``linear`` ``w*f`` (``w = ±S/s``), ``square`` ``w*f**2`` (``w = ±S/s**2``), ``below``
``w*(f < t)``, ``band`` ``w*((f > 0) & (f < t))`` and ``decay`` ``w*exp(-f/t)`` (``w = ±S``,
``t = s``)."""


@runtime_checkable
class GraftableTask(Protocol):
    """A task whose entry point scores its options, with features to graft from.

    It returns one score per option (maximised), or picks an option with one argmin / argmax
    over scores (the term goes into those scores).

    ``features`` maps numpy expressions in the entry point's parameters (e.g.
    ``"bins - item"``) to their typical magnitude; ``score_scale`` is the typical spread of a
    good score across the options (best fit's ``-(bins - item)``: about 10).
    """

    entry_point: str
    features: Mapping[str, float]
    score_scale: float


@dataclass(frozen=True)
class Term:
    """One graftable term: a shape applied to a feature, with a sign."""

    feature: str
    shape: str
    sign: float

    def code(self, feature_scale: float, score_scale: float) -> str:
        """The term's source, its constants at their starting values."""
        f, s, sign = f"({self.feature})", feature_scale, self.sign
        w = {"linear": score_scale / s, "square": score_scale / s**2}.get(self.shape, score_scale)
        weight = _literal(sign * w)
        if self.shape == "linear":
            return f"{weight} * {f}"
        if self.shape == "square":
            return f"{weight} * {f} ** 2"
        if self.shape == "below":
            return f"{weight} * ({f} < {_literal(s)})"
        if self.shape == "band":
            return f"{weight} * (({f} > 0.0) & ({f} < {_literal(s)}))"
        return f"{weight} * np.exp(-{f} / {_literal(s)})"

    def to_dict(self) -> dict[str, Any]:
        return {"feature": self.feature, "shape": self.shape, "sign": self.sign}

    def describe(self) -> str:
        # Neutral wording: whether a positive weight rewards an option depends on the site
        # (a returned score is maximised, an argmin's argument minimised).
        what = {"linear": "{f}", "square": "the square of {f}", "below": "{f} below a threshold",
                "band": "{f} between 0 and a threshold", "decay": "exp(-{f} / a scale)"}
        sign = "positive" if self.sign > 0 else "negative"
        return f"adds a {sign} weight times {what[self.shape].format(f=f'`{self.feature}`')}"


def _literal(value: float) -> str:
    text = repr(float(f"{value:.6g}"))
    return f"({text})" if value < 0 else text


def all_terms(task: GraftableTask) -> list[Term]:
    """Every term the task's features allow (features x shapes x signs), in a fixed order."""
    return [Term(f, shape, sign) for f, shape, sign in itertools.product(task.features, SHAPES, (-1.0, 1.0))]


def _parse(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None


_CHOOSERS = frozenset({"argmin", "argmax"})


def _site(tree: ast.Module, entry_point: str) -> ast.expr | None:
    """Where a term goes: the entry point's returned value, or the scores it picks from.

    A returned ``np.argmin(E)`` / ``np.argmax(E)`` / ``E.argmin()`` (inside any wrapping, e.g.
    ``int(nodes[np.argmin(E)])``) puts the term into ``E``, the scores the choice is made on.
    """
    ret = _entry_return(tree, entry_point)
    if ret is None:
        return None
    calls = [n for n in ast.walk(ret.value) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute | ast.Name)
             and (n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id) in _CHOOSERS]
    if not calls:
        return ret.value
    if len(calls) > 1:
        return None  # which choice the term belongs to is not clear
    call = calls[0]
    if call.args:
        return call.args[0]
    if isinstance(call.func, ast.Attribute) and not call.keywords:
        return call.func.value  # E.argmin()
    return None


def _entry_return(tree: ast.Module, entry_point: str) -> ast.Return | None:
    """The entry point's one ``return <value>`` (nested functions aside), or ``None``.

    A program with several returns is not grafted: the term would be copied into each, and
    each copy's constants tuned apart.
    """
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry_point), None)
    if fn is None:
        return None
    found: list[ast.Return] = []
    stack: list[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, ast.Return):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    if len(found) != 1 or found[0].value is None:
        return None
    return found[0]


def graftable(code: str, entry_point: str) -> bool:
    """Whether ``code`` parses and its entry point has one ``return <value>`` with a clear site
    (at most one argmin / argmax in it)."""
    tree = _parse(code)
    return tree is not None and _site(tree, entry_point) is not None


def graft(code: str, task: GraftableTask, term: Term) -> str | None:
    """``code`` with ``term`` added to the value its entry point returns.

    Parameters
    ----------
    code : str
        A program defining ``task.entry_point``.
    task : GraftableTask
        Supplies the entry point, the feature's magnitude and the score scale.
    term : Term
        What to add (its feature must be one of ``task.features``).

    Returns
    -------
    str or None
        The child's source (only the returned expression changes: ``return ((<value>) +
        <term>)``, or ``argmin(((<scores>) + <term>))``), or ``None`` when the program is not
        :func:`graftable`.
    """
    if term.feature not in task.features:
        raise ValueError(f"term: feature {term.feature!r} is not one of the task's features")
    if term.shape not in SHAPES:
        raise ValueError(f"term: unknown shape {term.shape!r}; known: {', '.join(SHAPES)}")
    tree = _parse(code)
    v = None if tree is None else _site(tree, task.entry_point)
    if v is None:
        return None
    lines = code.encode("utf-8").splitlines(keepends=True)
    added = term.code(float(task.features[term.feature]), float(task.score_scale)).encode("utf-8")
    # Parenthesised whole: the site may be the receiver of a method call (`E.argmin()`).
    replace_span(lines, *node_span(v), lambda _head, value, _tail: b"((" + value + b") + " + added + b")")
    return b"".join(lines).decode("utf-8")


def term_first(child: str, entry_point: str, constants: list[Constant]) -> list[Constant]:
    """``constants`` of a grafted ``child`` with the grafted term's own constants first.

    The term is the right operand of the sum :func:`graft` wrote at the site; the tune operator searches its constants before the parent's, so a parent with
    many constants cannot crowd them out.
    """
    tree = _parse(child)
    site = None if tree is None else _site(tree, entry_point)
    if not isinstance(site, ast.BinOp):
        return list(constants)
    lo, hi = node_span(site.right)
    inside = [c for c in constants if lo <= c.start and c.end <= hi]
    return inside + [c for c in constants if c not in inside]
