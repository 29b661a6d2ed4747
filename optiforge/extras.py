"""Optional dependencies ("extras"): one place that names them and explains a missing one.

The core install (``pip install optiforge``) is the methods library, the tasks, the store and
the CLI. Everything heavier is an extra, imported only where it is used::

    pip install 'optiforge[llm]'      # local models: transformers, peft, trl, bitsandbytes
    pip install 'optiforge[server]'   # the HTTP service and dashboard: fastapi, uvicorn, jinja2, plotly
    pip install 'optiforge[all]'      # every extra but vllm

Code that needs an extra calls :func:`require` first; a missing package then raises
:class:`MissingExtraError` naming the extra to install (the CLI prints it as one line and
exits with code 2).
"""

from __future__ import annotations

import importlib

EXTRAS: dict[str, tuple[str, ...]] = {
    "llm": ("transformers", "peft", "trl", "bitsandbytes", "accelerate"),
    "server": ("fastapi", "uvicorn", "pydantic", "jinja2"),
    "optuna": ("optuna",),
    "ray": ("ray",),
    "postgres": ("psycopg",),
    "vllm": ("vllm",),
    "llamacpp": ("llama_cpp", "gguf"),
    "plots": ("matplotlib",),
    "manifold": ("geoopt",),
    "routing": ("ortools", "pyvrp"),
    "bench": ("cocoex",),
}


class MissingExtraError(ImportError):
    """A feature's optional dependencies are not installed (the message names the extra)."""


def require(extra: str, feature: str) -> None:
    """Import the packages of ``extra``, or raise :class:`MissingExtraError`.

    Parameters
    ----------
    extra : str
        A key of :data:`EXTRAS`.
    feature : str
        What needs it, for the message (e.g. ``"the HTTP service"``).
    """
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise missing_extra(extra, feature, module) from exc


def missing_extra(extra: str, feature: str, module: str) -> MissingExtraError:
    """The error for a missing package of ``extra`` (for an ``except ImportError`` block)."""
    return MissingExtraError(f"{feature} needs the '{extra}' extra ({module} is missing): "
                             f"pip install 'optiforge[{extra}]'")
