"""The real bundled SmolLM2 model through TransformersLLM (NF4 on CPU), no mocks."""

from __future__ import annotations

import pytest
import torch

from optiforge.agents.protocols import LLM
from optiforge.types import Completion

pytestmark = pytest.mark.slow

PROMPTS = ["Write a Python function that returns the square of x.", "Name one prime number."]


def test_bundled_model_is_nf4(bundled_int4):
    from bitsandbytes.nn import Linear4bit

    n4 = [m for m in bundled_int4.model.modules() if isinstance(m, Linear4bit)]
    # 30 decoder layers x 7 projections (q, k, v, o, gate, up, down) are quantised.
    assert len(n4) == 210
    assert all(m.weight.quant_state.quant_type == "nf4" for m in n4)
    footprint_mb = bundled_int4.model.get_memory_footprint() / 1e6
    # fp32 is ~538 MB; NF4 linears + fp32 embeddings/norms land around 166 MB.
    assert 100 < footprint_mb < 250
    assert isinstance(bundled_int4, LLM)


def test_from_spec_caches_the_loaded_model(bundled_int4):
    from optiforge.platform.llm import from_spec

    assert from_spec("smollm2") is bundled_int4


def test_batch_of_two_prompts_with_two_samples_each(bundled_int4):
    out = bundled_int4.generate(PROMPTS, n=2, max_new_tokens=8, temperature=0.8, seed=3)
    assert len(out) == 2 and all(len(row) == 2 for row in out)
    for row in out:
        for c in row:
            assert isinstance(c, Completion)
            assert c.text.strip()
            assert 1 <= c.completion_tokens <= 8
            assert c.finish_reason in ("stop", "length")
            if c.finish_reason == "length":  # (EOS may also arrive exactly as token 8)
                assert c.completion_tokens == 8
    # prompt token counts are the real (unpadded) lengths of each formatted prompt
    for prompt, row in zip(PROMPTS, out, strict=True):
        ids = bundled_int4.tokenizer(bundled_int4.format_prompt(prompt), add_special_tokens=False)["input_ids"]
        assert all(c.prompt_tokens == len(ids) for c in row)
    assert out[0][0].prompt_tokens != out[1][0].prompt_tokens


def test_greedy_is_deterministic_and_batch_independent(bundled_int4):
    a = bundled_int4.generate(PROMPTS, n=1, max_new_tokens=10, temperature=0)
    b = bundled_int4.generate(PROMPTS[1:], n=1, max_new_tokens=10, temperature=0)
    assert a[1][0].text == b[0][0].text  # left padding must not change the continuation
    c = bundled_int4.generate(PROMPTS, n=2, max_new_tokens=10, temperature=0)
    assert c[0][0].text == c[0][1].text == a[0][0].text


def test_seed_reproduces_sampling_and_leaves_global_rng_alone(bundled_int4):
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    x = bundled_int4.generate(PROMPTS[:1], n=3, max_new_tokens=10, temperature=1.0, seed=7)
    after = torch.rand(1)
    assert torch.equal(before, after)
    y = bundled_int4.generate(PROMPTS[:1], n=3, max_new_tokens=10, temperature=1.0, seed=7)
    assert [c.text for c in x[0]] == [c.text for c in y[0]]
    z = bundled_int4.generate(PROMPTS[:1], n=3, max_new_tokens=10, temperature=1.0, seed=8)
    assert [c.text for c in x[0]] != [c.text for c in z[0]]


def test_stops_at_end_of_turn(bundled_int4):
    out = bundled_int4.generate(["Reply with just the word: yes"], n=1, max_new_tokens=64, temperature=0)
    c = out[0][0]
    assert c.finish_reason == "stop" and c.completion_tokens < 64
    assert "<|im_end|>" not in c.text


