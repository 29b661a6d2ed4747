"""The LLM backends a service offers, by name: built once, picked by tenants by name only.

A tenant's ``agent_options.llm`` is a *name* the operator configured (``--llm NAME=SPEC``);
the spec behind it, and with it the URL that receives the operator's API key, is the
operator's. Each backend is built once when the server starts and shared by every study
that names it, so memory does not grow with the number of studies.

Backend failures (an unreachable server, a timeout, a rejected request) reach the tenant as
:class:`LLMUnavailable`, which names the backend and nothing else: the other service's error
text stays in the server log.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from optiforge.agents.protocols import LLM
from optiforge.platform.service.config import OfferedLLM
from optiforge.types import Completion

log = logging.getLogger("optiforge.api")


class LLMNotOffered(ValueError):
    """A study names an LLM backend this service does not offer (answered 422)."""


class LLMUnavailable(RuntimeError):
    """An offered LLM backend failed while serving a request (answered 502)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"llm: the LLM backend {name!r} did not answer; try again later")
        self.name = name


class _GuardedLLM:
    """An offered backend whose failures surface as :class:`LLMUnavailable` (details logged)."""

    trainable = False

    def __init__(self, name: str, llm: LLM) -> None:
        self.name = name
        self._llm = llm

    def generate(self, prompts: Sequence[str], n: int = 1, **kwargs: Any) -> list[list[Completion]]:
        try:
            return self._llm.generate(prompts, n, **kwargs)
        except Exception as exc:  # noqa: BLE001 - another service's text must not reach a tenant
            log.warning("LLM backend %r failed: %s: %s", self.name, type(exc).__name__, exc)
            raise LLMUnavailable(self.name) from None


class OfferedLLMs:
    """Name -> built LLM backend, from the operator's configuration.

    Parameters
    ----------
    offered : Mapping[str, OfferedLLM]
        What the operator configured.
    build : callable, optional
        ``build(spec, **options) -> LLM``; default :func:`optiforge.platform.llm.from_spec`.

    Raises
    ------
    ValueError
        A spec that does not parse or a backend that cannot be built (missing file, missing
        extra, unknown option), naming the offered backend.
    """

    def __init__(self, offered: Mapping[str, OfferedLLM], build: Any = None) -> None:
        if build is None:
            from optiforge.platform.llm import from_spec as build
        self._llms: dict[str, _GuardedLLM] = {}
        for name, o in offered.items():
            try:
                llm = build(o.spec, **o.options)
            except (ValueError, TypeError, ImportError) as exc:  # ImportError: a missing extra
                raise ValueError(f"llm {name}: {str(exc).removeprefix('llm: ')}") from None
            self._llms[name] = _GuardedLLM(name, llm)

    @property
    def names(self) -> list[str]:
        return sorted(self._llms)

    def check(self, name: Any) -> str:
        """``name`` if it is offered, else :class:`LLMNotOffered` listing the offered names."""
        if isinstance(name, str) and name in self._llms:
            return name
        offered = ", ".join(self.names) if self._llms else "none (the operator configured no LLM)"
        shown = name if not isinstance(name, str) or len(name) <= 64 else name[:64] + "..."
        raise LLMNotOffered(f"agent_options.llm: {shown!r} is not an LLM this service offers; offered: {offered}")

    def __call__(self, name: str) -> LLM:
        """The resolver a Study takes: the built backend named ``name`` (:class:`LLMNotOffered` if none).

        A study made outside the service (CLI, Python) may name a spec: it is refused like any
        other unknown name, never built.
        """
        return self._llms[self.check(name)]
