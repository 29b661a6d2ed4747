"""How OpenAILLM reads chat-completions responses (shapes as vLLM and llama.cpp return them)."""

from __future__ import annotations

import pytest

from optiforge.platform.llm.openai_backend import LLMServerError, _parse_choices, _split_count


def test_choices_are_ordered_by_index_and_tokens_split_exactly():
    # vLLM with n=3 reports only the total completion tokens for all choices together.
    data = {
        "choices": [
            {"index": 2, "message": {"role": "assistant", "content": "cc"}, "finish_reason": "stop"},
            {"index": 0, "message": {"role": "assistant", "content": "aaaaaa"}, "finish_reason": "length"},
            {"index": 1, "message": {"role": "assistant", "content": None}, "finish_reason": "stop"},
        ],
        "usage": {"prompt_tokens": 17, "completion_tokens": 11, "total_tokens": 28},
    }
    out = _parse_choices(data)
    assert [c.text for c in out] == ["aaaaaa", "", "cc"]
    assert [c.finish_reason for c in out] == ["length", "stop", "stop"]
    assert all(c.prompt_tokens == 17 for c in out)
    assert sum(c.completion_tokens for c in out) == 11
    assert out[0].completion_tokens > out[2].completion_tokens > out[1].completion_tokens


def test_single_choice_count_is_exact():
    data = {"choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2}}
    (c,) = _parse_choices(data)
    assert (c.text, c.prompt_tokens, c.completion_tokens) == ("hi", 5, 2)


@pytest.mark.parametrize(("total", "weights"), [(10, [1, 1, 1]), (7, [0, 0]), (0, [3, 4]), (100, [1, 2, 3, 4])])
def test_split_count_sums_to_total(total, weights):
    parts = _split_count(total, weights)
    assert sum(parts) == total and len(parts) == len(weights) and min(parts) >= 0


def test_malformed_response_is_a_server_error():
    with pytest.raises(LLMServerError, match="no choices"):
        _parse_choices({"object": "error"})
