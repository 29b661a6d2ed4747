"""The ``HeuristicTask`` protocol (the registry is :mod:`optiforge.heuristics.registry`).

A heuristic task is a function signature an LLM must implement, instance sets
(train / validation / test) fixed by seed, seed heuristics, and a trusted scorer.

The untrusted/trusted split is explicit in the protocol:

* :meth:`HeuristicTask.inputs` (trusted, in the sandbox's warm parent) builds the
  JSON-able payload the program will see;
* :meth:`HeuristicTask.solve` runs **inside the sandbox** next to the untrusted
  function and returns a JSON-able *solution* (e.g. the bin chosen for each item);
* :meth:`HeuristicTask.score` (trusted, in the parent) validates that solution
  against its own copy of the instances and computes the score. Nothing the
  program says about itself is believed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from optiforge.types import Evaluation

SPLITS = ("train", "validation", "test")


@runtime_checkable
class HeuristicTask(Protocol):
    name: str
    """Registry name, e.g. ``"binpacking"``."""
    description: str
    """One paragraph describing the problem, shown to the LLM."""
    entry_point: str
    """Name of the function the program must define, e.g. ``"priority"``."""
    template: str
    """Imports + signature + docstring + a seed body: what the LLM sees as the interface."""
    imports: str
    """Import lines prepended to every program before it runs (e.g. ``import numpy as np``)."""
    seeds: dict[str, str]
    """Seed heuristics: name -> full program source (defining ``entry_point``)."""
    baseline: str
    """Name of the seed used as the reference baseline when reporting gaps (e.g. ``best_fit``)."""

    def inputs(self, split: str) -> Any:
        """JSON-able payload for ``solve`` (built by trusted code)."""

    def solve(self, fn: Callable[..., Any], inputs: Any) -> Any:
        """Build a solution with heuristic ``fn``. Runs in the sandbox; returns JSON-able data."""

    def score(self, split: str, solution: Any) -> Evaluation:
        """Validate ``solution`` for ``split`` and compute the score (lower is better)."""


class NamedDatasetSplits:
    """Mixin for tasks whose splits are fixed groups of named datasets.

    Subclasses set ``split_table`` (split -> dataset names), ``all_datasets`` (a callable
    returning every dataset name) and ``dataset_metric`` (the per-dataset metric, stored as
    ``"<dataset>/<dataset_metric>"``, whose mean over a split's datasets is the score); any
    single dataset name is also accepted as a split.
    """

    split_table: dict[str, tuple[str, ...]]
    all_datasets: Callable[[], list[str]]
    dataset_metric: str

    def datasets(self) -> list[str]:
        """Names of every dataset (usable as ``split`` too)."""
        return list(type(self).all_datasets())

    def split_datasets(self, split: str) -> tuple[str, ...]:
        """Dataset names that make up ``split`` (a split name or a single dataset name).

        Raises
        ------
        ValueError
            If ``split`` is neither a split nor a dataset name.
        """
        names = self.datasets()
        if isinstance(split, str) and split in self.split_table:
            return self.split_table[split]
        if isinstance(split, str) and split in names:
            return (split,)
        raise ValueError(
            f"split: unknown split {split!r}; use one of {', '.join(SPLITS)} or a dataset name "
            f"({', '.join(names)})"
        )

    def score_by_dataset(self, split: str, metrics: dict[str, float]) -> dict[str, float]:
        """The score of each of ``split``'s datasets, read from an evaluation's ``metrics``
        (the datasets whose metric is missing are left out; none for a task, such as an older
        plug-in, that names no ``dataset_metric``)."""
        metric = getattr(self, "dataset_metric", None)
        if metric is None:
            return {}
        found = ((name, metrics.get(f"{name}/{metric}")) for name in self.split_datasets(split))
        return {name: float(v) for name, v in found if v is not None}
