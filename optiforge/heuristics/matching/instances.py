"""Seeded matching instances: a fixed set of servers, requests arriving in order, a metric.

Four families, all made or shipped locally (no downloads):

``uniform``
    Servers and requests uniform in ``[0, 100]^2``, Euclidean: the paper's synthetic set.
``taxi``
    A clustered, taxi-like 2-D city in longitude/latitude degrees (Euclidean, as the paper
    uses raw coordinates): trips start at hotspots drawn with Zipf weights and end at
    hotspots chosen by a gravity model; **pickups are the servers and drop-offs the
    requests**, as in the paper's NYC-Taxi experiment. A stand-in for the NYC data, which
    cannot be downloaded here.
``digits``
    scikit-learn's bundled ``load_digits`` (1,797 8x8 images, 64-d, L1 metric): a real
    dataset that stands in for MNIST. To reach ``n`` in the thousands, the pool is
    augmented with the 8 one-pixel shifts of every image (16,173 distinct images); servers
    and requests are disjoint draws while ``2 n`` fits the pool, independent draws without
    replacement while ``n`` fits, and draws with replacement beyond that.
``road``
    Shortest-path distances on a generated road-like graph (a stand-in for the Beijing road
    network): ``2 n`` junctions with town-centre clustering, connected by a Delaunay
    triangulation thinned to a random spanning tree plus 60 % of the other edges; edge
    lengths are the Euclidean lengths (km) times a detour factor in ``[1, 1.4]``. Servers
    and requests sit on junctions (``n`` distinct ones each; a request may share a junction
    with a server, at distance 0). Distances come from ``scipy.sparse.csgraph.dijkstra``.

Every draw comes from ``numpy.random.default_rng([seed, family tag])`` so the same
instance comes out in every process. scipy and scikit-learn are imported inside the
generators that need them: importing this module costs numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optiforge import validation

FAMILIES = ("uniform", "taxi", "digits", "road")
METRICS = ("euclidean", "l1", "graph")

_TAGS = {"uniform": 101, "taxi": 102, "digits": 103, "road": 104}
_TAXI_CENTER = np.array([-73.975, 40.755])  # (longitude, latitude) of midtown Manhattan


@dataclass(frozen=True)
class MatchingInstance:
    """One incremental matching instance.

    Attributes
    ----------
    family : str
        One of :data:`FAMILIES`.
    servers : numpy.ndarray
        ``(S, d)`` server points, or ``(S,)`` junction ids for ``metric="graph"``.
    requests : numpy.ndarray
        ``(R, d)`` request points (or junction ids) in arrival order; ``R <= S``.
    metric : str
        ``"euclidean"``, ``"l1"`` or ``"graph"`` (shortest-path length).
    cost : numpy.ndarray
        ``(R, S)`` float64 distances, request ``i`` (row) to server ``j`` (column); read-only.
    server_cost : numpy.ndarray
        ``(S, S)`` float64 distances between servers; read-only.
    description : str
        How the instance was made.
    """

    family: str
    servers: np.ndarray
    requests: np.ndarray
    metric: str
    cost: np.ndarray
    server_cost: np.ndarray
    description: str

    @property
    def n_servers(self) -> int:
        return int(self.cost.shape[1])

    @property
    def n_requests(self) -> int:
        return int(self.cost.shape[0])

    @property
    def dim(self) -> int:
        """Dimension of the points (0 for graph instances)."""
        return 0 if self.metric == "graph" else int(self.servers.shape[1])


def pairwise(a: np.ndarray, b: np.ndarray, metric: str) -> np.ndarray:
    """``(len(a), len(b))`` Euclidean or L1 distances between two point sets (float64)."""
    from scipy.spatial.distance import cdist

    return cdist(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                 metric="cityblock" if metric == "l1" else "euclidean")


def make_instance(family: str, n: int, seed: int = 0, n_requests: int | None = None) -> MatchingInstance:
    """Generate an instance of ``family`` with ``n`` servers and ``n_requests`` requests.

    Parameters
    ----------
    family : str
        One of :data:`FAMILIES`.
    n : int
        Number of servers (at least 1).
    seed : int
        Seed of every random draw (non-negative).
    n_requests : int, optional
        Requests in arrival order; defaults to ``n`` (a perfect matching at the end).

    Returns
    -------
    MatchingInstance

    Raises
    ------
    ValueError
        If ``family`` is unknown, ``n < 1``, ``seed < 0`` or ``n_requests`` is not in ``[1, n]``.
    """
    validation.choice(family, "data", FAMILIES)
    n = validation.integer(n, "n", minimum=1, maximum=200_000)
    seed = validation.integer(seed, "seed", minimum=0)
    r = n if n_requests is None else validation.integer(n_requests, "n_requests", minimum=1, maximum=n)
    rng = np.random.default_rng([seed, _TAGS[family]])
    inst = _GENERATORS[family](rng, n, r, seed)
    for a in (inst.servers, inst.requests, inst.cost, inst.server_cost):
        a.setflags(write=False)
    return inst


def _points(family: str, servers: np.ndarray, requests: np.ndarray, metric: str,
            description: str) -> MatchingInstance:
    return MatchingInstance(family, servers, requests, metric, pairwise(requests, servers, metric),
                            pairwise(servers, servers, metric), description)


def _uniform(rng: np.random.Generator, n: int, r: int, seed: int) -> MatchingInstance:
    servers = rng.random((n, 2)) * 100.0
    requests = rng.random((r, 2)) * 100.0
    return _points("uniform", servers, requests, "euclidean",
                   f"{n} servers and {r} requests uniform in [0,100]^2, Euclidean; seed {seed}")


def _taxi(rng: np.random.Generator, n: int, r: int, seed: int) -> MatchingInstance:
    k = 14
    # Hotspots spread over a Manhattan-sized box (about 0.06 x 0.16 degrees), Zipf-weighted.
    centers = _TAXI_CENTER + (rng.random((k, 2)) - 0.5) * np.array([0.06, 0.16])
    weights = 1.0 / np.arange(1, k + 1) ** 1.1
    weights /= weights.sum()
    spread = 0.002 + 0.008 * rng.random((k, 2))  # anisotropic: avenues run north-south
    gap = np.linalg.norm(centers[:, None] - centers[None], axis=-1)
    gravity = weights[None, :] * np.exp(-gap / 0.04)  # trips prefer big, near destinations
    gravity /= gravity.sum(1, keepdims=True)

    def trip_ends(m: int) -> tuple[np.ndarray, np.ndarray]:
        start = rng.choice(k, size=m, p=weights)
        end = np.array([rng.choice(k, p=gravity[h]) for h in start])
        pick = centers[start] + rng.standard_normal((m, 2)) * spread[start]
        drop = centers[end] + rng.standard_normal((m, 2)) * spread[end]
        return pick, drop

    servers, _ = trip_ends(n)   # pickups wait as servers
    _, requests = trip_ends(r)  # drop-offs arrive as requests, in trip order
    return _points("taxi", servers, requests, "euclidean",
                   f"taxi-like city, {k} Zipf hotspots, gravity trips: {n} pickups (servers), "
                   f"{r} drop-offs (requests), lon/lat degrees, Euclidean; seed {seed}")


def digits_pool() -> np.ndarray:
    """scikit-learn's ``load_digits`` images with their 8 one-pixel shifts: ``(16173, 64)`` int."""
    from sklearn.datasets import load_digits

    images = load_digits().images.astype(np.int64)  # (1797, 8, 8), values 0..16
    out = []
    for dy in (0, -1, 1):
        for dx in (0, -1, 1):
            shifted = np.zeros_like(images)
            ys, yd = (slice(max(dy, 0), 8 + min(dy, 0)), slice(max(-dy, 0), 8 + min(-dy, 0)))
            xs, xd = (slice(max(dx, 0), 8 + min(dx, 0)), slice(max(-dx, 0), 8 + min(-dx, 0)))
            shifted[:, yd, xd] = images[:, ys, xs]
            out.append(shifted.reshape(len(images), 64))
    return np.concatenate(out)


