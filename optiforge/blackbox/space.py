"""Search spaces for black-box optimization: box parameters (float, int, categorical) and
manifold parameters (simplex, sphere, spd).

A :class:`Space` maps user-facing parameter values to points of the unit cube ``[0, 1]^d``
(:meth:`Space.encode`) and back (:meth:`Space.decode`), so optimizers work on one geometry
whatever the parameter types. Its JSON form is the API contract::

    {"x": {"type": "float", "low": -5, "high": 10, "log": false},
     "n": {"type": "int", "low": 1, "high": 8},
     "opt": {"type": "categorical", "choices": ["adam", "sgd"]}}

Discrete values (int grid points, categorical choices) own equal-width cells of the unit
interval and encode to the cell centres, so every point of the cube decodes to a valid value
and a value survives an encode/decode round trip unchanged.

Manifold parameters hold a point of a manifold rather than one number::

    {"w": {"type": "simplex", "dim": 6},      # 6 weights >= 0 summing to 1 (a JSON list)
     "u": {"type": "sphere", "dim": 3},       # a unit vector of R^3 (a JSON list)
     "S": {"type": "spd", "n": 3}}            # a symmetric positive-definite 3x3 matrix (nested lists)

They have no unit-cube encoding, so only agents that work on manifolds take them
(``zo-riemannian``, ``random``); :meth:`Space.is_box` tells them apart and HOLLM refuses
them. The geometry (tangent spaces, metrics, retractions) lives in
:mod:`optiforge.blackbox.riemannian`; this module is the vocabulary: validation, JSON form and
random points, in numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_FLOAT_KEYS = {"type", "low", "high", "log", "step"}
_INT_KEYS = {"type", "low", "high", "log", "step"}
_CAT_KEYS = {"type", "choices"}
MAX_INT_MAGNITUDE = 2**53
"""Largest magnitude of an int parameter's bounds and step (integers beyond are inexact as floats)."""
MAX_GRID_POINTS = 2**53
"""Most grid points of a float parameter with a ``step``."""


def _finite_number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{what}: expected a number, got {type(value).__name__} {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{what}: must be finite, got {value!r}")
    return v


@dataclass(frozen=True)
class FloatParam:
    """A real-valued parameter in ``[low, high]``, optionally log-scaled or on a ``step`` grid."""

    name: str
    low: float
    high: float
    log: bool = False
    step: float | None = None

    def __post_init__(self) -> None:
        low = _finite_number(self.low, f"space.{self.name}.low")
        high = _finite_number(self.high, f"space.{self.name}.high")
        if low >= high:
            raise ValueError(f"space.{self.name}: low ({low}) must be < high ({high})")
        if not math.isfinite(high - low):
            raise ValueError(f"space.{self.name}: high - low overflows a float; narrow the range")
        if not isinstance(self.log, bool):
            raise TypeError(f"space.{self.name}.log: expected true/false, got {self.log!r}")
        if self.log and low <= 0:
            raise ValueError(f"space.{self.name}: log scale needs low > 0, got low={low}")
        if self.step is not None:
            step = _finite_number(self.step, f"space.{self.name}.step")
            if step <= 0:
                raise ValueError(f"space.{self.name}.step: must be > 0, got {step}")
            if (high - low) / step > MAX_GRID_POINTS:
                raise ValueError(f"space.{self.name}.step: {step} is too small for [{low}, {high}] "
                                 f"(more than 2**53 grid points)")
            if self.log:
                raise ValueError(f"space.{self.name}: step and log cannot be combined")
            object.__setattr__(self, "step", step)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    @property
    def _n_grid(self) -> int:
        return int(math.floor((self.high - self.low) / self.step + 1e-9)) + 1  # type: ignore[operator]

    def encode(self, value: float) -> float:
        if self.step is not None:
            return (round((value - self.low) / self.step) + 0.5) / self._n_grid
        if self.log:
            return (math.log(value) - math.log(self.low)) / (math.log(self.high) - math.log(self.low))
        return (value - self.low) / (self.high - self.low)

    def decode(self, u: float) -> float:
        u = min(max(float(u), 0.0), 1.0)
        if self.step is not None:
            i = min(int(u * self._n_grid), self._n_grid - 1)
            return min(self.low + i * self.step, self.high)
        if self.log:
            v = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            v = self.low + u * (self.high - self.low)
        return min(max(v, self.low), self.high)

    def validate(self, value: Any) -> float:
        v = _finite_number(value, f"params.{self.name}")
        if not self.low <= v <= self.high:
            raise ValueError(f"params.{self.name}: {v} is outside [{self.low}, {self.high}]")
        if self.step is not None:
            k = (v - self.low) / self.step
            if abs(k - round(k)) > 1e-6:
                raise ValueError(f"params.{self.name}: {v} is not on the grid low + i*{self.step}")
        return v

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "float", "low": self.low, "high": self.high, "log": self.log}
        if self.step is not None:
            d["step"] = self.step
        return d


