"""The lookahead-2 mask kernel: Triton (interpreted) == PyTorch == the numpy decoder's mask."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from optiforge.heuristics.routing import lazymask as lm
from optiforge.heuristics.routing.instances import generate
from optiforge.heuristics.routing.policy import kernel_mask
from optiforge.kernels import lookahead2_mask


def _state(problem: str, n: int, B: int, seed: int):
    ins = generate(problem, "hard" if problem == "tspdl" else "medium", n, B, seed=seed)
    rng = np.random.default_rng(seed)
    rows = np.arange(B)
    current = rng.integers(0, n, size=B)
    unvisited = rng.random((B, n)) < 0.7
    unvisited[:, 0] = False
    unvisited[rows, current] = False
    pending = unvisited.copy()
    pending[:, 0] |= problem == "tsptw"
    limit = ins.tw_end if problem == "tsptw" else ins.draft
    resource = rng.random(B) * np.median(limit, axis=1) * 0.5
    return ins, rows, current, resource, unvisited, pending


@pytest.mark.parametrize("problem", ["tsptw", "tspdl"])
@pytest.mark.parametrize("n", [7, 33, 70])
def test_torch_fallback_equals_the_decoders_mask(problem: str, n: int) -> None:
    ins, rows, current, resource, unvisited, pending = _state(problem, n, 24, n)
    want = lm.lookahead_mask(lm.rules_for(ins), rows, current, resource, unvisited, 2)
    got = kernel_mask(ins)(rows, current, resource, unvisited, pending)
    np.testing.assert_array_equal(got, want)
    assert want.any() and not want.all()  # the states exercise both verdicts


@pytest.mark.parametrize("problem", ["tsptw", "tspdl"])
@pytest.mark.parametrize("n", [5, 20, 70])
def test_triton_equals_torch(problem: str, n: int) -> None:
    pytest.importorskip("triton")
    ins, rows, current, resource, unvisited, pending = _state(problem, n, 6, n + 1)
    if problem == "tsptw":
        travel = torch.as_tensor(ins.distances())
        start, end = torch.as_tensor(ins.tw_start), torch.as_tensor(ins.tw_end)
    else:
        demand = torch.as_tensor(ins.demand)
        travel = demand[:, None, :].expand(-1, n, -1)  # a stride-0 view: the kernel reads strides
        start, end = torch.zeros_like(demand), torch.as_tensor(ins.draft)
    device = "cuda" if torch.cuda.is_available() else "cpu"  # compiled Triton needs CUDA tensors
    args = tuple(torch.as_tensor(a).to(device) for a in (
        travel, start, end, current, resource, unvisited, pending))
    got = lookahead2_mask(*args, backend="triton")
    want = lookahead2_mask(*args, backend="torch")
    torch.testing.assert_close(got, want)


def test_decoding_with_the_kernel_gives_the_same_tours() -> None:
    ins = generate("tsptw", "medium", 12, 16, seed=3)
    plain = lm.decode(ins, lm.constraint_chooser(ins), budget=None)
    kernel = lm.decode(ins, lm.constraint_chooser(ins), budget=None, mask_fn=kernel_mask(ins))
    np.testing.assert_array_equal(plain.tours, kernel.tours)
    np.testing.assert_array_equal(plain.backtracks, kernel.backtracks)
    assert plain.backtracks.sum() > 0


def test_bad_shapes_name_the_argument() -> None:
    t = torch.zeros(2, 4, 4)
    z = torch.zeros(2, 4)
    with pytest.raises(ValueError, match="current"):
        lookahead2_mask(t, z, z, torch.zeros(3, dtype=torch.long), torch.zeros(2), z.bool(), z.bool())
    with pytest.raises(ValueError, match="travel"):
        lookahead2_mask(torch.zeros(2, 4, 3), z, z, torch.zeros(2, dtype=torch.long), torch.zeros(2),
                        z.bool(), z.bool())
