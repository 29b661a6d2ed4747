"""Canonical form of a generated program, so that semantic copies share one hash.

GRPO pays a new program for being new. A copy of a known program that differs only in
what Python ignores (comments, docstrings, annotations, layout, the order of independent
imports, the names of local variables) must therefore hash like the original, or the LLM
is rewarded for copying. Two programs must never be merged when they can behave
differently: every rewrite below is *semantics-preserving*, so equal canonical forms
imply equal behaviour.

Rewrites, in order:

1. **Layout, comments, docstrings, annotations**: the program is parsed and unparsed
   (:func:`ast.unparse`). Statements that are only a constant (docstrings, string
   "comments", ``...``) are dropped; parameter and return annotations and the annotation
   of an annotated local assignment (never evaluated inside a function) are dropped.
2. **Imports**: inside each contiguous run of import statements, ``import a, b`` is split
   into one import per name, repeated identical imports are dropped and the run is sorted
   (``from __future__`` first). A run is left in its order when two different imports bind
   the same name (then the order decides which one wins) or it contains ``import *``.
   Imports are never moved across other statements (a default argument or decorator may
   need them). This assumes import order has no effect, which holds for the side-effect
   free modules a heuristic imports (numpy, math).
3. **Local names**: *decision*: local variables are renamed canonically (``_v0, _v1, ...``
   in order of first appearance, a scheme that depends only on the program's structure),
   because renaming locals is the cheapest way for a model to produce a "new" copy, and
   alpha-renaming is exactly semantics-preserving when it respects Python's scopes. What
   could falsely merge two different programs is renaming a name that is *not* local (a
   global, a builtin, a module), or capturing one name with another; so the renaming

   * resolves every name through the real scope chain (functions, lambdas and
     comprehensions, each comprehension's first iterable in its enclosing scope, the
     ``:=`` target in the enclosing function) and renames only bindings local to a
     function, never globals, builtins, module-level names, attributes or keywords;
   * keeps parameters (the task calls the entry point with them, and a helper may be
     called by keyword), names bound by an ``import`` or a nested ``def``;
   * picks fresh names that differ from every name it keeps, so nothing is captured;
   * leaves a whole top-level function as written when scopes cannot be read from its
     text alone: ``global``/``nonlocal``, a class body, ``match`` patterns, or access to
     the namespace by name (``locals``, ``vars``, ``eval``, ``exec``, ``globals``,
     ``dir``, frame inspection).

   A program whose behaviour depends on a local's *name* (an error message that quotes
   it) keeps its score under renaming; only the stored error text of a merged copy names
   the original variable.

Source that does not parse is normalised textually (comments and blank lines dropped,
trailing whitespace stripped), so it still gets a stable hash.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from optiforge.types import content_hash

__all__ = ["code_hash", "normalize_code"]

_FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSION = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Constructs whose name resolution cannot be read from the function's text alone.
_OPAQUE = (ast.Global, ast.Nonlocal, ast.ClassDef, ast.Match)
_INTROSPECTION = frozenset(
    {"locals", "vars", "eval", "exec", "globals", "dir", "breakpoint",
     "_getframe", "currentframe", "f_locals", "f_globals"}
)


def normalize_code(code: str, *, canonical_names: bool = True) -> str:
    """Canonical form of a program for deduplication (see the module docstring).

    Parameters
    ----------
    code : str
        Python source.
    canonical_names : bool
        Rename local variables canonically (rewrite 3). ``False`` keeps the author's
        names, for showing a compact program to the LLM.

    Returns
    -------
    str
        The normalised source. It behaves like ``code``: two programs with the same
        normalised source are semantic duplicates.
    """
    if not isinstance(code, str):
        raise TypeError(f"code: expected str, got {type(code).__name__}")
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        lines = [re.sub(r"\s+#.*$", "", ln).rstrip() for ln in code.splitlines()]
        return "\n".join(ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#"))
    _strip_inert(tree)
    _canonical_imports(tree)
    if canonical_names:
        _rename_locals(tree)
    return ast.unparse(tree)


def code_hash(code: str) -> str:
    """Hash of :func:`normalize_code`: semantic copies (see the module docstring) collide."""
    return content_hash(normalize_code(code))


# -- rewrite 1: what the interpreter ignores ----------------------------------------------
def _is_inert(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)


def _strip_inert(tree: ast.Module) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            node.annotation = None
        if isinstance(node, _FUNCTION):
            node.returns = None
            # A local's annotation is never evaluated; a bare ``x: int`` still makes x local.
            node.body = [_drop_annotation(s) for s in node.body]
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                # A block that held only a docstring still needs a statement.
                setattr(node, name, [s for s in body if not _is_inert(s)] or [ast.Pass()])


def _drop_annotation(stmt: ast.stmt) -> ast.stmt:
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and stmt.simple:
        return ast.copy_location(ast.Assign(targets=[stmt.target], value=stmt.value), stmt)
    return stmt


# -- rewrite 2: imports ---------------------------------------------------------------------
def _split_import(stmt: ast.Import | ast.ImportFrom) -> list[ast.stmt]:
    if isinstance(stmt, ast.Import):
        return [ast.Import(names=[a]) for a in stmt.names]
    return [ast.ImportFrom(module=stmt.module, names=[a], level=stmt.level) for a in stmt.names]


def _bound_name(stmt: ast.Import | ast.ImportFrom) -> str:
    alias = stmt.names[0]
    if alias.asname:
        return alias.asname
    return alias.name if isinstance(stmt, ast.ImportFrom) else alias.name.split(".")[0]


def _canonical_run(run: list[ast.stmt]) -> list[ast.stmt]:
    split = [s for stmt in run for s in _split_import(stmt)]
    if any(a.name == "*" for s in split for a in s.names):
        return split
    by_text: dict[str, ast.stmt] = {}
    owner: dict[str, str] = {}
    for s in split:
        text, name = ast.unparse(s), _bound_name(s)
        if owner.setdefault(name, text) != text:
            return split  # two different imports of one name: their order decides
        by_text.setdefault(text, s)
    future = [t for t in by_text if t.startswith("from __future__ ")]
    return [by_text[t] for t in sorted(future) + sorted(set(by_text) - set(future))]


def _canonical_imports(tree: ast.Module) -> None:
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if not isinstance(body, list) or not body or not isinstance(body[0], ast.stmt):
                continue
            out: list[ast.stmt] = []
            run: list[ast.stmt] = []
            for stmt in [*body, None]:
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    run.append(stmt)
                    continue
                out.extend(_canonical_run(run) if run else [])
                run = []
                if stmt is not None:
                    out.append(stmt)
            setattr(node, name, out)


# -- rewrite 3: local names -----------------------------------------------------------------
@dataclass(eq=False)
class _Scope:
    """A function, lambda or comprehension scope and the names it binds."""

    parent: _Scope | None
    is_function: bool
    renamable: set[str] = field(default_factory=set)
    fixed: set[str] = field(default_factory=set)

    def binds(self, name: str) -> bool:
        return name in self.renamable or name in self.fixed

    def function(self) -> _Scope:
        scope = self
        while not scope.is_function and scope.parent is not None:
            scope = scope.parent
        return scope


@dataclass
class _Use:
    """One occurrence of a name: where it sits, and how to rewrite it."""

    scope: _Scope
    name: str
    store: bool
    node: ast.AST
    attr: str


class _Binder:
    """Walks one top-level function in a fixed order, recording scopes and name uses."""

    def __init__(self) -> None:
        self.uses: list[_Use] = []

    def function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, outer: _Scope | None) -> None:
        if outer is not None:
            if not isinstance(fn, ast.Lambda):
                outer.fixed.add(fn.name)
                for dec in fn.decorator_list:
                    self.visit(dec, outer)
            for default in [*fn.args.defaults, *fn.args.kw_defaults]:
                if default is not None:
                    self.visit(default, outer)
        scope = _Scope(outer, is_function=True)
        args = fn.args
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None:
                scope.fixed.add(a.arg)
        for stmt in fn.body if isinstance(fn.body, list) else [fn.body]:
            self.visit(stmt, scope)

    def comprehension(self, node: ast.AST, outer: _Scope) -> None:
        gens = node.generators
        self.visit(gens[0].iter, outer)  # the first iterable is evaluated outside
        scope = _Scope(outer, is_function=False)
        for i, gen in enumerate(gens):
            if i:
                self.visit(gen.iter, scope)
            self.visit(gen.target, scope)
            for cond in gen.ifs:
                self.visit(cond, scope)
        for name in ("elt", "key", "value"):
            if hasattr(node, name):
                self.visit(getattr(node, name), scope)

    def visit(self, node: ast.AST, scope: _Scope) -> None:
        if isinstance(node, (*_FUNCTION, ast.Lambda)):
            self.function(node, scope)
        elif isinstance(node, _COMPREHENSION):
            self.comprehension(node, scope)
        elif isinstance(node, ast.NamedExpr):
            self.visit(node.value, scope)
            self.name(node.target, scope.function(), store=True)
        elif isinstance(node, ast.Name):
            self.name(node, scope, store=not isinstance(node.ctx, ast.Load))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            scope.fixed.update(_bound_name(s) for s in _split_import(node))
        else:
            if isinstance(node, ast.ExceptHandler) and node.name:
                scope.renamable.add(node.name)
                self.uses.append(_Use(scope, node.name, True, node, "name"))
            for child in ast.iter_child_nodes(node):
                self.visit(child, scope)

    def name(self, node: ast.Name, scope: _Scope, store: bool) -> None:
        if store:
            scope.renamable.add(node.id)
        self.uses.append(_Use(scope, node.id, store, node, "id"))


def _opaque(fn: ast.AST) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, _OPAQUE):
            return True
        if isinstance(node, ast.Name) and node.id in _INTROSPECTION:
            return True
        if isinstance(node, ast.Attribute) and node.attr in _INTROSPECTION:
            return True
    return False


def _resolve(use: _Use) -> _Scope | None:
    if use.store:
        return use.scope
    scope: _Scope | None = use.scope
    while scope is not None and not scope.binds(use.name):
        scope = scope.parent
    return scope


def _identifiers(tree: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """Every ``(node, name)`` that names a variable: uses, parameters, defs, imports, handlers."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node, node.id
        elif isinstance(node, ast.arg):
            yield node, node.arg
        elif isinstance(node, (*_FUNCTION, ast.ClassDef)):
            yield node, node.name
        elif isinstance(node, ast.alias):
            yield node, node.asname or node.name.split(".")[0]
        elif isinstance(node, ast.ExceptHandler) and node.name:
            yield node, node.name


def _rename_locals(tree: ast.Module) -> None:
    plans: list[list[tuple[_Use, _Scope]]] = []
    for fn in tree.body:
        if not isinstance(fn, _FUNCTION) or _opaque(fn):
            continue
        binder = _Binder()
        binder.function(fn, None)
        plan = []
        for use in binder.uses:
            owner = _resolve(use)
            # A name that is also a parameter, import or def in its scope stays as written.
            if owner is not None and use.name in owner.renamable and use.name not in owner.fixed:
                plan.append((use, owner))
        plans.append(plan)
    renamed = {id(use.node) for plan in plans for use, _ in plan}
    # Fresh names avoid every name that stays, so a renamed local never captures another.
    kept = {name for node, name in _identifiers(tree) if id(node) not in renamed}
    for plan in plans:
        fresh: dict[tuple[int, str], str] = {}
        counter = 0
        for use, owner in plan:
            key = (id(owner), use.name)
            if key not in fresh:
                while f"_v{counter}" in kept:
                    counter += 1
                fresh[key] = f"_v{counter}"
                counter += 1
            setattr(use.node, use.attr, fresh[key])