def test_generate_runs_in_eval_mode_and_restores_train_mode(bundled_int4):
    model = bundled_int4.model
    seen: list[bool] = []
    handle = model.register_forward_pre_hook(lambda mod, args: seen.append(mod.training))
    model.train()  # as an RL trainer might leave it
    try:
        bundled_int4.generate(PROMPTS[:1], max_new_tokens=2, temperature=0)
        assert seen and not any(seen)
        assert model.training
    finally:
        handle.remove()
        model.eval()


def test_format_prompt_uses_chat_template_with_system(bundled_int4):
    s = bundled_int4.format_prompt("hello there", system="be brief")
    assert s.startswith("<|im_start|>system\nbe brief<|im_end|>")
    assert s.endswith("<|im_start|>assistant\n") and "hello there" in s


def test_chunked_batches_match_one_batch(bundled_int4):
    from optiforge.platform.llm import TransformersLLM

    # Share weights: a second instance with a smaller batch size would reload the model.
    chunked = object.__new__(TransformersLLM)
    chunked.__dict__.update(bundled_int4.__dict__)
    chunked.max_batch_size = 1
    a = bundled_int4.generate(PROMPTS, n=1, max_new_tokens=6, temperature=0)
    b = chunked.generate(PROMPTS, n=1, max_new_tokens=6, temperature=0)
    assert [r[0].text for r in a] == [r[0].text for r in b]


@pytest.mark.parametrize(
    ("kwargs", "exc", "name"),
    [
        ({"prompts": "abc"}, TypeError, "prompts"),
        ({"prompts": ["a"], "n": 0}, ValueError, "n"),
        ({"prompts": ["a"], "max_new_tokens": 0}, ValueError, "max_new_tokens"),
        ({"prompts": ["a"], "temperature": -1.0}, ValueError, "temperature"),
        ({"prompts": ["a"], "top_p": 0.0}, ValueError, "top_p"),
        ({"prompts": ["a"], "seed": "1"}, TypeError, "seed"),
    ],
)
def test_bad_generate_arguments(bundled_int4, kwargs, exc, name):
    prompts = kwargs.pop("prompts")
    with pytest.raises(exc, match=rf"^{name}:"):
        bundled_int4.generate(prompts, **kwargs)


def test_constructor_rejects_bad_arguments():
    from optiforge.platform.llm import TransformersLLM

    with pytest.raises(ValueError, match="^quantization:"):
        TransformersLLM("smollm2", quantization="int3")
    with pytest.raises(ValueError, match="^dtype:"):
        TransformersLLM("smollm2", dtype="float64")
    with pytest.raises(FileNotFoundError, match="^model:"):
        TransformersLLM("./no/such/checkpoint")


def test_no_warning_about_a_hub_kernel_on_load(caplog):
    """bitsandbytes warns on every NF4 load (CPUs with AVX512-BF16, this machine's) that a Hub
    kernel could not be fetched; the backend drops that one message and no other."""
    import logging

    import optiforge.platform.llm.transformers_backend  # noqa: F401  (installs the filter)

    bnb_logger = logging.getLogger("bitsandbytes.backends.cpu.ops")
    with caplog.at_level(logging.WARNING):
        bnb_logger.warning("Failed to load CPU gemm_4bit_forward from kernels-community: %s", "untrusted")
        bnb_logger.warning("some other warning")
    assert [r.getMessage() for r in caplog.records] == ["some other warning"]


def test_loading_prints_no_transformers_progress_bar(capfd):
    """transformers draws a "Loading weights" tqdm bar per load (hundreds of redraws in a piped
    log); the backend silences it while it loads and gives the caller's setting back."""
    from transformers.utils import logging as hf_logging

    from optiforge.platform.llm import TransformersLLM

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.enable_progress_bar()  # the caller's setting (an HF_HUB_DISABLE_PROGRESS_BARS run has it off)
    try:
        TransformersLLM("smollm2")
        assert "Loading weights" not in capfd.readouterr().err
        assert hf_logging.is_progress_bar_enabled()
    finally:
        if not was_enabled:
            hf_logging.disable_progress_bar()
