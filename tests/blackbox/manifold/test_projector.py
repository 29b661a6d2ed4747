"""The score projector, DLF/DRGD and score training on manifolds with known projections."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from optiforge.blackbox.manifold import (
    ScoreModel,
    ScoreProjector,
    dlf,
    drgd,
    empirical_score,
    fit_score,
    synthetic,
    trajectories,
)

torch.set_default_dtype(torch.float64)


def _circle(m=4096):
    a = torch.linspace(0, 2 * np.pi, m + 1)[:-1]
    return torch.stack([torch.cos(a), torch.sin(a)], dim=1)


def _off_circle(n=64, seed=0):
    rng = np.random.default_rng(seed)
    a, r = rng.uniform(0, 2 * np.pi, n), rng.uniform(0.85, 1.15, n)
    return torch.tensor(np.stack([r * np.cos(a), r * np.sin(a)], axis=1))


def test_tweedie_projection_converges_to_the_nearest_point_as_sigma_shrinks():
    x = _off_circle()
    nearest = x / x.norm(dim=1, keepdim=True)
    score = empirical_score(_circle())
    errors = [float((ScoreProjector(score, s)(x) - nearest).norm(dim=1).max())
              for s in (0.2, 0.1, 0.05, 0.02)]
    assert all(a > b for a, b in zip(errors, errors[1:], strict=False)), errors
    assert errors[-1] < 5e-3
    # the slope in log-log is about one or more (the theory's O(sigma |log sigma|^3) at worst)
    assert np.log(errors[0] / errors[-1]) / np.log(10.0) > 0.9


def test_tangent_action_tends_to_the_tangent_projector():
    x = _off_circle(16)
    p = x / x.norm(dim=1, keepdim=True)
    tangent = torch.stack([-p[:, 1], p[:, 0]], dim=1)
    proj = ScoreProjector(empirical_score(_circle()), 0.02)
    normal_part = proj.tangent(p, p)  # J_v at the manifold kills normal vectors...
    tangent_part = proj.tangent(p, tangent)  # ...and keeps tangent ones
    assert float(normal_part.norm(dim=1).max()) < 0.05
    assert float((tangent_part - tangent).norm(dim=1).max()) < 0.05


def test_drgd_and_dlf_reach_the_known_minimiser_on_the_circle():
    target = torch.tensor([0.6, 0.8])

    def f(x):  # minimised on the circle at `target`
        return -(x @ target)

    proj = ScoreProjector(empirical_score(_circle()), 0.02)
    x0 = torch.tensor([[-0.9, -0.3], [0.2, -1.1]])
    res = drgd(f, proj, x0, steps=300, gamma=0.05)
    assert float((res.x - target).norm(dim=1).max()) < 0.03
    assert max(res.distances) < 0.02  # feasible throughout
    res = dlf(f, proj, x0, steps=400, gamma=0.05, landing=1.0)
    assert float((proj(res.x) - target).norm(dim=1).max()) < 0.03
    assert res.distances[-1] < 0.02 < res.distances[0]  # it lands


def test_fit_score_learns_a_circle_and_round_trips(tmp_path):
    data = torch.tensor(synthetic("circle", 2048, seed=0))
    seen = []
    model = fit_score(data, steps=150, batch=128, width=32, sigma_min=0.02, sigma_max=2.0,
                      progress=lambda i, n, loss: seen.append(loss))
    assert len(seen) == 150 and np.mean(seen[-30:]) < np.mean(seen[:30])
    path = tmp_path / "circle.pt"
    model.save(path)
    again = ScoreModel.load(path)
    x = _off_circle(32).to(torch.float32)
    assert torch.allclose(again.projector(0.1)(x), model.projector(0.1)(x))
    # (a well-trained model's projections are measured in benchmarks/manifold_brockett.py)


def test_bad_input_names_the_argument(tmp_path):
    with pytest.raises(ValueError, match="t: "):
        ScoreProjector(empirical_score(_circle()), -1.0)
    with pytest.raises(ValueError, match="data: "):
        fit_score(torch.zeros(1, 2))
    with pytest.raises(ValueError, match="kind: unet1d needs"):
        fit_score(torch.zeros(8, 2), kind="unet1d")
    bad = tmp_path / "x.pt"
    bad.write_bytes(b"not a model")
    with pytest.raises(ValueError, match="score: .* is not a saved score model"):
        ScoreModel.load(bad)
    with pytest.raises(ValueError, match="system: "):
        trajectories("bicycle", 2, 8)


def test_a_ddpm_noise_predictor_plugs_in():
    """For data at one point y0 the exact noise predictor makes Tweedie's estimate exactly y0."""
    y0 = torch.tensor([0.3, -0.7])
    abar = torch.linspace(0.99, 0.01, 50)

    def eps_model(x, t):
        a = abar[t.long()].reshape(-1, 1)
        return (x - a.sqrt() * y0) / (1 - a).sqrt()

    proj = ScoreProjector.from_ddpm(eps_model, abar, timestep=20)
    x = torch.randn(5, 2)
    assert torch.allclose(proj(x), y0.expand(5, 2), atol=1e-10)
