"""Parse an LLM response into (idea, code) for a heuristic task, or an error.

Rules (decisions the brief left open are marked *decision*):

* **Code**: the fenced block (```` ```python ```` or bare ```` ``` ````) that defines the
  entry point, else the first fenced block with a ``def``; without fences, the text from
  the first ``import``/``from``/``def``/``@`` line, cut at the first column-0 line that is
  prose (does not parse as Python on its own).
* **Idea**: the text inside ``{{...}}``, else ``{...}``, found outside the code; else the
  sentence starting "The idea of the algorithm is to"; else the entry point's docstring
  (the ``code`` answer format asks for it there); else ``None`` (the program stays valid:
  only its code is evaluated).
* **Component** (injection prompts): a line ``Component: ...`` outside the code.
* **Entry point**: a top-level function named ``entry_point`` whose leading parameter
  names equal the task's (extra parameters need defaults). *Decision*: if it is absent and
  exactly one top-level function has the right arity (preferring names starting with the
  entry point, e.g. ``priority_v2``), it is renamed (with its recursive calls) and a note
  is kept; otherwise the program is invalid and the error says why.
* Top-level statements other than imports, function/class definitions and plain
  assignments (``if __name__ == ...`` blocks, calls, prints, loops) are dropped, and so are
  assignments after the last definition (example usage) and every definition of a name but
  its last (the one Python would keep).
* The task's ``imports`` are prepended unless already present, so a response that forgot
  ``import numpy as np`` still runs.
* A syntax error makes the program invalid with the error text.

Only parsing happens here: nothing is executed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
_DOUBLE_BRACE = re.compile(r"\{\{(.+?)\}\}", re.DOTALL)
_SINGLE_BRACE = re.compile(r"\{([^{}]{8,}?)\}", re.DOTALL)
_IDEA_SENTENCE = re.compile(r"(The idea of the algorithm is to[^\n]*)", re.IGNORECASE)
_COMPONENT = re.compile(r"^[ \t*#>-]*Component\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_CODE_START = re.compile(r"^(import |from \S+ import |def |@|class )", re.MULTILINE)
_KEEP = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)
_DEFS = (ast.FunctionDef, ast.ClassDef)


@dataclass
class ParsedResponse:
    """Result of :func:`parse_response`.

    Attributes
    ----------
    code : str or None
        The cleaned program (imports prepended), or ``None`` when invalid.
    idea : str or None
        The conceptual description.
    error : str or None
        Why the response is invalid (``None`` when ``code`` is set).
    component : str or None
        The component description of an injection response.
    notes : list of str
        Repairs applied (renamed function, dropped statements, added imports).
    """

    code: str | None
    idea: str | None = None
    error: str | None = None
    component: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return self.code is not None


def signature_params(template: str, entry_point: str) -> list[str]:
    """Positional parameter names of ``entry_point`` in a task template.

    Raises
    ------
    ValueError
        If the template does not parse or does not define ``entry_point``.
    """
    try:
        tree = ast.parse(template)
    except SyntaxError as exc:
        raise ValueError(f"template: does not parse: {exc.msg} (line {exc.lineno})") from exc
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            return [a.arg for a in node.args.posonlyargs + node.args.args]
    raise ValueError(f"template: defines no top-level function {entry_point!r}")


def _is_prose(line: str) -> bool:
    stripped = line.strip()
    if not stripped or line[0] in " \t" or not stripped[0].isalpha():
        return False
    if _CODE_START.match(stripped) or stripped.startswith(("return", "else", "elif", "except", "finally")):
        return False
    try:
        ast.parse(stripped)
    except SyntaxError:
        return True
    # Bare words ("Note", "Explanation") parse as names; sentences do not. A line with
    # several words and no operator is still prose.
    return bool(re.fullmatch(r"[A-Za-z][\w ,.'!?-]*", stripped)) and " " in stripped


def _extract_code(text: str, entry_point: str) -> tuple[str | None, str]:
    """Return (code, text without the code)."""
    blocks = [(m.group(2), m.span()) for m in _FENCE.finditer(text)]
    blocks = [(b, s) for b, s in blocks if re.search(r"^\s*def ", b, re.MULTILINE)]
    if blocks:
        pick = next(
            (b for b in blocks if re.search(rf"^\s*def {re.escape(entry_point)}\b", b[0], re.MULTILINE)),
            blocks[0],
        )
        code, (start, end) = pick
        return code, text[:start] + text[end:]
    m = _CODE_START.search(text)
    if not m:
        return None, text
    lines = text[m.start() :].splitlines()
    kept: list[str] = []
    for ln in lines:
        if _is_prose(ln):
            break
        kept.append(ln)
    code = "\n".join(kept)
    return code, text[: m.start()] + "\n".join(lines[len(kept) :])


def _extract_idea(prose: str) -> str | None:
    for pattern in (_DOUBLE_BRACE, _SINGLE_BRACE):
        m = pattern.search(prose)
        if m:
            idea = " ".join(m.group(1).strip(" {}\n\t").split())
            if idea:
                return idea
    m = _IDEA_SENTENCE.search(prose)
    return " ".join(m.group(1).split()) if m else None


def _segment(src_lines: list[str], node: ast.stmt) -> str:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "\n".join(src_lines[first - 1 : node.end_lineno])


def _arity_ok(fn: ast.FunctionDef, params: Sequence[str]) -> bool:
    args = fn.args.posonlyargs + fn.args.args
    n_required = len(args) - len(fn.args.defaults)
    return len(args) >= len(params) and n_required <= len(params)


def parse_response(
    text: str, entry_point: str, params: Sequence[str], imports: str = ""
) -> ParsedResponse:
    """Parse one LLM response.

    Parameters
    ----------
    text : str
        The raw completion.
    entry_point : str
        Function name the task calls, e.g. ``"priority"``.
    params : sequence of str
        Expected leading parameter names, e.g. ``["item", "bins"]``
        (see :func:`signature_params`).
    imports : str
        The task's import lines, prepended when missing.

    Returns
    -------
    ParsedResponse
        ``code`` set when valid, else ``error`` explains why.
    """
    if not isinstance(text, str):
        raise TypeError(f"text: expected str, got {type(text).__name__}")
    if not isinstance(entry_point, str) or not entry_point.isidentifier():
        raise ValueError(f"entry_point: must be a Python identifier, got {entry_point!r}")
    params = list(params)
    notes: list[str] = []

    component = None
    m = _COMPONENT.search(text)
    if m:
        component = m.group(1).strip()
        # Removed before code extraction: "Component: x" is itself valid Python (an annotation).
        text = text[: m.start()] + text[m.end() :]

    code, prose = _extract_code(text, entry_point)
    idea = _extract_idea(prose)
    if code is None or not code.strip():
        return ParsedResponse(None, idea, "no code found in the response", component, notes)
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return ParsedResponse(
            None, idea, f"syntax error: {exc.msg} (line {exc.lineno})", component, notes
        )
    src_lines = code.splitlines()

    kept = [n for n in tree.body if isinstance(n, _KEEP)]
    # Only the last definition of a name runs; earlier ones are dead code (a model that
    # "keeps the original" and then writes its edit defines the function twice).
    last_def = {n.name: n for n in kept if isinstance(n, _DEFS)}
    kept = [n for n in kept if not isinstance(n, _DEFS) or last_def[n.name] is n]
    # Assignments after the last definition are example usage ("bins = np.array([5, 2])"):
    # as globals they would hide a function's undefined name.
    defs = [i for i, n in enumerate(kept) if isinstance(n, _DEFS)]
    if defs:
        kept = kept[: defs[-1] + 1] + [n for n in kept[defs[-1] + 1 :] if isinstance(n, ast.Import | ast.ImportFrom)]
    dropped = len(tree.body) - len(kept)
    if dropped:
        notes.append(f"dropped {dropped} top-level statement(s)")
    funcs = [n for n in kept if isinstance(n, ast.FunctionDef)]

    target = next((f for f in funcs if f.name == entry_point), None)
    rename_from = None
    if target is None:
        fitting = [f for f in funcs if _arity_ok(f, params)]
        preferred = [f for f in fitting if f.name.startswith(entry_point)]
        pool = preferred if len(preferred) == 1 else fitting
        if len(pool) != 1:
            names = ", ".join(f.name for f in funcs) or "none"
            return ParsedResponse(
                None,
                idea,
                f"missing function {entry_point!r} (functions defined: {names})",
                component,
                notes,
            )
        target, rename_from = pool[0], pool[0].name
        notes.append(f"renamed {rename_from!r} to {entry_point!r}")

    got = [a.arg for a in target.args.posonlyargs + target.args.args]
    if not _arity_ok(target, params) or got[: len(params)] != params:
        return ParsedResponse(
            None,
            idea,
            f"function {entry_point!r} has parameters ({', '.join(got)}); expected ({', '.join(params)})",
            component,
            notes,
        )

    if idea is None:
        doc = ast.get_docstring(target)
        idea = " ".join(doc.split()) if doc else None
    body = "\n\n".join(_segment(src_lines, n) for n in kept)
    if rename_from is not None:
        body = re.sub(rf"\b{re.escape(rename_from)}\b", entry_point, body)
    missing = [
        ln for ln in imports.splitlines() if ln.strip() and not re.search(rf"^{re.escape(ln.strip())}\s*$", body, re.MULTILINE)
    ]
    if missing:
        notes.append("prepended task imports")
    program = ("\n".join(missing) + "\n\n\n" if missing else "") + body.strip() + "\n"
    try:
        ast.parse(program)
    except SyntaxError as exc:  # e.g. a rename that hit a keyword-like context
        return ParsedResponse(None, idea, f"syntax error: {exc.msg} (line {exc.lineno})", component, notes)
    return ParsedResponse(program, idea, None, component, notes)
