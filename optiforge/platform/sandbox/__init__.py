"""Sandbox for untrusted generated programs: warm zygotes forking confined, fresh children.

``from optiforge.platform.sandbox import Sandbox, SandboxLimits, SandboxResult, evaluate_programs``.
Names load lazily so that the zygote process (``optiforge.platform.sandbox.zygote``) imports
only what it needs.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Sandbox", "SandboxLimits", "SandboxResult", "evaluate_programs", "score_result"]


def __getattr__(name: str) -> Any:
    if name in ("SandboxLimits", "SandboxResult"):
        from optiforge.platform.sandbox import limits

        return getattr(limits, name)
    if name == "Sandbox":
        from optiforge.platform.sandbox.sandbox import Sandbox

        return Sandbox
    if name in ("evaluate_programs", "score_result"):
        from optiforge.platform.sandbox import evaluate

        return getattr(evaluate, name)
    raise AttributeError(f"module 'optiforge.platform.sandbox' has no attribute {name!r}")
