"""LMask's policy and training at a tiny scale: learning signal, resume, checkpoints, RIE, augmentation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from optiforge.heuristics.checkpoints import DirectoryCheckpointer
from optiforge.heuristics.routing import lazymask as lm
from optiforge.heuristics.routing.instances import generate
from optiforge.heuristics.routing.policy import (
    PolicyChooser,
    PolicyConfig,
    RoutingPolicy,
    dihedral8,
    evaluate_policy,
    load_policy,
    save_policy,
)
from optiforge.heuristics.routing.train import TrainConfig, train, train_step
from optiforge.heuristics.routing.validate import check_tours

TINY = PolicyConfig(embed_dim=16, layers=1, heads=2, ff_dim=32)


def test_sampled_rollouts_give_differentiable_log_probs_of_the_final_tour() -> None:
    torch.manual_seed(0)
    ins = generate("tsptw", "medium", 9, 6, seed=1)
    policy = RoutingPolicy(TINY)
    chooser = PolicyChooser(policy, ins, sample=True, generator=torch.Generator().manual_seed(0))
    result = lm.decode(ins, chooser, budget=None)
    done = result.status == lm.COMPLETE
    assert result.backtracks.sum() > 0 and done.any()
    # The buffer holds exactly one log-prob per step of each final tour: recompute them.
    logp = chooser.logp
    # The choice made at step t (filling position t + 1) is stored at index t; n - 1 steps in all.
    assert torch.isfinite(logp).all() and (logp[done, :-1] <= 0).all()
    assert (logp[done, -1] == 0).all() and (logp[done, :-1] < 0).any()
    logp[done].sum().backward()
    assert policy.embed.weight.grad is not None and policy.embed.weight.grad.abs().sum() > 0


def test_rie_changes_the_decision_context() -> None:
    torch.manual_seed(0)
    policy = RoutingPolicy(TINY)
    ins = generate("tsptw", "hard", 8, 1, seed=0)
    h = policy.encode(torch.as_tensor(np.concatenate([ins.coords, ins.tw_start[..., None] / 10,
                                                      ins.tw_end[..., None] / 10], -1), dtype=torch.float32))
    mask = np.ones((1, 8), dtype=bool)
    mask[0, 0] = False

    def decision(refine: int) -> lm.Decision:
        return lm.Decision(np.array([0]), np.array([0]), np.array([0]), np.array([0.0]), mask,
                           np.array([refine]), np.array([False]), np.array([False]))

    scale = torch.ones(1)
    a, b = policy.logits(h, decision(0), scale), policy.logits(h, decision(3), scale)
    assert not torch.allclose(a, b)
    assert torch.isinf(a[0, 0]) and a[0, 0] < 0


def test_dihedral8_preserves_distances() -> None:
    pts = np.random.default_rng(0).random((3, 7, 2))
    d0 = np.linalg.norm(pts[:, :, None] - pts[:, None], axis=-1)
    variants = dihedral8(pts)
    assert len({v.tobytes() for v in variants}) == 8
    for v in variants:
        np.testing.assert_allclose(np.linalg.norm(v[:, :, None] - v[:, None], axis=-1), d0)


class _SameBatch:
    """An rng whose every draw is the same seed: train_step then sees one fixed batch."""

    def integers(self, *_: object) -> int:
        return 7


def test_reinforce_with_the_shared_baseline_learns_a_fixed_batch() -> None:
    torch.manual_seed(0)
    # TSPDL with a small budget: the relaxed rollouts of the untrained policy break drafts, and
    # the penalised reward teaches it to stay feasible and shorten the tours.
    cfg = TrainConfig(problem="tspdl", hardness="hard", n=10, batch_size=4, samples=8, lr=1e-2,
                      budget=10, policy=TINY)
    policy = RoutingPolicy(cfg.policy)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(0)
    stats = [train_step(policy, opt, cfg, _SameBatch(), gen) for _ in range(40)]
    rewards = [s["reward"] for s in stats]
    assert np.mean(rewards[-8:]) > np.mean(rewards[:8]) + 0.3
    assert stats[0]["feasible_pct"] < 100.0 and min(s["feasible_pct"] for s in stats[-8:]) == 100.0


def test_training_checkpoints_every_epoch_and_resumes(tmp_path) -> None:
    out = tmp_path / "model.pt"
    cfg = TrainConfig(problem="tspdl", hardness="hard", n=8, epochs=2, steps_per_epoch=2, batch_size=4,
                      samples=4, seed=0, policy=TINY)
    history = train(cfg, out)
    assert len(history) == 2 and out.is_file()
    longer = TrainConfig(**{**cfg.__dict__, "epochs": 3})
    resumed = train(longer, out)
    assert resumed[:2] == history and len(resumed) == 3  # only the new epoch ran
    with pytest.raises(ValueError, match="another architecture"):
        train(TrainConfig(**{**cfg.__dict__, "policy": PolicyConfig(embed_dim=8, layers=1, heads=2)}), out)


class _Recording(DirectoryCheckpointer):
    """A folder checkpointer that also remembers the names this run saved."""

    def __init__(self, path) -> None:
        super().__init__(path)
        self.saved: list[str] = []

    def save(self, name: str, data: bytes) -> None:
        self.saved.append(name)
        super().save(name, data)


def test_training_with_a_checkpointer_resumes_from_its_latest_state(tmp_path) -> None:
    out = tmp_path / "model.pt"
    cfg = TrainConfig(problem="tsptw", hardness="hard", n=8, epochs=2, steps_per_epoch=1, batch_size=2,
                      samples=2, seed=1, policy=TINY)
    ck = _Recording(tmp_path / "ckpt")
    history = train(cfg, out, checkpointer=ck)
    assert ck.saved == ["epoch-000001.ckpt", "epoch-000002.ckpt"] and len(history) == 2
    model = torch.load(out, weights_only=True)  # the final model: no optimiser state
    assert model["epoch"] == 2 and "optimizer" not in model and load_policy(out, "tsptw").config == TINY
    ck = _Recording(tmp_path / "ckpt")
    resumed = train(TrainConfig(**{**cfg.__dict__, "epochs": 3}), checkpointer=ck)
    assert ck.saved == ["epoch-000003.ckpt"] and resumed[:2] == history and len(resumed) == 3
    with pytest.raises(ValueError, match="trained for tsptw, not tspdl"):
        train(TrainConfig(**{**cfg.__dict__, "problem": "tspdl"}), checkpointer=ck)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "epoch-000001.ckpt").write_bytes(b"junk")
    with pytest.raises(ValueError, match="not a routing training state"):
        train(cfg, checkpointer=DirectoryCheckpointer(tmp_path / "junk"))
    with pytest.raises(ValueError, match="out"):
        train(cfg)


def test_checkpoints_are_checked_on_load(tmp_path) -> None:
    path = tmp_path / "p.pt"
    save_policy(RoutingPolicy(TINY), path)
    assert load_policy(path, "tsptw").config == TINY
    with pytest.raises(ValueError, match="trained for tsptw"):
        load_policy(path, "tspdl")
    with pytest.raises(ValueError, match="no such file"):
        load_policy(tmp_path / "missing.pt")
    (tmp_path / "junk.pt").write_bytes(b"junk")
    with pytest.raises(ValueError, match="not a routing policy"):
        load_policy(tmp_path / "junk.pt")


def test_evaluation_with_and_without_backtracking(tmp_path) -> None:
    path = tmp_path / "p.pt"
    torch.manual_seed(0)
    save_policy(RoutingPolicy(TINY), path)
    ins = generate("tsptw", "hard", 12, 12, seed=4)
    lmask, _ = evaluate_policy(path, ins, budget=None)
    pip, _ = evaluate_policy(path, ins, backtracking=False)
    assert len(lmask) == 8
    lmask_feasible = np.mean([check_tours(ins, t).feasible.mean() for t in lmask])
    pip_feasible = np.mean([check_tours(ins, t).feasible.mean() for t in pip])
    assert lmask_feasible == 1.0  # hard instances are feasible and R = inf is exhaustive
    assert pip_feasible < lmask_feasible


def test_train_config_is_validated() -> None:
    with pytest.raises(ValueError, match="problem"):
        TrainConfig(problem="cvrp")
    with pytest.raises(ValueError, match="samples"):
        TrainConfig(samples=1)
    with pytest.raises(ValueError, match="batch_size"):
        TrainConfig(batch_size=0)
