import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optiforge.agents.evolution.parsing import parse_response, signature_params

PARAMS = ["item", "bins"]
IMPORTS = "import numpy as np\n"


def parse(text: str):
    return parse_response(text, "priority", PARAMS, IMPORTS)


def test_fenced_code_and_double_brace_idea():
    text = (
        "{{The idea of the algorithm is to prefer tight bins.}}\n"
        "```python\nimport numpy as np\n\ndef priority(item, bins):\n    # tightest first\n"
        "    return -(bins - item)\n```\nThis works because..."
    )
    r = parse(text)
    assert r.valid, r.error
    assert r.idea == "The idea of the algorithm is to prefer tight bins."
    assert "# tightest first" in r.code  # comments are kept in the stored program
    assert "This works" not in r.code
    ast.parse(r.code)


def test_single_brace_idea_and_unfenced_code_with_trailing_prose():
    text = (
        "{The idea of the algorithm is to favour nearly full bins}\n"
        "def priority(item, bins):\n    r = bins - item\n    return -r * r\n\n"
        "This heuristic packs items tightly.\nIt should be good."
    )
    r = parse(text)
    assert r.valid, r.error
    assert r.idea.startswith("The idea of the algorithm is to favour")
    assert "tightly" not in r.code
    assert r.code.startswith("import numpy as np")  # task import prepended


def test_idea_sentence_fallback_and_no_idea():
    r = parse("The idea of the algorithm is to use best fit.\n```python\ndef priority(item, bins):\n    return -bins\n```")
    assert r.idea == "The idea of the algorithm is to use best fit."
    r = parse("```python\ndef priority(item, bins):\n    return -bins\n```")
    assert r.valid and r.idea is None


def test_bare_fence_and_block_choice():
    text = "```\nx = 1\n```\n{{idea}}\n```\ndef helper(a):\n    return a\n```\n```\ndef priority(item, bins):\n    return helper(-bins)\n```"
    r = parse(text)
    assert r.valid, r.error
    assert "def priority" in r.code


def test_helpers_kept_main_block_and_calls_dropped():
    text = (
        "```python\nimport numpy as np\nSCALE = 2.0\n\ndef _slack(item, bins):\n    return bins - item\n\n"
        "def priority(item, bins):\n    return -SCALE * _slack(item, bins)\n\n"
        "print(priority(3, np.array([5.0])))\n"
        "if __name__ == '__main__':\n    priority(1, np.array([2.0]))\n```"
    )
    r = parse(text)
    assert r.valid, r.error
    assert "def _slack" in r.code and "SCALE = 2.0" in r.code
    assert "print(" not in r.code and "__main__" not in r.code
    assert any("dropped 2" in n for n in r.notes)
    ns: dict = {}
    exec(r.code, ns)  # the cleaned program defines the function and has no side effects
    assert list(ns["priority"](3.0, __import__("numpy").array([5.0, 4.0]))) == [-4.0, -2.0]


def test_renames_single_function_with_right_arity():
    text = "```python\ndef priority_v2(item, bins):\n    if item < 0:\n        return priority_v2(-item, bins)\n    return -bins\n```"
    r = parse(text)
    assert r.valid, r.error
    assert "def priority(item, bins)" in r.code and "priority_v2" not in r.code
    assert any("renamed" in n for n in r.notes)


def test_prefers_entry_point_prefixed_name_among_same_arity():
    text = "```python\ndef helper(item, bins):\n    return bins\n\ndef priority_v3(item, bins):\n    return -helper(item, bins)\n```"
    r = parse(text)
    assert r.valid, r.error
    assert "def helper" in r.code and "def priority(" in r.code


def test_ambiguous_wrong_name_is_invalid_with_error():
    text = "```python\ndef score_a(item, bins):\n    return bins\n\ndef score_b(item, bins):\n    return -bins\n```"
    r = parse(text)
    assert not r.valid
    assert "missing function 'priority'" in r.error and "score_a" in r.error


