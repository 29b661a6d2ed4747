import numpy as np
import pytest


def _random_cost(seed: int, n: int, m: int | None = None) -> np.ndarray:
    """An n x m Euclidean cost matrix of random 2-D points (a metric)."""
    rng = np.random.default_rng(seed)
    a, b = rng.random((n, 2)) * 10, rng.random((n if m is None else m, 2)) * 10
    return np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1))


@pytest.fixture(scope="session")
def random_cost():
    return _random_cost
