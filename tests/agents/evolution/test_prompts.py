import pytest

from optiforge.agents.evolution.population import PoolEntry
from optiforge.agents.evolution.prompts import OPERATORS, build_prompt

CODE = 'import numpy as np\n\n\ndef priority(item, bins):\n    """A long docstring that compaction removes."""\n    # why: tight bins first\n    return -(bins - item)\n'


def parent(h: str, idea: str, score: float) -> PoolEntry:
    return PoolEntry(hash=h, code=CODE, idea=idea, score=score, operator="injection")


P1, P2 = parent("a", "prefer tight bins", 1.25), parent("b", "penalize empty bins", 2.5)


@pytest.mark.parametrize("operator", OPERATORS)
def test_every_operator_has_calm_frame(task, operator):
    parents = {"initialization": [], "crossover": [P1, P2]}.get(operator, [P1])
    prompt = build_prompt(operator, task, parents, ["a waste term"])
    assert prompt.startswith("Searching superior heuristics on the tiny_binpacking problem in an evolutionary manner")
    assert task.description in prompt
    assert "double brace" in prompt and "The idea of the algorithm is to" in prompt
    assert "`priority`" in prompt and "deterministic" in prompt
    for p in parents:
        assert f"{{{{{p.idea}}}}}" in prompt and f"score {p.score:.4g}" in prompt


def test_operator_specific_content(task):
    scratch = build_prompt("initialization", task, [])
    assert "from scratch" in scratch and "def priority(item: float, bins: np.ndarray)" in scratch
    assert "Seed algorithm" in build_prompt("initialization", task, [P1])
    inj = build_prompt("injection", task, [P1], ["a waste term", "a load-balance bonus"])
    assert "ONE new component" in inj and "- a waste term" in inj and "Component:" in inj
    assert "- (none yet)" in build_prompt("injection", task, [P1], [])
    assert "instance-dependent" in build_prompt("replacement", task, [P1])
    cross = build_prompt("crossover", task, [P1, P2])
    assert "Algorithm 1" in cross and "Algorithm 2" in cross
    assert "Simplify" in build_prompt("simplification", task, [P1])
    assert "Component:" not in build_prompt("replacement", task, [P1])


def test_max_prompt_chars_compacts(task):
    library = [f"component number {i} with a fairly long description" for i in range(30)]
    full = build_prompt("injection", task, [P1], library, max_prompt_chars=100_000)
    assert "A long docstring" in full and "component number 0 " in full
    compact = build_prompt("injection", task, [P1], library, max_prompt_chars=1700)
    assert len(compact) <= 1700
    assert "A long docstring" not in compact and "# why" not in compact
    assert "component number 29" in compact and "component number 0 " not in compact
    assert "def priority(item, bins)" in compact  # the code itself survives
    tiny = build_prompt("injection", task, [P1], library, max_prompt_chars=10)
    assert "def priority" in tiny  # best effort: never drops the code


def test_bad_input(task):
    with pytest.raises(ValueError, match="operator"):
        build_prompt("mutation", task, [P1])
    with pytest.raises(ValueError, match="parents"):
        build_prompt("crossover", task, [P1])
    with pytest.raises(ValueError, match="parents"):
        build_prompt("injection", task, [])
    with pytest.raises(ValueError, match="max_prompt_chars"):
        build_prompt("injection", task, [P1], max_prompt_chars=0)


def test_tweak_shows_pool_examples_first_and_asks_for_one_small_edit(task):
    one = build_prompt("tweak", task, [P1])
    assert "Algorithm to edit" in one and "Example" not in one
    assert "ONE small edit" in one and "numeric weight" in one
    three = build_prompt("tweak", task, [P1, P2, parent("c", "weigh the item", 3.0)])
    # the examples come first, so the algorithm to edit is what the model reads last
    assert three.index("Example 1") < three.index("Example 2") < three.index("Algorithm to edit")
    assert "{{penalize empty bins}}" in three and "{{weigh the item}}" in three
    with pytest.raises(ValueError, match="parents"):
        build_prompt("tweak", task, [])


def test_code_answer_format_asks_for_one_block_with_the_idea_in_the_docstring(task):
    from optiforge.agents.evolution.prompts import build_prompt

    prompt = build_prompt("injection", task, [P1], answer_format="code")
    assert "one ```python block" in prompt and "docstring" in prompt and "Component:" in prompt
    assert "double brace" not in prompt
    assert "double brace" in build_prompt("injection", task, [P1])  # CALM's, the default
    with pytest.raises(ValueError, match="^answer_format:"):
        build_prompt("injection", task, [P1], answer_format="diff")