@dataclass(frozen=True)
class IntParam:
    """An integer parameter ``low, low+step, ..., <= high``; ``log`` spaces the grid geometrically."""

    name: str
    low: int
    high: int
    step: int = 1
    log: bool = False

    def __post_init__(self) -> None:
        for key in ("low", "high", "step"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                if isinstance(v, float) and math.isfinite(v) and v.is_integer():
                    object.__setattr__(self, key, int(v))
                    continue
                raise TypeError(f"space.{self.name}.{key}: expected an integer, got {v!r}")
            object.__setattr__(self, key, int(v))
            if abs(getattr(self, key)) > MAX_INT_MAGNITUDE:
                raise ValueError(f"space.{self.name}.{key}: must be within +-2**53 (larger integers "
                                 f"are not exact as JSON numbers)")
        if self.low >= self.high:
            raise ValueError(f"space.{self.name}: low ({self.low}) must be < high ({self.high})")
        if self.step <= 0:
            raise ValueError(f"space.{self.name}.step: must be > 0, got {self.step}")
        if not isinstance(self.log, bool):
            raise TypeError(f"space.{self.name}.log: expected true/false, got {self.log!r}")
        if self.log and self.low <= 0:
            raise ValueError(f"space.{self.name}: log scale needs low > 0, got low={self.low}")
        if self.log and self.step != 1:
            raise ValueError(f"space.{self.name}: step and log cannot be combined")

    @property
    def values(self) -> int:
        """How many grid values the parameter has."""
        return (self.high - self.low) // self.step + 1

    def encode(self, value: int) -> float:
        if self.log:
            # Value v owns the log-space cell [log(v - 1/2), log(v + 1/2)]; low >= 1 keeps it finite.
            lo, hi = math.log(self.low - 0.5), math.log(self.high + 0.5)
            return (math.log(value) - lo) / (hi - lo)
        return ((value - self.low) // self.step + 0.5) / self.values

    def decode(self, u: float) -> int:
        u = min(max(float(u), 0.0), 1.0)
        if self.log:
            lo, hi = math.log(self.low - 0.5), math.log(self.high + 0.5)
            v = int(round(math.exp(lo + u * (hi - lo))))
            return min(max(v, self.low), self.high)
        i = min(int(u * self.values), self.values - 1)
        return self.low + i * self.step

    def validate(self, value: Any) -> int:
        if isinstance(value, bool):
            raise TypeError(f"params.{self.name}: expected an integer, got {value!r}")
        if isinstance(value, (float, np.floating)):
            if not math.isfinite(value):
                raise ValueError(f"params.{self.name}: must be finite, got {value!r}")
            if not float(value).is_integer():
                raise ValueError(f"params.{self.name}: expected an integer, got {value!r}")
            value = int(value)
        if not isinstance(value, (int, np.integer)):
            raise TypeError(f"params.{self.name}: expected an integer, got {type(value).__name__} {value!r}")
        v = int(value)
        if not self.low <= v <= self.high:
            raise ValueError(f"params.{self.name}: {v} is outside [{self.low}, {self.high}]")
        if (v - self.low) % self.step:
            raise ValueError(f"params.{self.name}: {v} is not on the grid {self.low} + i*{self.step}")
        return v

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "int", "low": self.low, "high": self.high}
        if self.step != 1:
            d["step"] = self.step
        if self.log:
            d["log"] = True
        return d


@dataclass(frozen=True)
class CategoricalParam:
    """A parameter taking one of ``choices`` (JSON scalars: str, int, float, bool or null)."""

    name: str
    choices: tuple[Any, ...]

    def __post_init__(self) -> None:
        if isinstance(self.choices, (str, bytes)) or not isinstance(self.choices, Sequence):
            raise TypeError(f"space.{self.name}.choices: expected a list, got {self.choices!r}")
        choices = tuple(self.choices)
        if not choices:
            raise ValueError(f"space.{self.name}.choices: must not be empty")
        for c in choices:
            if c is not None and not isinstance(c, (str, int, float, bool)):
                raise TypeError(f"space.{self.name}.choices: {c!r} is not a JSON scalar")
            if isinstance(c, float) and not math.isfinite(c):
                raise ValueError(f"space.{self.name}.choices: {c!r} is not finite")
        keys = [(type(c).__name__, c) for c in choices]
        if len(set(keys)) != len(keys):
            raise ValueError(f"space.{self.name}.choices: duplicate choices in {list(choices)!r}")
        object.__setattr__(self, "choices", choices)

    def index(self, value: Any) -> int:
        for i, c in enumerate(self.choices):
            if type(c) is type(value) and c == value:
                return i
        # JSON round trips turn 1.0 into 1; accept numerically equal numbers too.
        for i, c in enumerate(self.choices):
            if (isinstance(c, (int, float)) and not isinstance(c, bool)
                    and isinstance(value, (int, float)) and not isinstance(value, bool) and c == value):
                return i
        raise ValueError(f"params.{self.name}: {value!r} is not one of {list(self.choices)!r}")

    def encode(self, value: Any) -> float:
        return (self.index(value) + 0.5) / len(self.choices)

    def decode(self, u: float) -> Any:
        u = min(max(float(u), 0.0), 1.0)
        return self.choices[min(int(u * len(self.choices)), len(self.choices) - 1)]

    def validate(self, value: Any) -> Any:
        return self.choices[self.index(value)]

    def to_dict(self) -> dict[str, Any]:
        return {"type": "categorical", "choices": list(self.choices)}


MAX_MANIFOLD_COORDS = 1_000_000
"""Most coordinates of one manifold parameter (an spd ``n`` x ``n`` matrix has ``n**2``)."""
MANIFOLD_ATOL = 1e-6
"""Tolerance of the manifold constraints (sum to 1, unit norm, symmetry, relative to the scale)."""


def _dimension(value: Any, what: str, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise TypeError(f"{what}: expected an integer, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{what}: must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{what}: at most {maximum}, got {value}")
    return value


def _vector(value: Any, name: str, length: int) -> np.ndarray:
    """A JSON list of ``length`` finite numbers as a float array (errors name ``params.<name>``)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"params.{name}: expected a list of {length} numbers, got {type(value).__name__}")
    if len(value) != length:
        raise ValueError(f"params.{name}: expected {length} numbers, got {len(value)}")
    out = np.empty(length)
    for i, v in enumerate(value):
        out[i] = _finite_number(v, f"params.{name}[{i}]")
    return out


@dataclass(frozen=True)
class _VectorParam:
    """A manifold parameter whose value is a JSON list of ``dim`` numbers (simplex, sphere)."""

    name: str
    dim: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "dim", _dimension(self.dim, f"space.{self.name}.dim", 2, MAX_MANIFOLD_COORDS))

    @property
    def size(self) -> int:
        """Coordinates of a value."""
        return self.dim


@dataclass(frozen=True)
class SimplexParam(_VectorParam):
    """A point of the probability simplex ``{p in R^dim : p_i >= 0, sum p_i = 1}``.

    ``random`` draws from the flat Dirichlet(1, ..., 1) law, which is the uniform law for the
    Lebesgue (surface) measure of the simplex. Values are JSON lists; ``validate`` accepts a sum
    within :data:`MANIFOLD_ATOL` of 1 and returns the numbers as given (not renormalised, so a
    stored point is evaluated exactly as stored).
    """

    def validate(self, value: Any) -> list[float]:
        p = _vector(value, self.name, self.dim)
        if np.any(p < 0):
            i = int(np.argmin(p))
            raise ValueError(f"params.{self.name}[{i}]: simplex weights must be >= 0, got {p[i]}")
        if abs(p.sum() - 1.0) > MANIFOLD_ATOL:
            raise ValueError(f"params.{self.name}: simplex weights must sum to 1, got {p.sum()!r}")
        return p.tolist()

    def random(self, rng: np.random.Generator) -> list[float]:
        return rng.dirichlet(np.ones(self.dim)).tolist()

    def to_dict(self) -> dict[str, Any]:
        return {"type": "simplex", "dim": self.dim}


@dataclass(frozen=True)
class SphereParam(_VectorParam):
    """A unit vector of ``R^dim`` (the sphere ``S^(dim-1)``).

    ``random`` normalises a standard Gaussian vector: uniform for the sphere's surface measure.
    ``validate`` accepts a norm within :data:`MANIFOLD_ATOL` of 1.
    """

    def validate(self, value: Any) -> list[float]:
        u = _vector(value, self.name, self.dim)
        norm = float(np.linalg.norm(u))
        if abs(norm - 1.0) > MANIFOLD_ATOL:
            raise ValueError(f"params.{self.name}: a sphere point must have norm 1, got {norm!r}")
        return u.tolist()

    def random(self, rng: np.random.Generator) -> list[float]:
        z = rng.standard_normal(self.dim)
        return (z / np.linalg.norm(z)).tolist()

    def to_dict(self) -> dict[str, Any]:
        return {"type": "sphere", "dim": self.dim}


@dataclass(frozen=True)
class SpdParam:
    """A symmetric positive-definite ``n`` x ``n`` matrix (nested JSON lists, row by row).

    The SPD cone has infinite volume, so no law on it is uniform; ``random`` states its sense:
    ``S = scale * Q diag(exp(a)) Q^T`` with ``Q`` Haar-distributed on O(n) and ``a_i`` i.i.d.
    uniform on ``[-1, 1]`` (eigenvalues log-uniform on ``[scale/e, scale*e]``, eigenvectors
    uniform). ``scale`` (default 1) only places random points; it is not a constraint.
    ``validate`` accepts asymmetry up to :data:`MANIFOLD_ATOL` times the largest entry and needs
    every eigenvalue > 0.
    """

    name: str
    n: int
    scale: float = 1.0

    def __post_init__(self) -> None:
        n = _dimension(self.n, f"space.{self.name}.n", 1)
        if n * n > MAX_MANIFOLD_COORDS:
            raise ValueError(f"space.{self.name}.n: at most {math.isqrt(MAX_MANIFOLD_COORDS)}, got {n}")
        scale = _finite_number(self.scale, f"space.{self.name}.scale")
        if scale <= 0:
            raise ValueError(f"space.{self.name}.scale: must be > 0, got {scale}")
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "scale", scale)

    @property
    def size(self) -> int:
        return self.n * self.n

    def validate(self, value: Any) -> list[list[float]]:
        if isinstance(value, np.ndarray):
            value = value.tolist()
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != self.n:
            raise TypeError(f"params.{self.name}: expected {self.n} rows of {self.n} numbers")
        S = np.stack([_vector(row, f"{self.name}[{i}]", self.n) for i, row in enumerate(value)])
        tol = MANIFOLD_ATOL * max(1.0, float(np.abs(S).max()))
        if np.abs(S - S.T).max() > tol:
            raise ValueError(f"params.{self.name}: the matrix must be symmetric "
                             f"(largest |S - S^T| entry {np.abs(S - S.T).max():.3g})")
        lam_min = float(np.linalg.eigvalsh((S + S.T) / 2)[0])
        if lam_min <= 0:
            raise ValueError(f"params.{self.name}: the matrix must be positive definite "
                             f"(smallest eigenvalue {lam_min:.3g})")
        return S.tolist()

    def random(self, rng: np.random.Generator) -> list[list[float]]:
        q, r = np.linalg.qr(rng.standard_normal((self.n, self.n)))
        q = q * np.sign(np.diag(r))  # the sign fix makes Q Haar-distributed (Mezzadri 2007)
        S = self.scale * (q * np.exp(rng.uniform(-1.0, 1.0, self.n))) @ q.T
        return ((S + S.T) / 2).tolist()

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "spd", "n": self.n}
        if self.scale != 1.0:
            d["scale"] = self.scale
        return d


BoxParam = FloatParam | IntParam | CategoricalParam
ManifoldParam = SimplexParam | SphereParam | SpdParam
Param = BoxParam | ManifoldParam
_PARAM_TYPES = (FloatParam, IntParam, CategoricalParam, SimplexParam, SphereParam, SpdParam)
_MANIFOLD_TYPES = (SimplexParam, SphereParam, SpdParam)
_MANIFOLD_KEYS = {"simplex": ({"type", "dim"}, ("dim",)), "sphere": ({"type", "dim"}, ("dim",)),
                  "spd": ({"type", "n", "scale"}, ("n",))}


def _param_from_dict(name: str, spec: Any) -> Param:
    if not isinstance(spec, Mapping):
        raise TypeError(f"space.{name}: expected an object with a 'type', got {spec!r}")
    kind = spec.get("type")
    if isinstance(kind, str) and kind in _MANIFOLD_KEYS:
        return _manifold_from_dict(name, kind, spec)
    allowed = {"float": _FLOAT_KEYS, "int": _INT_KEYS, "categorical": _CAT_KEYS}.get(kind)  # type: ignore[arg-type]
    if allowed is None:
        raise ValueError(f"space.{name}.type: must be 'float', 'int', 'categorical', 'simplex', "
                         f"'sphere' or 'spd', got {kind!r}")
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ValueError(f"space.{name}: unknown key(s) {unknown} for a {kind} parameter")
    if kind == "categorical":
        if "choices" not in spec:
            raise ValueError(f"space.{name}.choices: missing")
        return CategoricalParam(name, spec["choices"])
    for key in ("low", "high"):
        if key not in spec:
            raise ValueError(f"space.{name}.{key}: missing")
    if kind == "float":
        return FloatParam(name, spec["low"], spec["high"], bool_opt(spec, "log", name), spec.get("step"))
    return IntParam(name, spec["low"], spec["high"], spec.get("step", 1), bool_opt(spec, "log", name))


def _manifold_from_dict(name: str, kind: str, spec: Mapping[str, Any]) -> ManifoldParam:
    allowed, required = _MANIFOLD_KEYS[kind]
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ValueError(f"space.{name}: unknown key(s) {unknown} for a {kind} parameter")
    for key in required:
        if key not in spec:
            raise ValueError(f"space.{name}.{key}: missing")
    if kind == "simplex":
        return SimplexParam(name, spec["dim"])
    if kind == "sphere":
        return SphereParam(name, spec["dim"])
    return SpdParam(name, spec["n"], spec.get("scale", 1.0))


def bool_opt(spec: Mapping[str, Any], key: str, name: str) -> bool:
    v = spec.get(key, False)
    if not isinstance(v, bool):
        raise TypeError(f"space.{name}.{key}: expected true/false, got {v!r}")
    return v


class Space:
    """An ordered set of named parameters with a unit-cube encoding.

    Parameters
    ----------
    params : Mapping[str, dict | Param] or Sequence[Param]
        Either the JSON form (name -> ``{"type": ..., ...}``) or parameter objects.

    Raises
    ------
    ValueError, TypeError
        Naming the offending parameter and key (``low >= high``, empty ``choices``,
        ``log`` with ``low <= 0``, unknown keys, non-finite bounds).
    """

    def __init__(self, params: Mapping[str, Any] | Sequence[Param]) -> None:
        if isinstance(params, Space):
            params = params.params
        items: list[Param] = []
        if isinstance(params, Mapping):
            if not params:
                raise ValueError("space: must define at least one parameter")
            for name, spec in params.items():
                if not isinstance(name, str) or not name:
                    raise TypeError(f"space: parameter names must be non-empty strings, got {name!r}")
                if isinstance(spec, _PARAM_TYPES):
                    if spec.name != name:
                        raise ValueError(f"space.{name}: parameter object is named {spec.name!r}")
                    items.append(spec)
                else:
                    items.append(_param_from_dict(name, spec))
        elif isinstance(params, Sequence) and not isinstance(params, (str, bytes)):
            for p in params:
                if not isinstance(p, _PARAM_TYPES):
                    raise TypeError(f"space: expected parameter objects, got {p!r}")
            items = list(params)
            if not items:
                raise ValueError("space: must define at least one parameter")
            if len({p.name for p in items}) != len(items):
                raise ValueError("space: duplicate parameter names")
        else:
            raise TypeError(f"space: expected a mapping of parameter specs, got {type(params).__name__}")
        self.params: dict[str, Param] = {p.name: p for p in items}

    # ------------------------------------------------------------------ basics
    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Space:
        """Build a space from its JSON form."""
        return cls(d)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """The JSON form (round-trips through :meth:`from_dict`)."""
        return {name: p.to_dict() for name, p in self.params.items()}

    @property
    def names(self) -> list[str]:
        return list(self.params)

    @property
    def dim(self) -> int:
        """Number of parameters (a manifold parameter counts once)."""
        return len(self.params)

    def is_box(self) -> bool:
        """Whether every parameter is a box parameter (float, int, categorical)."""
        return not any(isinstance(p, _MANIFOLD_TYPES) for p in self.params.values())

    def manifold_params(self) -> list[ManifoldParam]:
        """The manifold parameters, in order."""
        return [p for p in self.params.values() if isinstance(p, _MANIFOLD_TYPES)]

    def require_box(self, agent: str) -> None:
        """Raise ``ValueError`` naming the first manifold parameter (for box-only agents)."""
        for p in self.manifold_params():
            raise ValueError(f"space.{p.name}: the {agent} agent searches box parameters (float, int, "
                             f"categorical) only; {p.name!r} is a {p.to_dict()['type']} parameter "
                             f"(use agent 'zo-riemannian' or 'random')")

    def __len__(self) -> int:
        return len(self.params)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Space) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"Space({self.to_dict()!r})"

    def _require_cube(self) -> None:
        for p in self.manifold_params():
            raise TypeError(f"space.{p.name}: a {p.to_dict()['type']} parameter has no unit-cube "
                            "encoding (only box parameters do)")

    # ------------------------------------------------------------------ values
    def validate(self, params: Any) -> dict[str, Any]:
        """Check a full assignment and return it normalised (ints as int, floats as float).

        Raises
        ------
        ValueError
            On unknown or missing names, values out of range or off-grid, NaN/inf.
        TypeError
            When ``params`` is not a mapping or a value has the wrong type.
        """
        if not isinstance(params, Mapping):
            raise TypeError(f"params: expected an object mapping names to values, got {type(params).__name__}")
        unknown = sorted(set(params) - set(self.params), key=str)
        if unknown:
            raise ValueError(f"params: unknown parameter(s) {unknown}; the space has {self.names}")
        missing = [n for n in self.params if n not in params]
        if missing:
            raise ValueError(f"params: missing parameter(s) {missing}")
        return {n: p.validate(params[n]) for n, p in self.params.items()}

    def encode(self, params: Mapping[str, Any]) -> np.ndarray:
        """Validated parameter values -> a point of ``[0, 1]^d`` (box spaces only)."""
        self._require_cube()
        clean = self.validate(params)
        return np.array([p.encode(clean[n]) for n, p in self.params.items()], dtype=float)

    def decode(self, u: Sequence[float] | np.ndarray) -> dict[str, Any]:
        """A point of ``[0, 1]^d`` (clipped) -> parameter values."""
        self._require_cube()
        arr = np.asarray(u, dtype=float).reshape(-1)
        if arr.shape[0] != self.dim:
            raise ValueError(f"u: expected {self.dim} coordinates, got {arr.shape[0]}")
        if not np.all(np.isfinite(arr)):
            raise ValueError("u: coordinates must be finite")
        return {n: _py(p.decode(x)) for (n, p), x in zip(self.params.items(), arr, strict=True)}

    def snap(self, u: np.ndarray) -> np.ndarray:
        """Round unit-cube points to the encodings of the values they decode to."""
        u = np.atleast_2d(np.asarray(u, dtype=float))
        return np.array([self.encode(self.decode(row)) for row in u])

    def canonical(self, U: np.ndarray) -> np.ndarray:
        """Vectorised identity of the assignments that unit-cube rows ``U`` decode to.

        Two rows get equal canonical rows exactly when they decode to the same values
        (continuous coordinates compare at 1e-9 resolution); used for fast duplicate checks.
        """
        U = np.clip(np.atleast_2d(np.asarray(U, dtype=float)), 0.0, 1.0)
        out = np.empty_like(U)
        for j, p in enumerate(self.params.values()):
            col = U[:, j]
            if isinstance(p, FloatParam):
                out[:, j] = np.round(col, 9) if p.step is None else np.minimum(np.floor(col * p._n_grid), p._n_grid - 1)
            elif isinstance(p, IntParam) and p.log:
                lo, hi = math.log(p.low - 0.5), math.log(p.high + 0.5)
                out[:, j] = np.clip(np.round(np.exp(lo + col * (hi - lo))), p.low, p.high)
            else:
                n = p.values if isinstance(p, IntParam) else len(p.choices)
                out[:, j] = np.minimum(np.floor(col * n), n - 1)
        return out

    def key(self, params: Mapping[str, Any]) -> tuple:
        """A hashable identity of an assignment (for duplicate detection)."""
        return tuple((n, repr(params[n])) for n in self.params)

    def sample(self, rng: np.random.Generator, n: int = 1) -> list[dict[str, Any]]:
        """``n`` random assignments: box parameters uniform in the encoding, manifold
        parameters from their ``random`` law (uniform in the sense each class states)."""
        if self.is_box():
            return [self.decode(row) for row in rng.random((n, self.dim))]
        box = [p for p in self.params.values() if not isinstance(p, _MANIFOLD_TYPES)]
        U = rng.random((n, len(box)))
        out = []
        for row in U:
            values = {p.name: _py(p.decode(x)) for p, x in zip(box, row, strict=True)}
            values.update({p.name: p.random(rng) for p in self.manifold_params()})
            out.append({name: values[name] for name in self.params})
        return out

    def is_discrete(self) -> bool:
        return all(isinstance(p, (IntParam, CategoricalParam))
                   or (isinstance(p, FloatParam) and p.step is not None) for p in self.params.values())

    def cardinality(self) -> float:
        """Number of distinct assignments (``inf`` when a continuous parameter exists)."""
        total = 1.0
        for p in self.params.values():
            if isinstance(p, _MANIFOLD_TYPES):
                return math.inf
            if isinstance(p, FloatParam):
                if p.step is None:
                    return math.inf
                total *= p._n_grid
            elif isinstance(p, IntParam):
                total *= p.values
            else:
                total *= len(p.choices)
        return total


def _py(v: Any) -> Any:
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v
