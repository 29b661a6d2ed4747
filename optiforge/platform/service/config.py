"""What the operator configures for ``optiforge serve``: the limits and the offered LLMs.

Everything a tenant may ask the service to do is bounded by one :class:`ServiceLimits`
object; every number lives here, with its default, and nowhere else. The operator sets them
with ``optiforge serve --limit NAME=VALUE`` (repeatable) or a configuration file
(``--config FILE``, TOML or JSON)::

    [limits]
    max_body_bytes = 2_097_152
    max_params = 50

    [llm]                                   # the LLM backends tenants may pick, by name
    qwen = "openai:http://10.0.0.5:8000/v1#Qwen/Qwen2.5-7B-Instruct"
    small = { spec = "smollm2", max_batch_size = 8 }   # a table adds backend options
    slow = { spec = "openai:http://10.0.0.6:8000/v1#big", timeout = 30, max_retries = 1 }

Command-line values win over the file. A tenant names an offered backend in
``agent_options.llm``; the service never builds a backend from a tenant's string.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

_LLM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class ServiceLimits:
    """Upper bounds on what one request (and one owner) may make the service do.

    Attributes
    ----------
    max_body_bytes : int
        Largest request body; longer ones answer 413 before being read.
    max_header_bytes : int
        Largest request head (request line + headers); the connection is refused past it.
    max_headers : int
        Most header fields in one request (431 past it).
    body_timeout_s : float
        Seconds a client may take to send its body (408 after).
    header_timeout_s : float
        Seconds a client may take to send a complete request head, from connecting or from
        the end of its previous response; the connection is closed after.
    keep_alive_timeout_s : float
        Seconds an idle keep-alive connection is kept open.
    max_connections : int
        Open connections at once (503 past it).
    max_params, max_choices : int
        Parameters of a study's space; choices of one categorical parameter.
    max_manifold_dim, max_spd_n : int
        Largest ``dim`` of a simplex or sphere parameter; largest ``n`` of an spd parameter
        (a trial of it holds ``n**2`` numbers).
    max_name_chars : int
        Length of a parameter name, a categorical string choice, a study name.
    max_ask_n : int
        Trials one ask may start.
    max_n_initial, max_m, max_k, max_b, max_budget, max_retries, max_context_points : int
        Upper bounds of the HOLLM ``agent_options`` of the same names.
    max_trials_per_study : int
        Trials one study may hold (asks and added trials past it answer 409).
    page_size, max_page_size : int
        Default and largest ``limit`` of the listing endpoints.
    max_requests_per_owner : int
        Requests one owner may have in progress at once (429 past it).
    max_asks_per_owner : int
        Asks one owner may have in progress at once (429 past it).
    max_concurrent_asks : int
        Asks in progress at once, all owners together (503 past it); asks run on their own
        threads, so a flood of slow asks never delays the other endpoints.
    max_cached_studies : int
        Studies whose agent the server keeps in memory.
    retry_after_s : int
        The ``Retry-After`` of 429 and 503 answers.
    """

    max_body_bytes: int = 1_048_576
    max_header_bytes: int = 16_384
    max_headers: int = 64
    body_timeout_s: float = 30.0
    header_timeout_s: float = 15.0
    keep_alive_timeout_s: float = 5.0
    max_connections: int = 1024
    max_params: int = 100
    max_choices: int = 1000
    max_manifold_dim: int = 1000
    max_spd_n: int = 30
    max_name_chars: int = 200
    max_ask_n: int = 100
    max_n_initial: int = 1000
    max_m: int = 50
    max_k: int = 100
    max_b: int = 100
    max_budget: int = 1_000_000
    max_retries: int = 5
    max_context_points: int = 200
    max_trials_per_study: int = 100_000
    page_size: int = 100
    max_page_size: int = 1000
    max_requests_per_owner: int = 8
    max_asks_per_owner: int = 2
    max_concurrent_asks: int = 8
    max_cached_studies: int = 256
    retry_after_s: int = 1

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type == "float":
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                    raise ValueError(f"limits.{f.name}: expected a number of seconds > 0, got {v!r}")
                object.__setattr__(self, f.name, float(v))
            elif isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"limits.{f.name}: expected an integer >= 1, got {v!r}")
        if self.page_size > self.max_page_size:
            raise ValueError(f"limits.page_size ({self.page_size}) must be <= max_page_size ({self.max_page_size})")
        if self.max_asks_per_owner > self.max_requests_per_owner:
            raise ValueError("limits.max_asks_per_owner must be <= max_requests_per_owner")

    @property
    def agent_option_bounds(self) -> dict[str, int]:
        """``agent_options`` key -> its largest allowed value."""
        return {"n_initial": self.max_n_initial, "m": self.max_m, "k": self.max_k, "b": self.max_b,
                "budget": self.max_budget, "retries": self.max_retries,
                "context_points": self.max_context_points}

    def check_agent_options(self, options: Mapping[str, Any]) -> None:
        """Raise ``ValueError`` naming the first option above its bound (types are checked elsewhere)."""
        for key, bound in self.agent_option_bounds.items():
            v = options.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v > bound:
                raise ValueError(f"agent_options.{key}: at most {bound} on this service, got {v}")

    def with_overrides(self, values: Mapping[str, Any]) -> ServiceLimits:
        """A copy with ``values`` (name -> value) applied; unknown names raise ``ValueError``."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"limits: unknown limit(s) {unknown}; known: {sorted(known)}")
        return replace(self, **dict(values))

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class OfferedLLM:
    """One LLM backend the operator offers: its spec and backend options (e.g. ``timeout``)."""

    name: str
    spec: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ServiceConfig:
    """Limits plus the offered LLM backends, by name."""

    limits: ServiceLimits = field(default_factory=ServiceLimits)
    llms: dict[str, OfferedLLM] = field(default_factory=dict)


