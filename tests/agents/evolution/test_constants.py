"""A program's constants as a search space: found by the AST, written back literally."""

from __future__ import annotations

import ast

import pytest

from optiforge.agents.evolution.constants import (
    find_constants,
    signed_values,
    space_point,
    substitute,
    tune_space,
)
from optiforge.blackbox.space import Space

PROGRAM = '''import numpy as np


def priority(item, bins):
    r = bins - item  # slack after packing; é keeps byte offsets honest
    first = bins[0] + bins[-1] + np.zeros(3).sum(axis=0)
    for i in range(2):
        r = r * 1.0
    return -r + 0.5 * (r < item) - 2.5e-3 * first - 3 * (r > 7)
'''


def test_finds_magnitudes_and_leaves_indices_counts_and_axes_alone():
    found = find_constants(PROGRAM)
    assert [(c.value, c.is_int) for c in found] == [(1.0, False), (0.5, False), (2.5e-3, False),
                                                   (3.0, True), (7.0, True)]
    assert [c.name for c in found] == ["c0", "c1", "c2", "c3", "c4"]
    assert [c.value for c in find_constants(PROGRAM, max_constants=2)] == [1.0, 0.5]
    assert find_constants("def priority(item, bins):\n    return -(bins - item)\n") == []
    assert find_constants("def f(:\n") == []  # unparsable: nothing to tune
    with pytest.raises(TypeError, match="code"):
        find_constants(None)  # type: ignore[arg-type]


def test_a_negative_literal_is_one_constant_and_keeps_its_sign():
    code = "def f(x):\n    return x ** -0.5 + (-2) * x\n"
    found = find_constants(code)
    assert [(c.value, c.is_int) for c in found] == [(-0.5, False), (-2.0, True)]
    space = Space(tune_space(found))
    point = space_point(found)
    assert space.validate(point) == point  # the program's own constants are in the box
    values = signed_values(found, {"c0": 0.25, "c1": -3})
    assert values == {"c0": -0.25, "c1": -3.0}
    new = substitute(code, found, values)
    assert new == "def f(x):\n    return x ** (-0.25) + (-3) * x\n"
    ns: dict = {}
    exec(compile(new, "<test>", "exec"), ns)  # trusted test code
    assert ns["f"](4.0) == pytest.approx(4.0 ** -0.25 - 12.0)


def test_substitute_changes_only_the_literals():
    found = find_constants(PROGRAM)
    same = substitute(PROGRAM, found, signed_values(found, space_point(found)))
    assert ast.dump(ast.parse(same)) == ast.dump(ast.parse(PROGRAM))
    new = substitute(PROGRAM, found, {"c1": 0.123456789, "c3": 5})
    assert "# slack after packing; é keeps byte offsets honest" in new  # comments survive
    assert "0.123457 * (r < item)" in new and "- 5 * (r > 7)" in new
    assert "bins[0]" in new and "range(2)" in new and "axis=0" in new
    assert [c.value for c in find_constants(new)] == [1.0, 0.123457, 2.5e-3, 5.0, 7.0]


def test_the_box_keeps_scale_and_sign():
    found = find_constants("def f(x):\n    return 0.0 * x + 8.0 - 100 * x\n")
    space = tune_space(found)
    assert space["c0"] == {"type": "float", "low": -1.0, "high": 1.0}
    assert space["c1"] == {"type": "float", "low": 2.0, "high": 32.0, "log": True}
    assert space["c2"] == {"type": "int", "low": 0, "high": 200}
    # sentinels and epsilons are not weights (and would not give a finite box)
    odd = "def f(x):\n    return min(x, 1e18) + 1e-300 + 5e11 + 2.0 * x\n"
    assert [c.value for c in find_constants(odd)] == [2.0]
    Space(tune_space(find_constants(odd)))  # a valid space
