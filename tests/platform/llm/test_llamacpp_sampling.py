"""The llama.cpp engine's sampler: greedy, temperature, and the nucleus (top-p) cut."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="needs llama-cpp-python")


@pytest.mark.parametrize("n_vocab", [40, 1000])  # nucleus inside / beyond the 64 pre-sorted tokens
def test_sampling_frequencies_follow_the_nucleus_distribution(n_vocab):
    from optiforge.platform.llm.llamacpp_backend import _sample

    rng = np.random.default_rng(0)
    logits = rng.normal(size=n_vocab) * 3
    p = np.exp(logits - logits.max())
    p /= p.sum()
    order = np.argsort(-p)
    keep = order[: np.searchsorted(np.cumsum(p[order]), 0.9) + 1]
    q = np.zeros(n_vocab)
    q[keep] = p[keep] / p[keep].sum()
    draws = np.bincount([_sample(logits, 1.0, 0.9, rng) for _ in range(20000)], minlength=n_vocab) / 20000
    assert np.abs(draws - q).max() < 0.02  # binomial sd <= 0.0035 per token
    assert draws[q == 0].sum() == 0  # nothing outside the nucleus
    assert _sample(logits, 0.0, 0.5, rng) == int(np.argmax(logits))
    # A low temperature concentrates the draws on the argmax.
    cold = [_sample(logits, 0.05, 1.0, rng) for _ in range(200)]
    assert cold.count(int(np.argmax(logits))) > 190
