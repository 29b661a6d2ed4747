"""Constrained decoding for the in-process backends: which tokens a constraint allows, per state.

A :class:`~optiforge.agents.protocols.TextConstraint` speaks in characters; a model speaks in
tokens. :class:`ConstraintDecoder` bridges the two for one constraint. It keeps the vocabulary
tokens whose text uses only the constraint's alphabet, and for each state it meets it computes
once which of them the constraint accepts and where each one leads. A backend then masks the
logits to those tokens (plus end-of-generation where the state accepts) before it samples.
Sampling stays the backend's own (temperature, nucleus) over the renormalised allowed set.
This is what llama.cpp's grammars and "structured outputs" do; here the language is Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from optiforge.agents.protocols import TextConstraint


def check_constraints(constraints: Sequence[TextConstraint | None] | None,
                      n_prompts: int) -> list[TextConstraint | None]:
    """One constraint (or ``None``) per prompt, checked; ``None`` means no prompt is constrained.

    Raises
    ------
    TypeError, ValueError
        Naming ``constraints``.
    """
    if constraints is None:
        return [None] * n_prompts
    if isinstance(constraints, (str, bytes)) or not isinstance(constraints, Sequence):
        raise TypeError(f"constraints: expected a sequence (one per prompt), got {type(constraints).__name__}")
    if len(constraints) != n_prompts:
        raise ValueError(f"constraints: expected one per prompt ({n_prompts}), got {len(constraints)}")
    for i, c in enumerate(constraints):
        if c is not None and not isinstance(c, TextConstraint):
            raise TypeError(f"constraints: item {i} is {type(c).__name__}, not a TextConstraint "
                            "(alphabet, start(), advance(), accepts())")
    return list(constraints)


class ConstraintDecoder:
    """The tokens one :class:`TextConstraint` allows after each state, computed once per state.

    Parameters
    ----------
    constraint : TextConstraint
        The language.
    token_texts : sequence of str
        The text of every vocabulary token, by id (``""`` for special tokens).
    eog_id : int
        The token that ends an answer (offered where the state accepts).
    """

    def __init__(self, constraint: TextConstraint, token_texts: Sequence[str], eog_id: int) -> None:
        alphabet = set(constraint.alphabet)
        self.constraint = constraint
        self.eog_id = int(eog_id)
        self._texts = token_texts
        self._candidates = [i for i, t in enumerate(token_texts) if t and set(t) <= alphabet]
        self._options: dict[Any, tuple[np.ndarray, dict[int, Any]]] = {}

    def start(self) -> Any:
        """The state of a fresh answer."""
        return self.constraint.start()

    def options(self, state: Any) -> tuple[np.ndarray, dict[int, Any]]:
        """The allowed token ids after ``state`` (``eog_id`` among them where it accepts), and the
        state each allowed non-ending token leads to."""
        hit = self._options.get(state)
        if hit is None:
            nxt: dict[int, Any] = {}
            for tok in self._candidates:
                after = self.constraint.advance(state, self._texts[tok])
                if after is not None:
                    nxt[tok] = after
            ids = list(nxt)
            if self.constraint.accepts(state):
                ids.append(self.eog_id)
            hit = (np.asarray(ids, dtype=np.int64), nxt)
            self._options[state] = hit
        return hit

    def forced(self, state: Any) -> tuple[int, Any] | None:
        """The one token the language allows after ``state`` and the state it leads to, or
        ``None`` where there is a choice (or the answer may end there).

        Such a token has probability 1 under the masked distribution whatever the logits, so a
        backend may append it without a forward pass of its own ("jump-forward" decoding, as in
        SGLang's compressed finite-state machines); the answers' distribution is unchanged.
        """
        ids, nxt = self.options(state)
        if len(ids) != 1 or int(ids[0]) == self.eog_id:
            return None
        tok = int(ids[0])
        return tok, nxt[tok]

    def finished(self, state: Any) -> bool:
        """Whether an answer in ``state`` cannot go on (it accepts with nothing to follow, or is
        stuck); the backend then ends it without sampling."""
        return not self.options(state)[1]


def decoders_for(constraints: Sequence[TextConstraint | None], token_texts: Sequence[str],
                 eog_id: int) -> list[ConstraintDecoder | None]:
    """One decoder per distinct constraint object (prompts that share a constraint share its cache)."""
    made: dict[int, ConstraintDecoder] = {}
    out: list[ConstraintDecoder | None] = []
    for c in constraints:
        if c is None:
            out.append(None)
            continue
        if id(c) not in made:
            made[id(c)] = ConstraintDecoder(c, token_texts, eog_id)
        out.append(made[id(c)])
    return out
