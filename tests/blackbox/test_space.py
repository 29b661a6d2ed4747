import math

import numpy as np
import pytest

from optiforge.blackbox.space import (
    CategoricalParam,
    FloatParam,
    IntParam,
    SimplexParam,
    Space,
    SphereParam,
)

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


# ---------------------------------------------------------------------------- manifold parameters
MANIFOLD = {"w": {"type": "simplex", "dim": 4}, "u": {"type": "sphere", "dim": 3},
            "S": {"type": "spd", "n": 3, "scale": 2.0}, "x": {"type": "float", "low": 0, "high": 1}}


def test_manifold_params_round_trip_validate_and_sample():
    space = Space(MANIFOLD)
    assert Space.from_dict(space.to_dict()) == space and not space.is_box()
    assert [p.name for p in space.manifold_params()] == ["w", "u", "S"]
    for p in space.sample(np.random.default_rng(0), 50):
        clean = space.validate(p)
        assert min(clean["w"]) > 0 and abs(sum(clean["w"]) - 1) < 1e-12
        assert abs(np.linalg.norm(clean["u"]) - 1) < 1e-12
        S = np.array(clean["S"])
        assert np.allclose(S, S.T) and np.linalg.eigvalsh(S)[0] > 0
    assert space.cardinality() == math.inf and not space.is_discrete()
    with pytest.raises(TypeError, match=r"space\.w: a simplex parameter has no unit-cube encoding"):
        space.encode(space.sample(np.random.default_rng(0))[0])


def test_random_manifold_points_are_uniform_in_the_stated_sense():
    rng = np.random.default_rng(1)
    W = np.array([SimplexParam("w", 3).random(rng) for _ in range(20000)])
    # flat Dirichlet: each marginal is Beta(1, 2), mean 1/3, P(w_0 < 1/2) = 3/4
    assert abs(W[:, 0].mean() - 1 / 3) < 0.01 and abs((W[:, 0] < 0.5).mean() - 0.75) < 0.01
    U = np.array([SphereParam("u", 3).random(rng) for _ in range(20000)])
    # uniform on S^2: the height u_z is uniform on [-1, 1] (Archimedes)
    assert abs((U[:, 2] < 0).mean() - 0.5) < 0.01 and abs((U[:, 2] > 0.5).mean() - 0.25) < 0.01


@pytest.mark.parametrize(("spec", "value", "match"), [
    ({"type": "simplex", "dim": 3}, [0.5, 0.5], r"params\.w: expected 3 numbers, got 2"),
    ({"type": "simplex", "dim": 3}, [0.5, 0.6, -0.1], r"params\.w\[2\]: simplex weights must be >= 0"),
    ({"type": "simplex", "dim": 3}, [0.5, 0.5, 0.5], r"params\.w: simplex weights must sum to 1"),
    ({"type": "simplex", "dim": 3}, [0.5, float("nan"), 0.5], r"params\.w\[1\]: must be finite"),
    ({"type": "sphere", "dim": 2}, [1.0, 1.0], r"params\.w: a sphere point must have norm 1"),
    ({"type": "spd", "n": 2}, [[1.0, 2.0], [0.0, 1.0]], r"params\.w: the matrix must be symmetric"),
    ({"type": "spd", "n": 2}, [[1.0, 2.0], [2.0, 1.0]], r"params\.w: the matrix must be positive definite"),
])
def test_bad_manifold_values_name_the_parameter(spec, value, match):
    with pytest.raises(ValueError, match=match):
        Space({"w": spec}).validate({"w": value})


@pytest.mark.parametrize(("spec", "err", "match"), [
    ({"type": "simplex"}, ValueError, r"space\.w\.dim: missing"),
    ({"type": "simplex", "dim": 1}, ValueError, r"space\.w\.dim: must be >= 2"),
    ({"type": "sphere", "dim": "3"}, TypeError, r"space\.w\.dim: expected an integer"),
    ({"type": "spd", "n": 2, "scale": -1}, ValueError, r"space\.w\.scale: must be > 0"),
    ({"type": "spd", "n": 2000}, ValueError, r"space\.w\.n: at most 1000"),
    ({"type": "sphere", "dim": 3, "low": 0}, ValueError, r"unknown key\(s\) \['low'\] for a sphere"),
])
def test_bad_manifold_specs_name_the_key(spec, err, match):
    with pytest.raises(err, match=match):
        Space({"w": spec})