def _digits(rng: np.random.Generator, n: int, r: int, seed: int) -> MatchingInstance:
    pool = digits_pool()
    size = len(pool)
    if n + r <= size:
        order = rng.permutation(size)
        servers, requests = pool[order[:n]], pool[order[n:n + r]]
        how = "disjoint draws"
    elif n <= size:
        servers = pool[rng.permutation(size)[:n]]
        requests = pool[rng.permutation(size)[:r]]
        how = "independent draws without replacement"
    else:
        servers = pool[rng.integers(0, size, n)]
        requests = pool[rng.integers(0, size, r)]
        how = "draws with replacement"
    return _points("digits", servers.astype(np.float64), requests.astype(np.float64), "l1",
                   f"sklearn load_digits + 1-pixel shifts ({size} images, 64-d), {how}: {n} "
                   f"servers, {r} requests, L1; seed {seed}")


def road_graph(rng: np.random.Generator, n_nodes: int) -> tuple[np.ndarray, object]:
    """A connected road-like graph: ``(coords (N, 2) km, csr adjacency with lengths)``."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import minimum_spanning_tree
    from scipy.spatial import Delaunay

    side = 3.0 * np.sqrt(n_nodes)  # ~1 junction per 9 km^2 on average, denser in towns
    towns = rng.random((5, 2)) * side
    n_town = int(0.6 * n_nodes)
    which = rng.integers(0, 5, n_town)
    coords = np.concatenate([
        towns[which] + rng.standard_normal((n_town, 2)) * side * 0.08,
        rng.random((n_nodes - n_town, 2)) * side,
    ])
    coords += rng.random(coords.shape) * 1e-6  # break exact ties for the triangulation
    tri = Delaunay(coords).simplices
    edges = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]])
    edges = np.unique(np.sort(edges, axis=1), axis=0)
    length = np.linalg.norm(coords[edges[:, 0]] - coords[edges[:, 1]], axis=1)
    length *= 1.0 + 0.4 * rng.random(len(edges))  # detours and slower roads
    # Keep a random spanning tree (connected) plus 60 % of the other edges (sparser than a
    # triangulation, like a street grid with missing links).
    rand = coo_matrix((rng.random(len(edges)) + 1e-9, (edges[:, 0], edges[:, 1])),
                      shape=(n_nodes, n_nodes))
    tree = minimum_spanning_tree(rand).tocoo()
    in_tree = set(zip(tree.row.tolist(), tree.col.tolist(), strict=True))
    keep = np.array([(a, b) in in_tree or (b, a) in in_tree for a, b in edges]) | (rng.random(len(edges)) < 0.6)
    e, w = edges[keep], length[keep]
    adj = coo_matrix((np.concatenate([w, w]), (np.concatenate([e[:, 0], e[:, 1]]),
                                               np.concatenate([e[:, 1], e[:, 0]]))),
                     shape=(n_nodes, n_nodes)).tocsr()
    return coords, adj


def _road(rng: np.random.Generator, n: int, r: int, seed: int) -> MatchingInstance:
    from scipy.sparse.csgraph import dijkstra

    n_nodes = max(2 * n, 16)
    coords, adj = road_graph(rng, n_nodes)
    servers = rng.permutation(n_nodes)[:n]
    requests = rng.permutation(n_nodes)[:r]
    # Shortest paths from the servers, in blocks so the (block, N) table stays small.
    cost = np.empty((r, n))
    server_cost = np.empty((n, n))
    for lo in range(0, n, 512):
        dist = dijkstra(adj, directed=False, indices=servers[lo:lo + 512])
        cost[:, lo:lo + 512] = dist[:, requests].T
        server_cost[lo:lo + 512] = dist[:, servers]
    return MatchingInstance("road", servers, requests, "graph", cost, server_cost,
                            f"road-like graph, {n_nodes} junctions ({adj.nnz // 2} roads, km): {n} "
                            f"servers and {r} requests on junctions, shortest-path metric; seed {seed}")


_GENERATORS = {"uniform": _uniform, "taxi": _taxi, "digits": _digits, "road": _road}
