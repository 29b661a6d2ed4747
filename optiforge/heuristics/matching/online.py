"""Online matching driven by a ``select_server`` heuristic (what the sandbox runs). numpy only.

Requests arrive in order; for each one the heuristic gets the request's distance to every
server, which servers are still free, the server-to-server distances and the current
matching, and returns the free server the request takes (irrevocably).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

SelectServer = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], int]


def online_steps(select_server: SelectServer, request_distances: np.ndarray,
                 server_distances: np.ndarray) -> Iterator[int]:
    """Run ``select_server`` on each arriving request; yields the server each one takes.

    Parameters
    ----------
    select_server : callable
        ``select_server(request_distances, free, server_distances, assignment) -> int``:
        the request's ``(S,)`` distances, an ``(S,)`` bool mask of free servers, the ``(S, S)``
        server distances and an ``(S,)`` int array with the request each server holds (-1 if
        free). Returns the index of a free server.
    request_distances : numpy.ndarray
        ``(R, S)`` distances, requests in arrival order (``R <= S``).
    server_distances : numpy.ndarray
        ``(S, S)`` distances between servers.

    Raises
    ------
    ValueError
        If the heuristic returns anything but the index of a free server.
    """
    n = request_distances.shape[1]
    free = np.ones(n, dtype=bool)
    holder = np.full(n, -1, dtype=np.int64)
    shared = np.array(server_distances, dtype=np.float64)
    shared.setflags(write=False)  # the same matrix for every call: read-only, not copied
    for i, row in enumerate(request_distances):
        # Fresh copies of our state: the heuristic may scribble on its arguments.
        choice = select_server(np.array(row, dtype=np.float64), free.copy(), shared, holder.copy())
        if isinstance(choice, bool | np.bool_) or not isinstance(choice, int | np.integer):
            raise ValueError(f"select_server must return an int server index, got {choice!r}")
        choice = int(choice)
        if not 0 <= choice < n or not free[choice]:
            raise ValueError(f"select_server returned server {choice}, which is not a free server")
        free[choice] = False
        holder[choice] = i
        yield choice


def assign_online(select_server: SelectServer, request_distances: np.ndarray,
                  server_distances: np.ndarray) -> list[int]:
    """The server of every request under :func:`online_steps`."""
    return list(online_steps(select_server, request_distances, server_distances))
