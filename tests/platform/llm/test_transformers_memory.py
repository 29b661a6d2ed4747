"""A quantised CPU model does not keep its checkpoint file mapped (docs/benchmarks/memory.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


def _safetensors_mappings() -> list[tuple[int, int]]:
    ranges = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        if line.endswith(".safetensors"):
            start, end = line.split()[0].split("-")
            ranges.append((int(start, 16), int(end, 16)))
    return ranges


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_int4_weights_own_their_memory(bundled_int4) -> None:
    from bitsandbytes.nn import Params4bit

    model = bundled_int4.model
    unquantised = [p for p in model.parameters() if not isinstance(p, Params4bit)]
    assert unquantised  # the embedding and the norms
    mapped = _safetensors_mappings()
    for p in unquantised:
        address = p.data_ptr()
        assert not any(start <= address < end for start, end in mapped)
    # The output head is still the embedding (one copy, tied).
    assert (
        model.get_output_embeddings().weight.data_ptr()
        == model.get_input_embeddings().weight.data_ptr()
    )
