import math

import numpy as np
import pytest

from optiforge.blackbox.space import CategoricalParam, FloatParam, IntParam, Space

SPEC = {
    "x": {"type": "float", "low": -5, "high": 10, "log": False},
    "lr": {"type": "float", "low": 1e-5, "high": 1e-1, "log": True},
    "n": {"type": "int", "low": 1, "high": 8},
    "s": {"type": "int", "low": 0, "high": 100, "step": 10},
    "w": {"type": "int", "low": 1, "high": 1024, "log": True},
    "opt": {"type": "categorical", "choices": ["adam", "sgd", 3, None]},
}


def test_json_round_trip_and_dim():
    space = Space(SPEC)
    assert space.dim == 6
    assert Space.from_dict(space.to_dict()) == space
    assert space.names == list(SPEC)


def test_encode_decode_round_trip_for_every_type():
    space = Space(SPEC)
    rng = np.random.default_rng(0)
    for params in space.sample(rng, 200):
        u = space.encode(params)
        assert np.all((u >= 0) & (u <= 1))
        assert space.decode(u) == params


def test_decode_covers_whole_cube_with_valid_values():
    space = Space(SPEC)
    for u in np.random.default_rng(1).random((300, space.dim)).tolist() + [[0.0] * 6, [1.0] * 6]:
        params = space.decode(u)
        assert space.validate(params) == params
    assert space.decode([0.0] * 6)["x"] == -5 and space.decode([1.0] * 6)["x"] == 10
    assert space.decode([1.0] * 6)["w"] == 1024 and space.decode([0.0] * 6)["w"] == 1


def test_log_scale_is_uniform_in_log_space():
    p = FloatParam("lr", 1e-4, 1.0, log=True)
    assert p.decode(0.5) == pytest.approx(1e-2)
    assert p.encode(1e-3) == pytest.approx(0.25)


def test_int_grid_cells_are_equal_width():
    p = IntParam("s", 0, 100, step=10)
    counts = np.bincount([(p.decode(u) // 10) for u in np.linspace(0, 1, 11001)], minlength=11)
    assert counts.min() >= 990 and counts.max() <= 1010


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ({"x": {"type": "float", "low": 1, "high": 1}}, r"space\.x: low \(1\.0\) must be < high"),
        ({"x": {"type": "float", "low": 2, "high": 1}}, r"space\.x: low"),
        ({"x": {"type": "int", "low": 3, "high": 3}}, r"space\.x: low"),
        ({"c": {"type": "categorical", "choices": []}}, r"space\.c\.choices: must not be empty"),
        ({"c": {"type": "categorical", "choices": ["a", "a"]}}, r"duplicate"),
        ({"x": {"type": "float", "low": 0, "high": 1, "log": True}}, r"space\.x: log scale needs low > 0"),
        ({"x": {"type": "float", "low": float("nan"), "high": 1}}, r"space\.x\.low: must be finite"),
        ({"x": {"type": "float", "low": 0, "high": float("inf")}}, r"space\.x\.high: must be finite"),
        ({"x": {"type": "float", "low": 0}}, r"space\.x\.high: missing"),
        ({"x": {"type": "double", "low": 0, "high": 1}}, r"space\.x\.type"),
        ({"x": {"type": "float", "low": 0, "high": 1, "lg": True}}, r"unknown key\(s\) \['lg'\]"),
        ({}, r"at least one parameter"),
    ],
)
def test_bad_space_raises_naming_the_problem(spec, match):
    with pytest.raises(ValueError, match=match):
        Space(spec)


def test_bad_space_types():
    with pytest.raises(TypeError, match=r"space\.x\.low"):
        Space({"x": {"type": "float", "low": "0", "high": 1}})
    with pytest.raises(TypeError, match=r"space\.n\.low: expected an integer"):
        Space({"n": {"type": "int", "low": 0.5, "high": 3}})
    with pytest.raises(TypeError, match="space: expected a mapping"):
        Space(42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("params", "exc", "match"),
    [
        ({"x": 1.0, "lr": 0.01, "n": 2, "s": 10, "w": 4, "opt": "adam", "zz": 1}, ValueError, r"unknown parameter\(s\) \['zz'\]"),
        ({"x": 1.0, "lr": 0.01, "n": 2, "s": 10, "w": 4}, ValueError, r"missing parameter\(s\) \['opt'\]"),
        ({"x": float("nan"), "lr": 0.01, "n": 2, "s": 10, "w": 4, "opt": "adam"}, ValueError, r"params\.x: must be finite"),
        ({"x": float("inf"), "lr": 0.01, "n": 2, "s": 10, "w": 4, "opt": "adam"}, ValueError, r"params\.x: must be finite"),
        ({"x": 11.0, "lr": 0.01, "n": 2, "s": 10, "w": 4, "opt": "adam"}, ValueError, r"params\.x: 11\.0 is outside"),
        ({"x": 1.0, "lr": 0.01, "n": 2.5, "s": 10, "w": 4, "opt": "adam"}, ValueError, r"params\.n: expected an integer"),
        ({"x": 1.0, "lr": 0.01, "n": 2, "s": 15, "w": 4, "opt": "adam"}, ValueError, r"params\.s: 15 is not on the grid"),
        ({"x": 1.0, "lr": 0.01, "n": 2, "s": 10, "w": 4, "opt": "rmsprop"}, ValueError, r"params\.opt: 'rmsprop' is not one of"),
        ({"x": "1", "lr": 0.01, "n": 2, "s": 10, "w": 4, "opt": "adam"}, TypeError, r"params\.x: expected a number"),
        ([1, 2], TypeError, r"params: expected an object"),
    ],
)
def test_bad_params_raise_naming_the_parameter(params, exc, match):
    with pytest.raises(exc, match=match):
        Space(SPEC).validate(params)


def test_validate_normalises_json_numbers():
    space = Space(SPEC)
    clean = space.validate({"x": 1, "lr": 0.01, "n": 2.0, "s": 10, "w": 4, "opt": 3.0})
    assert isinstance(clean["x"], float) and clean["n"] == 2 and isinstance(clean["n"], int)
    assert clean["opt"] == 3


def test_canonical_identifies_equal_assignments():
    space = Space({"n": {"type": "int", "low": 0, "high": 3}, "c": {"type": "categorical", "choices": ["a", "b"]}})
    U = np.random.default_rng(0).random((500, 2))
    canon = space.canonical(U)
    for i in range(0, 500, 37):
        for j in range(0, 500, 41):
            same = space.decode(U[i]) == space.decode(U[j])
            assert same == bool(np.all(canon[i] == canon[j]))
    assert space.cardinality() == 8 and math.isinf(Space(SPEC).cardinality())


def test_param_objects_accepted():
    space = Space([FloatParam("a", 0, 1), CategoricalParam("b", ("u", "v"))])
    assert space.to_dict()["b"] == {"type": "categorical", "choices": ["u", "v"]}
    with pytest.raises(ValueError, match="duplicate parameter names"):
        Space([FloatParam("a", 0, 1), FloatParam("a", 0, 2)])
