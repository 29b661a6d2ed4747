"""Adapter versions on disk: exact save/load round trips, optimizer-state dropping, atomic writes."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from grpo_helpers import BAD, GOOD, PROMPT, adapter_weights

from optiforge.agents.evolution.grpo import GRPOLearner
from optiforge.agents.evolution.grpo.checkpoint import ADAPTER_CONFIG, ADAPTER_WEIGHTS, STATE_FILE
from optiforge.types import Completion


@pytest.fixture(scope="module")
def pair(fresh_llm):
    """Two learners on two private copies of the model, initialised differently."""
    llm_a, llm_b = fresh_llm(), fresh_llm()
    a = GRPOLearner(llm_a, seed=3, lr=1e-4, max_completion_tokens=16)
    b = GRPOLearner(llm_b, seed=99, lr=1e-4, max_completion_tokens=16)  # other init: load must overwrite
    return a, b


def _groups(learner, second: bool = False):
    prompt = learner.llm.format_prompt(PROMPT)
    if second:
        return [(prompt, [Completion(GOOD, finish_reason="stop"), BAD], [-0.5, 0.9])]
    return [(prompt, [GOOD, BAD, "def square(x):\n    return x ** 2"], [1.0, -0.8, 1.4])]


def _assert_same_optimizer_state(a: GRPOLearner, b: GRPOLearner) -> None:
    sa, sb = a.optimizer.state_dict()["state"], b.optimizer.state_dict()["state"]
    assert sa.keys() == sb.keys() and sa
    for k in sa:
        for name in ("step", "exp_avg", "exp_avg_sq"):
            assert torch.equal(sb[k][name], sa[k][name]), (k, name)


@pytest.mark.slow
def test_save_load_round_trip_is_exact_and_gives_an_identical_next_step(pair, tmp_path) -> None:
    a, b = pair
    a.step(_groups(a))
    saved = a.save(tmp_path / "adapter-0001")
    assert (saved / ADAPTER_WEIGHTS).is_file() and (saved / ADAPTER_CONFIG).is_file()
    info = json.loads((saved / "learner_info.json").read_text())
    assert info["step"] == a.step_count and info["hparams"]["lora_r"] == 16

    b.load(saved)
    assert b.step_count == a.step_count
    wa, wb = adapter_weights(a), adapter_weights(b)
    assert wa.keys() == wb.keys() and all(torch.equal(wa[n], wb[n]) for n in wa)
    _assert_same_optimizer_state(a, b)

    expected, got = a.step(_groups(a, second=True)), b.step(_groups(b, second=True))
    assert got["step"] == expected["step"] == a.step_count
    for key in ("loss", "kl", "grad_norm"):
        assert got[key] == pytest.approx(expected[key], rel=1e-6, abs=1e-9), key
    wa, wb = adapter_weights(a), adapter_weights(b)
    for n in wa:
        torch.testing.assert_close(wb[n], wa[n], rtol=1e-6, atol=1e-9)


def test_dropping_the_optimizer_state_leaves_a_loadable_adapter(pair, tmp_path) -> None:
    a, b = pair
    a.step(_groups(a))
    saved = a.save(tmp_path / "adapter-old")
    freed = GRPOLearner.drop_optimizer_state(saved)
    # AdamW keeps two fp32 moments per LoRA parameter.
    assert freed >= 2 * 4 * a.trainable_parameters()
    assert not any(f.name.startswith(".") for f in saved.iterdir())  # no temporary left behind

    b.step(_groups(b, second=True))  # b has optimizer state of its own, which the load must reset
    b.load(saved)
    assert b.step_count == a.step_count
    wa, wb = adapter_weights(a), adapter_weights(b)
    assert all(torch.equal(wa[n], wb[n]) for n in wa)
    assert b.optimizer.state_dict()["state"] == {}  # the optimizer starts afresh
    b.step(_groups(b))  # and training goes on from the loaded weights
    assert b.step_count == a.step_count + 1
    # The backend serves the shrunken version too (PEFT format, no learner needed).
    b.llm.load_adapter(saved)
    out = b.llm.generate([PROMPT], n=1, max_new_tokens=2, temperature=0.0)
    assert len(out) == 1 and len(out[0]) == 1


def test_load_refuses_a_foreign_adapter_before_changing_anything(pair, tmp_path) -> None:
    a, b = pair
    saved = a.save(tmp_path / "adapter-a")
    before = adapter_weights(b)
    steps = b.step_count

    other_rank = tmp_path / "rank8"
    shutil.copytree(saved, other_rank)
    config = json.loads((other_rank / ADAPTER_CONFIG).read_text())
    (other_rank / ADAPTER_CONFIG).write_text(json.dumps({**config, "r": 8}))
    with pytest.raises(ValueError, match="rank 8"):
        b.load(other_rank)

    from safetensors.torch import load_file, save_file

    fewer_layers = tmp_path / "fewer"
    shutil.copytree(saved, fewer_layers)
    tensors = load_file(str(fewer_layers / ADAPTER_WEIGHTS))
    dropped = sorted(tensors)[0]
    save_file({k: v for k, v in tensors.items() if k != dropped}, str(fewer_layers / ADAPTER_WEIGHTS))
    with pytest.raises(ValueError, match="1 missing"):
        b.load(fewer_layers)

    with pytest.raises(ValueError, match="directory"):
        b.load(tmp_path / "nothing-here")
    with pytest.raises(TypeError, match="directory"):
        b.load(None)
    after = adapter_weights(b)
    assert b.step_count == steps and all(torch.equal(before[n], after[n]) for n in before)


def test_saving_over_a_version_replaces_it_whole(pair, tmp_path) -> None:
    a, _ = pair
    target = tmp_path / "versions" / "adapter-0007"
    a.save(target)
    (target / "stray.txt").write_text("from the older version")
    a.step(_groups(a))
    assert a.save(target) == target.resolve()
    assert not (target / "stray.txt").exists()
    assert torch.load(target / STATE_FILE, weights_only=True)["step"] == a.step_count
    assert [p.name for p in target.parent.iterdir()] == ["adapter-0007"]  # no temporary left behind


def test_a_save_that_fails_at_the_last_rename_keeps_the_previous_version(pair, tmp_path, monkeypatch) -> None:
    from optiforge.agents.evolution.grpo import checkpoint

    a, _ = pair
    target = (tmp_path / "adapter-0009").resolve()
    a.save(target)
    step = a.step_count
    a.step(_groups(a))
    real_replace = os.replace

    def disk_full(src, dst):
        # Only the publishing rename fails (the new version onto the final name).
        if Path(dst) == target and Path(src).name != target.name:
            raise OSError("No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(checkpoint.os, "replace", disk_full)
    with pytest.raises(OSError, match="No space"):
        a.save(target)
    monkeypatch.undo()
    assert torch.load(target / STATE_FILE, weights_only=True)["step"] == step
    assert (target / ADAPTER_WEIGHTS).is_file() and (target / ADAPTER_CONFIG).is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["adapter-0009"]


def test_drop_optimizer_state_keeps_step_and_frees_the_moments(tmp_path) -> None:
    d = tmp_path / "adapter-0001"
    d.mkdir()
    moments = {"state": {0: {"exp_avg": torch.ones(50_000), "exp_avg_sq": torch.ones(50_000)}},
               "param_groups": [{"lr": 1e-4, "params": [0]}]}
    torch.save({"optimizer": moments, "step": 3, "hparams": {"lr": 1e-4}}, d / STATE_FILE)
    freed = GRPOLearner.drop_optimizer_state(d)
    assert freed > 390_000  # two 200 kB fp32 moments
    state = torch.load(d / STATE_FILE, weights_only=True)
    assert state == {"step": 3, "hparams": {"lr": 1e-4}}
    assert GRPOLearner.drop_optimizer_state(d) == 0
    assert [f.name for f in d.iterdir()] == [STATE_FILE]  # no temporary file left behind
    with pytest.raises(ValueError, match="directory"):
        GRPOLearner.drop_optimizer_state(tmp_path / "missing")
