"""Instance generators (PIP's, as LMask uses them), fixed splits and the .npz format."""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.heuristics.routing.instances import (
    RoutingInstances,
    fixed_set,
    generate,
    load_instances,
)
from optiforge.heuristics.routing.lazymask import COMPLETE, constraint_chooser, decode
from optiforge.heuristics.routing.validate import check_tours


@pytest.mark.parametrize(("problem", "hardness"), [("tsptw", "easy"), ("tsptw", "medium"),
                                                   ("tsptw", "hard"), ("tspdl", "medium"),
                                                   ("tspdl", "hard")])
def test_generate_is_seeded_and_normalised(problem: str, hardness: str) -> None:
    a = generate(problem, hardness, 12, 16, seed=3)
    b = generate(problem, hardness, 12, 16, seed=3)
    c = generate(problem, hardness, 12, 16, seed=4)
    assert a.coords.shape == (16, 12, 2) and a.n == 12 and a.size == 16
    np.testing.assert_array_equal(a.coords, b.coords)
    assert not np.array_equal(a.coords, c.coords)
    assert a.coords.min() >= 0.0 and a.coords.max() <= 1.0
    if problem == "tsptw":
        assert (a.tw_start[:, 0] == 0).all()
        assert (a.tw_start >= 0).all() and (a.tw_end >= a.tw_start).all()
        back = np.linalg.norm(a.coords[:, 1:] - a.coords[:, :1], axis=-1)
        # The depot closes when the latest customer can still get home.
        np.testing.assert_allclose(a.tw_end[:, 0], (a.tw_end[:, 1:] + back).max(axis=1))
    else:
        total = 11
        np.testing.assert_array_equal(a.demand[:, 0], 0)
        np.testing.assert_allclose(a.demand[:, 1:], 1 / total)
        drafts = np.rint(a.draft[:, 1:] * total).astype(int)
        tight = (drafts < total).sum(axis=1)
        sigma = 75 if hardness == "medium" else 90
        # floor(n sigma / 100) limits are drawn; a draw may equal S only by chance (it cannot: upper bound excluded)
        assert (tight == 12 * sigma // 100).all()
        for v in range(total + 1):
            assert ((drafts <= v).sum(axis=1) <= v).all()


def test_hard_tsptw_and_tspdl_are_feasible_by_construction() -> None:
    for problem in ("tsptw", "tspdl"):
        ins = generate(problem, "hard", 15, 24, seed=5)
        result = decode(ins, constraint_chooser(ins), budget=None)
        assert (result.status == COMPLETE).all()
        assert check_tours(ins, result.tours).feasible.all()


def test_hard_windows_follow_the_hidden_permutation() -> None:
    ins = generate("tsptw", "hard", 30, 8, seed=0)
    widths = ins.tw_end[:, 1:] - ins.tw_start[:, 1:]
    assert widths.max() <= 1.0 + 1e-12  # two half-widths of 50, divided by 100
    assert widths.min() >= 0.0


def test_fixed_sets_differ_per_split_and_are_cached() -> None:
    train = fixed_set("tspdl", "hard", 20, "validation")
    assert train is fixed_set("tspdl", "hard", 20, "validation")
    assert train.size == 128
    test = fixed_set("tspdl", "hard", 20, "test")
    assert not np.array_equal(train.coords[:5], test.coords[:5])
    with pytest.raises(ValueError, match="split"):
        fixed_set("tspdl", "hard", 20, "dev")


def test_save_load_round_trip(tmp_path) -> None:
    ins = generate("tsptw", "medium", 9, 4, seed=1)
    path = tmp_path / "set.npz"
    ins.save(path)
    back = load_instances(path)
    assert back.problem == "tsptw" and back.hardness == "medium"
    np.testing.assert_array_equal(back.tw_end, ins.tw_end)
    assert back.demand is None


def test_load_rejects_bad_files(tmp_path) -> None:
    with pytest.raises(ValueError, match="no such file"):
        load_instances(tmp_path / "missing.npz")
    (tmp_path / "junk.npz").write_text("not a zip")
    with pytest.raises(ValueError, match="not a readable"):
        load_instances(tmp_path / "junk.npz")
    np.savez(tmp_path / "shape.npz", problem=np.array("tsptw"), coords=np.zeros((2, 5, 2)),
             tw_start=np.zeros((2, 5)), tw_end=np.zeros((2, 4)))
    with pytest.raises(ValueError, match="tw_end: expected shape"):
        load_instances(tmp_path / "shape.npz")


@pytest.mark.parametrize(("args", "word"), [(("cvrp", "hard", 10, 2), "problem"),
                                            (("tspdl", "easy", 10, 2), "hardness"),
                                            (("tsptw", "hard", 2, 2), "n"),
                                            (("tsptw", "hard", 10, 0), "count")])
def test_generate_rejects_bad_arguments(args: tuple, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        generate(*args)


def test_instances_require_their_arrays() -> None:
    with pytest.raises(ValueError, match="demand"):
        RoutingInstances("tspdl", "custom", np.zeros((1, 4, 2)))
