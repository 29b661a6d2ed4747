"""Step-by-step TSP tour construction with a ``select_next_node`` heuristic (EoH convention).

Follows the TSP-constructive task of EoH [1]_ / LLM4AD [2]_: the tour starts at node 0
(``destination_node``, where it must return); at each step the heuristic gets the current
node, the destination, the unvisited nodes ordered by distance from the current node
(nearest first, as LLM4AD passes them), and the full distance matrix, and returns the
next node. When one node is left it is appended without asking.

References
----------
.. [1] F. Liu et al., "Evolution of Heuristics: Towards Efficient Automatic Algorithm
   Design Using Large Language Model", ICML 2024.
.. [2] F. Liu et al., "LLM4AD: A Platform for Algorithm Design with Large Language
   Model", arXiv:2412.17287 (2024).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

SelectNextNode = Callable[[int, int, np.ndarray, np.ndarray], int]


def construct_tour(select_next_node: SelectNextNode, dist: np.ndarray, start: int = 0) -> list[int]:
    """Build a tour with ``select_next_node``; returns the node order starting at ``start``.

    Raises
    ------
    ValueError
        If the heuristic returns something that is not an integer node id among the
        unvisited nodes.
    """
    n = dist.shape[0]
    unvisited = np.ones(n, dtype=bool)
    unvisited[start] = False
    tour, current = [start], start
    while len(tour) < n - 1:
        candidates = np.flatnonzero(unvisited)
        candidates = candidates[np.argsort(dist[current, candidates], kind="stable")]
        # Fresh copies: the heuristic may scribble on its arguments without touching our state.
        choice = select_next_node(current, start, candidates.copy(), dist.copy())
        if isinstance(choice, bool | np.bool_) or not isinstance(choice, int | np.integer):
            raise ValueError(f"select_next_node must return an int node id, got {choice!r}")
        choice = int(choice)
        if not (0 <= choice < n) or not unvisited[choice]:
            raise ValueError(f"select_next_node returned node {choice}, which is not among the unvisited nodes")
        unvisited[choice] = False
        tour.append(choice)
        current = choice
    tour += np.flatnonzero(unvisited).tolist()
    return tour
