"""The proposer's answer language: every complete answer parses to k points inside the box."""

import numpy as np
import pytest

from optiforge.agents.hollm.answer_format import RegionPoints
from optiforge.agents.hollm.parsing import parse_candidates
from optiforge.agents.protocols import TextConstraint


def _random_answer(lang: RegionPoints, rng: np.random.Generator) -> str:
    """Walk the language one random allowed character at a time, checking it never gets stuck."""
    state, text = lang.start(), ""
    while not lang.accepts(state):
        options = [(ch, nxt) for ch in lang.alphabet if (nxt := lang.advance(state, ch)) is not None]
        assert options, f"dead end after {text!r}"
        ch, state = options[rng.integers(len(options))]
        text += ch
    assert all(lang.advance(state, ch) is None for ch in lang.alphabet)  # nothing after the k-th point
    return text


@pytest.mark.parametrize("seed", range(5))
def test_every_answer_is_k_points_inside_the_box(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 7))
    a, b = rng.random(d), rng.random(d)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    lo[0], hi[0] = 0.25, 0.2504  # thinner than 10**-3: the side gets a fourth digit
    lang = RegionPoints(lo, hi, k=3, decimals=3)
    assert isinstance(lang, TextConstraint)
    for _ in range(20):
        text = _random_answer(lang, rng)
        points = parse_candidates(text, [f"x{j}" for j in range(d)])
        assert len(points) == 3 and len(text.splitlines()) == 3
        for coords, value in points:
            assert value is None
            assert np.all(np.asarray(coords) >= lo - 1e-9) and np.all(np.asarray(coords) <= hi + 1e-9)


def test_prefixes_outside_the_box_and_wrong_separators_are_refused():
    lang = RegionPoints(np.array([0.2, 0.5]), np.array([0.4, 1.0]), k=2, decimals=2, labels=False)
    s = lang.start()
    assert lang.advance(s, "0.3") is not None
    assert lang.advance(s, "0.5") is None  # 0.5x > 0.4
    assert lang.advance(s, "1") is None
    assert lang.advance(s, "0.30,1.00") is not None  # hi = 1 is writable
    assert lang.advance(s, "0.30;") is None
    assert lang.advance(s, "0.30,0.70,") is None  # a third coordinate
    assert lang.advance(s, "0.30\n") is None  # a line break before the second coordinate
    full = lang.advance(s, "0.30,0.70\n0.21,0.99")
    assert full is not None and lang.accepts(full)
    assert lang.advance(full, "\n") is None and lang.advance(full, "0") is None
    assert not lang.accepts(lang.advance(s, "0.30,0.70"))


def test_each_line_opens_with_a_label_the_format_forces():
    """The label takes the place of the list number a model writes before a point ("1."), which
    in the unlabeled format could only become x1 = 1.000."""
    lang = RegionPoints(np.array([0.0, 0.0]), np.array([1.0, 1.0]), k=2, decimals=2)
    s = lang.start()
    assert lang.advance(s, "1") is None and lang.advance(s, "0") is None  # no coordinate before the label
    assert [ch for ch in lang.alphabet if lang.advance(s, ch) is not None] == ["p"]  # forced
    after = lang.advance(s, "p1: ")
    assert after is not None and lang.advance(after, "0.50,1.00") is not None
    assert lang.advance(s, "p2: ") is None and lang.advance(s, "p1:0") is None
    full = lang.advance(s, "p1: 0.50,1.00\np2: 0.25,0.75")
    assert full is not None and lang.accepts(full)
    assert lang.advance(s, "p1: 0.50,1.00\n0.25") is None  # the second line needs its label
    assert parse_candidates("p1: 0.50,1.00\np2: 0.25,0.75", ["x1", "x2"]) == [([0.5, 1.0], None), ([0.25, 0.75], None)]


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="lo, hi"):
        RegionPoints(np.array([0.5]), np.array([0.4]), k=1)
    with pytest.raises(ValueError, match="lo, hi"):
        RegionPoints(np.array([0.0, 0.1]), np.array([1.0]), k=1)
    with pytest.raises(ValueError, match="k:"):
        RegionPoints(np.array([0.0]), np.array([1.0]), k=0)
    with pytest.raises(ValueError, match="decimals"):
        RegionPoints(np.array([0.0]), np.array([1.0]), k=1, decimals=0)