def parse_limit_option(text: str) -> tuple[str, int | float]:
    """``"NAME=VALUE"`` (``--limit``) -> ``(name, number)``."""
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name or not value:
        raise ValueError(f"limit: expected NAME=VALUE, got {text!r}")
    try:
        number: int | float = int(value.replace("_", ""))
    except ValueError:
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"limit {name}: expected a number, got {value!r}") from None
    return name, number


def parse_llm_option(text: str) -> OfferedLLM:
    """``"NAME=SPEC"`` (``--llm``) -> an :class:`OfferedLLM` (the spec is checked later)."""
    name, sep, spec = text.partition("=")
    if not sep:
        raise ValueError(f"llm: expected NAME=SPEC, e.g. qwen=openai:http://host:8000/v1#model; got {text!r}")
    return _offered(name.strip(), spec.strip())


def _offered(name: Any, entry: Any) -> OfferedLLM:
    if not isinstance(name, str) or not _LLM_NAME.match(name):
        raise ValueError(f"llm: the name {name!r} must be 1-64 letters, digits, '_', '.' or '-'")
    if isinstance(entry, str):
        spec, options = entry, {}
    elif isinstance(entry, Mapping) and isinstance(entry.get("spec"), str):
        spec, options = entry["spec"], {k: v for k, v in entry.items() if k != "spec"}
    else:
        raise ValueError(f"llm.{name}: expected a spec string or a table with a 'spec' string")
    if not spec.strip():
        raise ValueError(f"llm.{name}: empty spec")
    return OfferedLLM(name, spec.strip(), options)


def load_config(path: str | Path) -> ServiceConfig:
    """Read a TOML (``.toml``) or JSON (any other suffix) configuration file.

    Raises
    ------
    ValueError
        Missing or unreadable file, bad syntax, unknown sections or limits, bad values.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ValueError(f"config: cannot read {str(p)!r} ({exc.strerror or type(exc).__name__})") from None
    try:
        data = tomllib.loads(raw.decode()) if p.suffix == ".toml" else json.loads(raw)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"config: {str(p)!r} is not valid {'TOML' if p.suffix == '.toml' else 'JSON'} ({exc})") from None
    if not isinstance(data, Mapping):
        raise ValueError(f"config: {str(p)!r} must hold a table/object at the top level")
    unknown = sorted(set(data) - {"limits", "llm"})
    if unknown:
        raise ValueError(f"config: unknown section(s) {unknown}; expected 'limits' and 'llm'")
    limits, llm = data.get("limits", {}), data.get("llm", {})
    if not isinstance(limits, Mapping) or not isinstance(llm, Mapping):
        raise ValueError("config: 'limits' and 'llm' must be tables/objects")
    return ServiceConfig(ServiceLimits().with_overrides(limits),
                         {name: _offered(name, entry) for name, entry in llm.items()})


def build_config(config_file: str | Path | None = None, limits: Iterable[str] = (),
                 llms: Iterable[str] = ()) -> ServiceConfig:
    """Combine a configuration file with ``--limit`` and ``--llm`` options (the options win)."""
    base = load_config(config_file) if config_file else ServiceConfig()
    overrides = dict(parse_limit_option(t) for t in limits)
    offered = dict(base.llms)
    for text in llms:
        o = parse_llm_option(text)
        offered[o.name] = o
    return ServiceConfig(base.limits.with_overrides(overrides), offered)
