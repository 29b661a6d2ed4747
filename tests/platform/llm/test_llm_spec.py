"""Spec parsing, describe(), and the vLLM backend's error path (vllm is not installed here)."""

from __future__ import annotations

import importlib.util

import pytest

from optiforge.platform.llm import LLMSpec, describe, from_spec, parse_spec


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("smollm2", LLMSpec("hf", "smollm2", {"quantization": "int4"})),
        ("smollm2:none", LLMSpec("hf", "smollm2", {"quantization": "none"})),
        ("smollm2:int8", LLMSpec("hf", "smollm2", {"quantization": "int8"})),
        ("hf:Qwen/Qwen2.5-7B-Instruct", LLMSpec("hf", "Qwen/Qwen2.5-7B-Instruct", {})),
        (
            "hf:/models/x?quantization=int8&adapter=/ad/v3&max_batch_size=16&device=cuda:1",
            LLMSpec("hf", "/models/x", {"quantization": "int8", "adapter": "/ad/v3",
                                        "max_batch_size": 16, "device": "cuda:1"}),
        ),
        ("openai:http://127.0.0.1:8000/v1#Qwen/Qwen2.5-7B", LLMSpec("openai", "http://127.0.0.1:8000/v1",
                                                                    {"model": "Qwen/Qwen2.5-7B"})),
        ("vllm:meta-llama/Llama-3.1-8B-Instruct?tensor_parallel_size=2&gpu_memory_utilization=0.8",
         LLMSpec("vllm", "meta-llama/Llama-3.1-8B-Instruct",
                 {"tensor_parallel_size": 2, "gpu_memory_utilization": 0.8})),
        ("replay:/tmp/a b.jsonl", LLMSpec("replay", "/tmp/a b.jsonl")),
        ("llamacpp:smollm2", LLMSpec("llamacpp", "smollm2", {})),
        ("llamacpp:/m/x.gguf?n_threads=1&max_batch_size=8&train_model=/m/hf",
         LLMSpec("llamacpp", "/m/x.gguf", {"n_threads": 1, "max_batch_size": 8, "train_model": "/m/hf"})),
    ],
)
def test_parse_valid_specs(spec, expected):
    assert parse_spec(spec) == expected


@pytest.mark.parametrize(
    "spec",
    ["", "gpt4", "smollm2:int3", "hf:", "foo:bar", "openai:http://x/v1", "openai:ftp://x#m",
     "openai:#model", "hf:x?quantization", "hf:x?bogus=1", "vllm:?a=1",
     "llamacpp:", "llamacpp:x.gguf?quantization=int4"],
)
def test_malformed_specs_name_llm_and_list_forms(spec):
    with pytest.raises(ValueError, match=r"^llm: invalid spec") as err:
        parse_spec(spec)
    assert "openai:<base_url>#<model>" in str(err.value) and "replay:<path.jsonl>" in str(err.value)


def test_non_string_spec():
    with pytest.raises(TypeError, match="^llm:"):
        parse_spec(None)  # type: ignore[arg-type]


def test_describe_is_readable_and_secret_free():
    assert "NF4" in describe("smollm2").upper() or "int4" in describe("smollm2")
    assert describe("openai:http://h:1/v1#m") == "OpenAI-compatible server http://h:1/v1 model 'm'"
    assert "quantization=int8" in describe("hf:org/m?quantization=int8")
    assert describe("llamacpp:smollm2") == "bundled SmolLM2-135M-Instruct (Q4_1 GGUF) via in-process llama.cpp"
    with pytest.raises(ValueError, match="^llm:"):
        describe("nope")


def test_unknown_override_is_a_type_error(tmp_path):
    with pytest.raises(TypeError, match="^llm: unknown option"):
        from_spec("openai:http://127.0.0.1:9/v1#m", temperature=3)
    with pytest.raises(TypeError, match="^llm: replay specs take no options"):
        p = tmp_path / "r.jsonl"
        p.write_text('{"text": "x"}\n')
        from_spec(f"replay:{p}", foo=1)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_vllm_missing_gives_install_hint():
    with pytest.raises(ImportError, match=r"pip install 'optiforge\[vllm\]'"):
        from_spec("vllm:meta-llama/Llama-3.1-8B-Instruct")


def test_missing_files_and_models_are_value_errors(tmp_path):
    with pytest.raises(ValueError, match="^llm: path: no replay file"):
        from_spec(f"replay:{tmp_path / 'none.jsonl'}")
    with pytest.raises(ValueError, match="^llm: model: no checkpoint directory"):
        from_spec(f"hf:{tmp_path / 'no-model'}")


@pytest.mark.parametrize(("spec", "trains"), [
    ("smollm2", True), ("hf:org/m", True), ("llamacpp:smollm2", True),
    ("llamacpp:qwen-coder-1.5b", True), ("llamacpp:qwen-coder-0.5b", True),
    ("llamacpp:/m/x.gguf", False), ("llamacpp:/m/x.gguf?train_model=/m/hf", True),
    ("openai:http://h:1/v1#m", False), ("replay:/tmp/x.jsonl", False),
])
def test_trains_in_process(spec, trains):
    from optiforge.platform.llm import trains_in_process

    assert trains_in_process(parse_spec(spec)) is trains


def test_an_unfetched_model_names_the_command_that_fetches_it(tmp_path, monkeypatch):
    from optiforge.platform.llm.spec import check_local_files, describe

    monkeypatch.setenv("OPTIFORGE_MODELS", str(tmp_path))
    assert "Qwen2.5-Coder-1.5B-Instruct" in describe("llamacpp:qwen-coder-1.5b")
    with pytest.raises(ImportError, match="optiforge models fetch qwen-coder-1.5b$"):
        check_local_files(parse_spec("llamacpp:qwen-coder-1.5b"))
