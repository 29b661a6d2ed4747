"""Prompt builders for CALM's five operators and the small-model ``tweak``.

Each operator asks for one structural edit so that the reward (and, later, GRPO) can credit
it: initialization (from scratch or from the seed), injection (add one component and
describe it; the global component library is shown to avoid redundancy), replacement
(rewrite one component, e.g. a constant into an instance-dependent rule), diversity-aware
crossover (two parents) and simplification (compress a bloated heuristic).

``tweak`` is ours, for small models (a 135M model rarely writes a valid *new* program when
asked for a new component): change exactly one expression of the parent, or add one term
with a numeric weight, with up to two other good pool heuristics shown first as examples
(few-shot from the pool). A weight it adds is what the ``tune`` operator then sets.

The wording follows CALM's published prompt excerpt ("Searching superior heuristics on the
{name} problem in an evolutionary manner ..."); the full prompts (paper Figs. 3-9) are not
available, so the operator instructions are our own. Prompts are kept compact for small
local models: :func:`build_prompt` enforces ``max_prompt_chars`` by progressively dropping
comments/docstrings from shown code, trimming the component library and shortening the
problem description.

References
----------
Huang et al. "CALM: Co-evolution of Algorithms and Language Model for Automatic Heuristic
Design." arXiv:2505.12285 (2025), Sec. 3 (operators).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from optiforge.agents.evolution.canonical import normalize_code
from optiforge.agents.evolution.population import PoolEntry

OPERATORS = ("initialization", "injection", "replacement", "crossover", "simplification", "tweak")
"""The LLM operators (the agent also uses ``"seed"`` for the task's seed programs and
``"tune"`` for children whose constants a study set, ``"graft"`` for children with a term
added from the task's features)."""

N_PARENTS = {"initialization": (0, 1), "injection": (1, 1), "replacement": (1, 1),
             "crossover": (2, 2), "simplification": (1, 1), "tweak": (1, 3)}
"""Allowed (min, max) number of parents shown per operator."""

_LIBRARY_KEEP = 5


def _header(task: Any, description: str) -> str:
    return (
        f"Searching superior heuristics on the {task.name} problem in an evolutionary manner "
        "through conversation between User and Assistant. "
        f"In this problem, {description.strip()}\n"
        "The User provides existing algorithms and requests a new one."
    )


ANSWER_FORMATS = ("calm", "code")
"""How a prompt asks for the answer: ``calm`` (CALM's: the idea in double braces, then the code)
or ``code`` (one fenced block, the idea in the function's docstring: what coder models answer
with anyway; see docs/benchmarks/discovery.md)."""


def _footer(task: Any, component: bool, answer_format: str = "calm") -> str:
    if answer_format == "code":
        text = (
            "\n## Output format\n"
            f"Answer with one ```python block holding the complete new `{task.entry_point}` function "
            "(same parameters and return type as above, numpy only, deterministic). Its docstring "
            "states the idea, starting with 'The idea of the algorithm is to'. Define the function "
            "once and write no example usage."
        )
        if component:
            text += " After the block, write one line 'Component: <short description of the new component>'."
        return text
    text = (
        "\n## Output format\n"
        "First present a concise conceptual description, followed by a complete code "
        "implementation. The description must be enclosed with a double brace and start with "
        "'The idea of the algorithm is to'. The code must strictly follow the input-output "
        "variable names and types of the provided implementation, be a single Python function "
        f"named `{task.entry_point}` in a ```python block, be deterministic (no randomness) and "
        "self-contained."
    )
    if component:
        text += " After the code, write one line 'Component: <short description of the new component>'."
    return text


def _show(entry: PoolEntry, label: str, compact: bool) -> str:
    code = normalize_code(entry.code, canonical_names=False) if compact else entry.code.strip()
    idea = entry.idea or "(no description)"
    return f"### {label} (score {entry.score:.4g}, lower is better)\n{{{{{idea}}}}}\n```python\n{code}\n```"


def _body(operator: str, task: Any, parents: Sequence[PoolEntry], library: Sequence[str],
          compact: bool) -> tuple[str, bool]:
    if operator == "initialization":
        if parents:
            shown = _show(parents[0], "Seed algorithm", compact)
            ask = ("Create a new algorithm that solves the same problem with a different idea "
                   "from the seed algorithm, aiming for a lower score.")
        else:
            template = normalize_code(task.template, canonical_names=False) if compact else task.template.strip()
            shown = f"### Interface\n```python\n{template}\n```"
            ask = "Design a new heuristic from scratch that implements this interface."
        return f"{shown}\n\n## Your Task\n{ask}", False
    if operator == "injection":
        used = "\n".join(f"- {c}" for c in library) or "- (none yet)"
        ask = ("Add exactly ONE new component (a new term, rule or feature) to this algorithm to "
               "improve it; keep the rest unchanged. Components already used elsewhere, do not "
               f"repeat them:\n{used}")
        return f"{_show(parents[0], 'Algorithm', compact)}\n\n## Your Task\n{ask}", True
    if operator == "replacement":
        ask = ("Pick ONE specific component of this algorithm, for example a fixed constant or an "
               "instance-independent rule, and replace it with a better, instance-dependent rule. "
               "Change only that component.")
        return f"{_show(parents[0], 'Algorithm', compact)}\n\n## Your Task\n{ask}", False
    if operator == "crossover":
        shown = f"{_show(parents[0], 'Algorithm 1', compact)}\n\n{_show(parents[1], 'Algorithm 2', compact)}"
        ask = ("Create a new algorithm that combines the most effective components of both "
               "algorithms into one coherent heuristic.")
        return f"{shown}\n\n## Your Task\n{ask}", False
    if operator == "simplification":
        ask = ("This algorithm has grown complicated. Simplify it: remove redundant or "
               "ineffective components, merge similar terms and shorten the code while keeping "
               "its behaviour and performance.")
        return f"{_show(parents[0], 'Algorithm', compact)}\n\n## Your Task\n{ask}", False
    if operator == "tweak":
        # parents[0] is edited; the others are examples from the pool (shown first, so the
        # algorithm to edit is what the model read last).
        examples = "\n\n".join(_show(e, f"Example {i + 1}", True) for i, e in enumerate(parents[1:]))
        shown = _show(parents[0], "Algorithm to edit", compact)
        ask = ("Make ONE small edit to the algorithm to edit: change exactly one expression, or "
               "add one term with a numeric weight (for example `+ 0.5 * <some quantity>`). "
               "Keep every other line unchanged.")
        return (f"{examples}\n\n{shown}" if examples else shown) + f"\n\n## Your Task\n{ask}", False
    raise ValueError(f"operator: unknown operator {operator!r}; known: {', '.join(OPERATORS)}")


def build_prompt(
    operator: str,
    task: Any,
    parents: Sequence[PoolEntry] = (),
    library: Sequence[str] = (),
    max_prompt_chars: int = 4000,
    answer_format: str = "calm",
) -> str:
    """Build the prompt of one operator.

    Parameters
    ----------
    operator : str
        One of :data:`OPERATORS`.
    task : HeuristicTask
        Uses ``name``, ``description``, ``entry_point`` and (initialization from scratch)
        ``template``.
    parents : sequence of PoolEntry
        Heuristics shown (0 or 1 for initialization, 2 for crossover, 1 to 3 for tweak: the
        first is edited, the others are examples; else 1).
    library : sequence of str
        Component descriptions already used (shown by injection).
    max_prompt_chars : int
        Soft limit: compaction steps are applied in order until the prompt fits (code
        without comments/docstrings, the 5 most recent library items, a 300-character
        description); if it still does not fit, the most compact prompt is returned.
    answer_format : {"calm", "code"}
        How the answer is asked for (:data:`ANSWER_FORMATS`).

    Returns
    -------
    str
        The prompt (a user message).
    """
    if operator not in OPERATORS:
        raise ValueError(f"operator: unknown operator {operator!r}; known: {', '.join(OPERATORS)}")
    lo, hi = N_PARENTS[operator]
    if not lo <= len(parents) <= hi:
        raise ValueError(f"parents: {operator} takes {lo}..{hi} parents, got {len(parents)}")
    if answer_format not in ANSWER_FORMATS:
        raise ValueError(f"answer_format: expected one of {ANSWER_FORMATS}, got {answer_format!r}")
    if not isinstance(max_prompt_chars, int) or max_prompt_chars < 1:
        raise ValueError(f"max_prompt_chars: must be a positive int, got {max_prompt_chars!r}")

    description = task.description
    library = list(library)
    prompt = ""
    for level in range(4):
        if level >= 2:
            library = library[-_LIBRARY_KEEP:]
        if level >= 3 and len(description) > 300:
            description = description[:297].rstrip() + "..."
        body, component = _body(operator, task, parents, library, compact=level >= 1)
        prompt = f"{_header(task, description)}\n\n{body}\n{_footer(task, component, answer_format)}"
        if len(prompt) <= max_prompt_chars:
            break
    return prompt