def test_wrong_parameter_names_invalid():
    r = parse("```python\ndef priority(size, capacities):\n    return -capacities\n```")
    assert not r.valid
    assert "expected (item, bins)" in r.error


def test_extra_params_need_defaults():
    assert parse("```python\ndef priority(item, bins, alpha=0.5):\n    return -bins * alpha\n```").valid
    r = parse("```python\ndef priority(item, bins, alpha):\n    return -bins * alpha\n```")
    assert not r.valid


def test_syntax_error_reported():
    r = parse("```python\ndef priority(item, bins)\n    return -bins\n```")
    assert not r.valid
    assert r.error.startswith("syntax error") and "line 1" in r.error


def test_no_code():
    r = parse("I think best fit is a good idea.")
    assert not r.valid and r.error == "no code found in the response"


def test_truncated_fence_still_parsed():
    # A response cut by max_new_tokens right after the function (no closing fence).
    r = parse("{{idea}}\n```python\ndef priority(item, bins):\n    return -bins\n")
    assert r.valid, r.error


def test_component_line_extracted_not_code():
    r = parse("{{The idea of the algorithm is to x}}\n```python\ndef priority(item, bins):\n    return -bins\n```\nComponent: a penalty for nearly empty bins")
    assert r.valid and r.component == "a penalty for nearly empty bins"
    r = parse("def priority(item, bins):\n    return -bins\nComponent: waste term")
    assert r.valid and r.component == "waste term" and "waste" not in r.code


def test_imports_not_duplicated():
    r = parse("```python\nimport numpy as np\ndef priority(item, bins):\n    return -np.abs(bins)\n```")
    assert r.code.count("import numpy as np") == 1


def test_signature_params_and_errors():
    assert signature_params("def priority(item, bins):\n    pass\n", "priority") == ["item", "bins"]
    with pytest.raises(ValueError, match="template"):
        signature_params("def other(a):\n    pass\n", "priority")
    with pytest.raises(ValueError, match="template"):
        signature_params("def (", "priority")


def test_bad_arguments():
    with pytest.raises(TypeError, match="text"):
        parse_response(None, "priority", PARAMS)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="entry_point"):
        parse_response("x", "not a name", PARAMS)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("def priority(item, bins):\n    return{}`'\"#=+-*/[]0123456789abcx \t")), max_size=300))
def test_arbitrary_text_never_raises(text):
    r = parse(text)
    assert (r.code is None) != (r.error is None)
    if r.code is not None:
        ast.parse(r.code)
        assert "def priority(" in r.code


def test_a_function_defined_twice_keeps_the_last_and_example_usage_is_dropped():
    # A coder model's habit (measured on Qwen2.5-Coder-0.5B): keep the original, write the edit
    # below it, then show example usage. Python runs the last definition; the usage's globals
    # (`item_size = 3`) would hide the edit's undefined name and make a broken program "valid".
    text = (
        "```python\nimport numpy as np\n\ndef priority(item, bins):\n    return -(bins - item)\n\n"
        "def priority(item, bins):\n    \"\"\"The idea of the algorithm is to fill tight bins.\"\"\"\n"
        "    return -(bins - item_size)\n\n# Example usage:\nbins = np.array([5, 2])\nitem_size = 3\n"
        "print(priority(item_size, bins))\n```\n"
    )
    r = parse(text)
    assert r.valid, r.error
    assert r.code.count("def priority") == 1 and "item_size)" in r.code
    assert "item_size = 3" not in r.code and "bins = np.array" not in r.code
    assert r.idea == "The idea of the algorithm is to fill tight bins."  # from the docstring
    namespace: dict = {}
    exec(r.code, namespace)  # noqa: S102 - test-only: the parsed program, to show it now fails
    with pytest.raises(NameError, match="item_size"):
        namespace["priority"](1.0, __import__("numpy").array([3.0]))


def test_constants_before_the_functions_are_kept():
    r = parse("```python\nW = 0.5\n\ndef priority(item, bins):\n    return -(bins - item) + W * bins\n```")
    assert r.valid and "W = 0.5" in r.code
