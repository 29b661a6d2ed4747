"""Fractal-GD probe: eta* against simulation, the planar map against full GD, box counting on
shapes of known dimension, the basin map and the sharpness bound."""

import math

import numpy as np
import pytest
import torch

from optiforge.optim.probes import fractal as fr


def test_critical_step_formula_branches():
    u = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    v = torch.tensor([[0.0, 1.0]], dtype=torch.float64)  # z = 0, w = 2
    assert float(fr.critical_step(u, v, 0.0)) == pytest.approx(2.0)  # 8 / (2w) = 4 / w
    small = fr.critical_step(0.1 * u, 0.1 * v, 1.0)  # 8 / (0.02 + sqrt(16.0004)) > 1
    assert float(small) == pytest.approx(1.0)


def test_eta_star_separates_convergence_from_divergence():
    c = fr.critical_step_check(inits=300, d=5, y=1.0, rel=0.02, steps=3000, seed=1)
    assert c.count["branch_w"] > 50 and c.count["branch_y"] > 50
    # Just below eta*, every run converges; just above, none does ...
    assert c.converged_below == c.count
    assert c.converged_above == {"branch_y": 0, "branch_w": 0}
    # ... and where the initialization-dependent term binds, every run diverges.
    assert c.diverged_above["branch_w"] == c.count["branch_w"]


def test_eta_star_is_sharp_not_just_an_upper_bound():
    # Well below eta* (0.8 eta*) runs converge too, and the check at 1.1 eta* still diverges:
    # a formula off by a constant factor would fail one of the two.
    for rel in (0.2, 0.1):
        c = fr.critical_step_check(inits=200, d=3, y=-0.7, rel=rel, steps=3000, seed=2)
        assert c.converged_below == c.count
        assert c.diverged_above["branch_w"] == c.count["branch_w"]


@pytest.mark.parametrize("lam", [0.0, 0.1])
def test_planar_map_matches_full_gd(lam):
    assert fr.planar_agreement(d=7, lam=lam, eta=0.3, steps=20) < 1e-10


def test_planar_map_in_sum_difference_coordinates():
    z, w = torch.tensor([0.3, -1.0], dtype=torch.float64), torch.tensor([2.0, 3.5], dtype=torch.float64)
    z2, w2 = fr.planar_map(z, w, y=0.5, eta=0.4, lam=0.2)
    c, r = 1 - 0.4 * 0.2, 0.4 * (z - 0.5)
    torch.testing.assert_close(w2 + 2 * z2, (c - r) ** 2 * (w + 2 * z))
    torch.testing.assert_close(w2 - 2 * z2, (c + r) ** 2 * (w - 2 * z))


def test_box_counting_on_the_koch_curve():
    bc = fr.box_counting(fr.rasterize(fr.koch_curve(6), 1024))
    assert bc.dimension == pytest.approx(math.log(4) / math.log(3), abs=0.01)
    assert bc.r2 > 0.999


def test_box_counting_on_a_line_and_a_filled_square():
    line = np.zeros((512, 512), dtype=bool)
    line[200, :] = True
    square = np.zeros((512, 512), dtype=bool)
    square[:300, :300] = True
    assert fr.box_counting(line).dimension == pytest.approx(1.0, abs=0.03)
    assert fr.box_counting(square).dimension == pytest.approx(2.0, abs=0.07)


def test_basin_map_symmetry_and_classes():
    cl = fr.basin_map(resolution=128, steps=100)
    assert set(np.unique(cl.numpy())) == {0, 1, 2}
    # GD commutes with (u, v) -> (-u, -v): the map is symmetric under the point reflection,
    # which swaps the two minimisers.
    flipped = torch.flip(cl, dims=(0, 1))
    swap = torch.tensor([0, 2, 1], dtype=cl.dtype)[flipped.long()]
    assert (swap == cl).float().mean() > 0.99
    mid = 64 + int(round(math.sqrt(0.3) / 8 * 127))  # near the minimiser (sqrt(y - lam), same)
    assert cl[mid, mid] == fr.CONVERGED_POS and cl[0, -1] == fr.NOT_CONVERGED


def test_basin_boundary_is_rougher_than_a_curve():
    b = fr.boundary(fr.basin_map(resolution=512, steps=100))
    bc = fr.box_counting(b)
    assert 1.08 < bc.dimension < 1.4


def test_sharpness_of_selected_minima_stays_in_the_stable_range():
    s = fr.sharpness_sweep([0.2, 0.5, 0.9], y=1.0, d=5, inits=400, scale=0.5, steps=3000)
    for eta, vals, frac in zip(s.etas, s.sharpness, s.converged, strict=True):
        assert frac > 0.05
        assert min(vals) >= 2.0 - 1e-6 and max(vals) <= 2 / eta + 1e-6


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="^resolution:"):
        fr.basin_map(resolution=2)
    with pytest.raises(ValueError, match="^mask:"):
        fr.box_counting(np.zeros((4, 8), dtype=bool))
    with pytest.raises(ValueError, match="^mask:"):
        fr.box_counting(np.zeros((64, 64), dtype=bool))
    with pytest.raises(ValueError, match="^rel:"):
        fr.critical_step_check(rel=2.0)
