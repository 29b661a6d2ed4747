"""The proposer's answer as a language: ``k`` lines of ``d`` in-region coordinates.

HOLLM asks the LLM for ``k`` points inside one region. A small model mostly answers with
prose, with rows copied from the prompt, or with points outside the box. docs/benchmarks/hollm.md
measured 17 of 580 requested points accepted with SmolLM2-135M. :class:`RegionPoints`
states the answer format as a :class:`~optiforge.agents.protocols.TextConstraint`, and a
backend that decodes under it (llama.cpp, transformers) samples only digits that keep the
point in the box. The model still chooses every digit, but nothing it writes can be rejected
for format or position.

Each coordinate is written ``I.FFF`` (``decimals`` fraction digits, integer part 0 or 1),
the format of the prompt's evaluated points; coordinates are separated by ``,`` and points
by a line break. A prefix is allowed while some completion of it lies in ``[lo_j, hi_j]``,
so a number can always be finished, and the language has no dead ends.

Each line starts with a label the format writes itself, ``p1: ``, ``p2: ``, ... (its text is
fixed: where a vocabulary has one way to write it, the backend appends it without a decoding
step; where it has several, the model only picks among spellings of the same text). Without
it, the 135M model wrote ``x1 = 1.000`` in 85 % of its points wherever a region reached 1 in
x1, against 23 % for the other coordinates (docs/benchmarks/hollm.md): the first digit of a
line is where a list number goes, and a list that begins ``1.`` can only end as ``1.000``. The
label is that list number (measured with it: 23 % of 77 points, one short run).
"""

from __future__ import annotations

import math

import numpy as np

_DIGITS = "0123456789"


class RegionPoints:
    """``k`` points of ``lo <= x <= hi`` (unit-cube coordinates), one per line, ``I.FFF,...``.

    Parameters
    ----------
    lo, hi : array of shape (d,)
        The region's box, inside [0, 1].
    k : int
        Points per answer.
    decimals : int
        Fraction digits of each coordinate. A side narrower than one step of ``10**-decimals``
        gets more digits (up to 9), so every side holds at least one writable value.
    labels : bool
        Start each line with ``p<n>: `` (see the module docstring).

    Notes
    -----
    A state is ``(line, field, typed)``: the point being written, its coordinate (``-1``
    while the line's label is written), and the characters of that coordinate (or label) so
    far. The answer is complete after the ``d``-th coordinate of the ``k``-th point (no
    trailing line break).
    """

    alphabet = _DIGITS + ".,\n" + "p: "

    def __init__(self, lo: np.ndarray, hi: np.ndarray, k: int, decimals: int = 3, labels: bool = True) -> None:
        lo = np.asarray(lo, dtype=float).ravel()
        hi = np.asarray(hi, dtype=float).ravel()
        if lo.shape != hi.shape or lo.size == 0:
            raise ValueError(f"lo, hi: expected two arrays of the same length d >= 1, got {lo.shape} and {hi.shape}")
        if np.any(lo > hi) or np.any(lo < 0) or np.any(hi > 1):
            raise ValueError("lo, hi: expected 0 <= lo <= hi <= 1 in every coordinate")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k: expected an int >= 1, got {k!r}")
        if isinstance(decimals, bool) or not isinstance(decimals, int) or not 1 <= decimals <= 9:
            raise ValueError(f"decimals: expected an int in [1, 9], got {decimals!r}")
        if not isinstance(labels, bool):
            raise TypeError(f"labels: expected a bool, got {type(labels).__name__}")
        self.labels = labels
        while decimals < 9 and np.any(np.ceil(lo * 10**decimals - 1e-9) > np.floor(hi * 10**decimals + 1e-9)):
            decimals += 1
        self.d, self.k, self.decimals = lo.size, k, decimals
        self._scale = 10**decimals
        # Integer bounds in units of 10**-decimals; the 1e-9 slack absorbs float rounding of
        # region edges such as 0.3 (the proposer accepts points within 1e-9 of the box).
        self._lo_units = [max(0, math.ceil(v * self._scale - 1e-9)) for v in lo]
        self._hi_units = [min(self._scale, math.floor(v * self._scale + 1e-9)) for v in hi]
        for j in range(self.d):  # a side thinner than 1e-9: its nearest writable value
            if self._lo_units[j] > self._hi_units[j]:
                self._lo_units[j] = self._hi_units[j] = round(float(lo[j] + hi[j]) / 2 * self._scale)
        self._width = 2 + decimals  # "I." + fraction digits

    def label(self, line: int) -> str:
        """The text that opens line ``line`` (0-based): ``"p1: "``, or ``""`` without labels."""
        return f"p{line + 1}: " if self.labels else ""

    def start(self) -> tuple[int, int, str]:
        """Before the first character of the first point."""
        return (0, -1, "") if self.labels else (0, 0, "")

    def accepts(self, state: tuple[int, int, str]) -> bool:
        """Whether ``k`` whole points have been written."""
        line, field, typed = state
        return line == self.k - 1 and field == self.d - 1 and len(typed) == self._width

    def advance(self, state: tuple[int, int, str], text: str) -> tuple[int, int, str] | None:
        """The state after ``text``, or ``None`` where ``text`` breaks the format or leaves the box."""
        line, field, typed = state
        for ch in text:
            if field == -1:  # the line's label: exactly its characters
                label = self.label(line)
                if ch != label[len(typed)]:
                    return None
                typed += ch
                if typed == label:
                    field, typed = 0, ""
                continue
            if len(typed) == self._width:  # a whole coordinate: only a separator may follow
                if ch == "," and field < self.d - 1:
                    field, typed = field + 1, ""
                elif ch == "\n" and field == self.d - 1 and line < self.k - 1:
                    line, field, typed = line + 1, (-1 if self.labels else 0), ""
                else:
                    return None
                continue
            if len(typed) == 1:
                if ch != ".":
                    return None
            elif ch not in _DIGITS or not self._reachable(field, typed + ch):
                return None
            typed += ch
        return (line, field, typed)

    def _reachable(self, field: int, typed: str) -> bool:
        """Whether some completion of ``typed`` (e.g. ``"0.4"``) lies inside side ``field``."""
        whole = int(typed[0]) * self._scale
        frac = typed[2:]
        pad = self.decimals - len(frac)
        low = whole + int((frac + "0" * pad) or 0)
        high = whole + int((frac + "9" * pad) or 0)
        return low <= self._hi_units[field] and high >= self._lo_units[field]
