"""PDT: DMD on exact linear systems, the per-coordinate mask against a hand-computed step, resume."""

import copy

import pytest
import torch

from optiforge.optim import PDT
from optiforge.optim.pdt import dmd, optimal_rank


def linear_trajectory(steps: int, size: int = 40, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``x_{k+1} = A x_k`` in R^size whose states stay in a 3-D invariant subspace (one complex pair)."""
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(size, 3, generator=g, dtype=torch.float64))
    c, s = 0.9 * torch.cos(torch.tensor(0.4, dtype=torch.float64)), 0.9 * torch.sin(torch.tensor(0.4, dtype=torch.float64))
    m = torch.tensor([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 0.7]], dtype=torch.float64)
    a = q @ m @ q.T
    xs = [q @ torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)]
    for _ in range(steps - 1):
        xs.append(a @ xs[-1])
    return torch.stack(xs, dim=1), a


@pytest.mark.parametrize("modes", ["projected", "exact"])
@pytest.mark.parametrize("svd", ["exact", "randomized"])
def test_dmd_reconstructs_a_linear_system_exactly(modes, svd):
    traj, a = linear_trajectory(12)
    model = dmd(traj[:, :6], rank=-1, modes=modes, svd=svd)
    assert model.rank == 3
    torch.testing.assert_close(model.predict(traj[:, 5], 6), traj[:, 11], atol=1e-9, rtol=1e-9)
    expected = torch.linalg.eigvals(a)
    expected = expected[expected.abs() > 1e-8]
    torch.testing.assert_close(sorted(model.eigs.abs().tolist()), sorted(expected.abs().tolist()))
    # Every intermediate displacement too: D_k = x_{5+k} - x_5.
    for k, d in enumerate(model.displacements(traj[:, 5], 6), 1):
        torch.testing.assert_close(d, traj[:, 5 + k] - traj[:, 5], atol=1e-9, rtol=1e-9)


def test_optimal_rank_finds_the_signal():
    g = torch.Generator().manual_seed(1)
    signal = torch.randn(500, 3, generator=g) @ torch.randn(3, 9, generator=g) * 10
    noisy = signal + 0.01 * torch.randn(500, 9, generator=g)
    s = torch.linalg.svdvals(noisy)
    assert optimal_rank(s, tuple(noisy.shape)) == 3
    assert dmd(noisy, rank=0).rank == 3


# Six coordinates, each its own linear dynamics w_{k+1} = lam * w_k: with 7 snapshots DMD
# recovers A = diag(lam) exactly, so D_k = (lam^k - 1) w_ref is known by hand.
LAM = torch.tensor([0.5, 0.8, 1.1, -0.6, -1.2, 0.3], dtype=torch.float64)
W0 = torch.tensor([1.0, -2.0, 1.5, 1.0, 0.8, -1.0], dtype=torch.float64)
TAU = 2


def _run_to_prediction(mask: str, delta: torch.Tensor):
    w = torch.nn.Parameter(W0.clone())
    opt = PDT(torch.optim.SGD([w], lr=1.0), burn_in=7, window=7, horizon=TAU, mask=mask, svd_rank=-1)
    traj = [W0 * LAM**k for k in range(7)]
    for e in range(6):  # burn-in epochs: one SGD step each, moving w_e -> w_{e+1}
        w.grad = traj[e] - traj[e + 1]
        opt.step()
        assert opt.epoch_end() is None
    w.grad = -delta  # the prediction epoch: SGD moves w_6 by delta
    opt.step()
    stats = opt.epoch_end()
    return w.detach().double(), stats, traj[6]


def _deltas_and_expected(w_ref: torch.Tensor):
    d = [(LAM**k - 1) * w_ref for k in (1, 2)]  # D_1, D_2 (tau = 2)
    d_tau = d[-1]
    delta = torch.stack([
        0.5 * d_tau,    # 0: consistent, |D| = 2 |delta|: accepted by both
        -0.5 * d_tau,   # 1: opposite sign: rejected
        2.0 * d_tau,    # 2: |D| < |delta|: prediction not effective, rejected
        0.2 * d_tau,    # 3: |D| = 5 |delta| > (tau + 1) |delta|: rejected
        d_tau / 2.5,    # 4: |D| = 2.5 |delta|: code accepts (<= 3), paper rejects (> 2); also D_1, D_2 differ in sign
        0.5 * d_tau,    # 5: consistent, in bounds: accepted by both
    ]).diagonal()
    return d, delta


def test_mask_code_version_matches_hand_computed_step():
    w_ref = W0 * LAM**6
    d, delta = _deltas_and_expected(w_ref)
    assert torch.sign(d[0][4]) != torch.sign(d[1][4])  # coordinate 4 oscillates
    w_new, stats, _ = _run_to_prediction("code", delta)
    accept = torch.tensor([True, False, False, False, True, True])
    expected = torch.where(accept, w_ref + d[1], w_ref + delta)
    torch.testing.assert_close(w_new, expected, atol=1e-9, rtol=1e-9)
    assert stats["accepted"] == pytest.approx(3 / 6)
    assert stats["rank"] == 6


def test_mask_paper_version_checks_every_step_and_bound_tau():
    w_ref = W0 * LAM**6
    d, delta = _deltas_and_expected(w_ref)
    w_new, stats, _ = _run_to_prediction("paper", delta)
    accept = torch.tensor([True, False, False, False, False, True])
    torch.testing.assert_close(w_new, torch.where(accept, w_ref + d[1], w_ref + delta), atol=1e-9, rtol=1e-9)
    # Coordinate 4 alone, inside the paper's bound tau: still refused for its D_1's sign.
    delta4 = delta.clone()
    delta4[4] = d[1][4] / 1.5
    w_new, _, _ = _run_to_prediction("paper", delta4)
    torch.testing.assert_close(w_new[4], w_ref[4] + delta4[4], atol=1e-9, rtol=1e-9)
    w_new, _, _ = _run_to_prediction("code", delta4)
    torch.testing.assert_close(w_new[4], w_ref[4] + d[1][4], atol=1e-9, rtol=1e-9)


def test_schedule_follows_burn_in_and_interval():
    w = torch.nn.Parameter(torch.ones(3))
    opt = PDT(torch.optim.SGD([w], lr=0.1), burn_in=3, window=3, interval=2, horizon=2)
    predicted = []
    for e in range(9):
        w.grad = torch.tensor([1.0, 0.5, -0.2]) * (0.9**e)
        opt.step()
        predicted.append(opt.epoch_end() is not None)
    # 3 snapshots at the end of epoch 3 (index 2), then every 2 epochs.
    assert predicted == [False, False, True, False, True, False, True, False, True]


def test_adaptive_scheduler_rule():
    w = torch.nn.Parameter(torch.ones(2))
    opt = PDT(torch.optim.SGD([w], lr=0.1), burn_in=50, horizon=5, interval=1, adaptive=True)

    def epoch(loss):
        w.grad = torch.ones(2)
        opt.step()
        opt.epoch_end(loss)
        return opt.horizon, opt.interval

    assert epoch(1.0) == (5, 1) and epoch(0.9) == (5, 1)
    assert epoch(0.95) == (4, 1)   # above the previous only: tau - 1
    assert epoch(1.00) == (3, 2)   # above both earlier ones at tau = 4: tau - 1, interval + 1
    assert epoch(0.5) == (3, 2)    # falling: no change
    assert epoch(0.7) == (3, 3)    # above the previous only, tau <= 3: interval + 1
    assert epoch(0.8) == (3, 5)    # above both, tau < 4: interval + 2


def _train(opt, model, x, y, epochs, batches=4):
    for _ in range(epochs):
        for xb, yb in zip(x.chunk(batches), y.chunk(batches), strict=True):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(xb), yb).backward()
            opt.step()
        opt.epoch_end(float(torch.nn.functional.mse_loss(model(x), y).detach()))


def test_state_dict_roundtrip_resumes_exactly():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(64, 5, generator=g), torch.randn(64, 2, generator=g)

    def make():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
        opt = PDT(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), burn_in=3, window=3,
                  horizon=3, adaptive=True)
        return model, opt

    model, opt = make()
    _train(opt, model, x, y, 5)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x[:16]), y[:16]).backward()
    opt.step()  # stop mid-epoch: the epoch's start snapshot must survive the round trip
    saved_model, saved_opt = copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict())
    opt.epoch_end()
    _train(opt, model, x, y, 4)
    model2, opt2 = make()
    model2.load_state_dict(saved_model)
    opt2.load_state_dict(saved_opt)
    opt2.epoch_end()
    _train(opt2, model2, x, y, 4)
    assert len(opt.history) >= 5
    for a, b in zip(model.parameters(), model2.parameters(), strict=True):
        torch.testing.assert_close(a, b)
    def strip(history):
        return [{k: v for k, v in h.items() if k != "seconds"} for h in history]

    assert strip(opt.history) == strip(opt2.history)


def test_bad_arguments_name_the_argument():
    w = torch.nn.Parameter(torch.ones(2))
    with pytest.raises(TypeError, match="optimizer"):
        PDT([w])
    sgd = torch.optim.SGD([w], lr=0.1)
    for kwargs, name in [({"burn_in": 1}, "burn_in"), ({"window": 1}, "window"), ({"horizon": 0}, "horizon"),
                         ({"mask": "both"}, "mask"), ({"modes": "x"}, "modes"), ({"svd_rank": -2}, "svd_rank"),
                         ({"svd": "fast"}, "svd"), ({"snapshot_device": "nowhere"}, "snapshot_device")]:
        with pytest.raises(ValueError, match=name):
            PDT(sgd, **kwargs)
    with pytest.raises(TypeError, match="interval"):
        PDT(sgd, interval=1.5)
    with pytest.raises(ValueError, match="loss"):
        PDT(sgd).epoch_end(float("nan"))
    with pytest.raises(ValueError, match="snapshots"):
        dmd(torch.ones(4, 1))
    with pytest.raises(ValueError, match="weights"):
        other = PDT(torch.optim.SGD([torch.nn.Parameter(torch.ones(3))], lr=0.1))
        other.step()
        PDT(sgd).load_state_dict(other.state_dict())
