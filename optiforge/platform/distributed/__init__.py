"""Distributed training on the platform: the Ray engine, the data sets, plots.

The algorithms and the in-process engine live in :mod:`optiforge.optim.distributed` (the
methods library, which never imports Ray); :class:`RayEngine` runs the same algorithms with
each agent in a Ray actor. :func:`make_engine` picks one by name (``local`` or ``ray``).
"""

from __future__ import annotations

from optiforge import validation as check
from optiforge.optim.distributed import Engine, LocalEngine

from .data import DATASETS, load_dataset, load_digits_dataset

ENGINES = ("local", "ray")


def make_engine(name: str = "local", *, address: str | None = None,
                num_cpus: int | None = None) -> Engine:
    """The engine called ``name``: ``local`` (in process, vmap) or ``ray`` (one actor per agent).

    Raises
    ------
    ValueError
        If ``name`` is unknown, or ``address`` is given for the local engine.
    MissingExtraError
        ``ray`` without Ray installed.
    """
    check.choice(name, "engine", ENGINES)
    if name == "local":
        if address is not None:
            raise ValueError("address: only the 'ray' engine connects to an address")
        return LocalEngine()
    from .ray_engine import RayEngine

    return RayEngine(address=address, num_cpus=num_cpus)


__all__ = ["DATASETS", "ENGINES", "load_dataset", "load_digits_dataset", "make_engine"]
