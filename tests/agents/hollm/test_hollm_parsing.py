import json
import re
from pathlib import Path

import numpy as np

from optiforge.agents.hollm.parsing import parse_candidates, parse_values
from optiforge.agents.hollm.prompts import candidate_prompt

NAMES = ["x1", "x2"]


def test_clean_json():
    out = parse_candidates(
        '[{"x1": 0.1, "x2": 0.2, "value": 3.5}, {"x1": 0.3, "x2": 0.4, "value": 1}]', NAMES
    )
    assert out == [([0.1, 0.2], 3.5), ([0.3, 0.4], 1.0)]


def test_prose_fences_single_quotes_unquoted_keys_trailing_commas():
    text = (
        "Sure! Here are the points:\n```json\n[{'x1': 0.1, 'x2': 0.2, 'value': 1.0},\n"
        '{x1: 0.5, x2: 0.6,},\n{"x1": "0.7", "x2": 0.8}]\n```\nHope this helps'
    )
    out = parse_candidates(text, NAMES)
    assert [c for c, _ in out] == [[0.1, 0.2], [0.5, 0.6], [0.7, 0.8]]
    assert out[0][1] == 1.0 and out[1][1] is None


def test_truncated_and_incomplete_items_are_skipped():
    text = '[{"x1": 0.1, "x2": 0.2}, {"x1": 0.3}, {"x1": NaN, "x2": 0.1}, {"x1": 0.9, "x2": 0.'
    assert parse_candidates(text, NAMES) == [([0.1, 0.2], None)]


def test_non_json_pairs_and_flat_lists():
    assert parse_candidates("{x1 = 0.25; x2 = 0.75 value=2}", NAMES) == [([0.25, 0.75], 2.0)]
    assert parse_candidates("[0.1, 0.2]\n[0.3, 0.4, 9]", NAMES) == [
        ([0.1, 0.2], None),
        ([0.3, 0.4], 9.0),
    ]
    assert parse_candidates("I cannot help with that.", NAMES) == []


def test_parse_values():
    assert parse_values("Predictions: [1.5, 2, -3e-1]", 3) == [1.5, 2.0, -0.3]
    assert parse_values('[{"value": 1}, {"value": 2}]', 2) == [1.0, 2.0]
    assert parse_values("1. 0.5\n2. 0.7\n", 2) == [0.5, 0.7]
    assert parse_values("[1, 2]", 3) is None
    assert parse_values("no numbers here", 1) is None


def test_proposer_prompt_points_parse_back_as_written():
    # The prompt shows points in the format it asks for: the parser must read that format.
    names = ["x1", "x2", "x3"]
    X = np.array([[0.12345, 0.5, 0.9], [0.0, 1.0, 0.25]])
    y = np.array([-1.5, 2.25])
    prompt = candidate_prompt(names, X, y, np.zeros(3), np.full(3, 0.5), 4)
    assert "(x1,x2,x3,value)" in prompt and "Suggest 4 new points" in prompt
    block = prompt.split("value):\n", 1)[1].split("\n\n", 1)[0]
    parsed = parse_candidates(block, names)
    assert [c for c, _ in parsed] == [[0.123, 0.5, 0.9], [0.0, 1.0, 0.25]]
    assert [v for _, v in parsed] == [-1.5, 2.25]


def test_numbered_lines_and_run_on_rows():
    # "1." list markers are not numbers of the point; a row without line breaks holds several
    # points of d + 1 numbers, and an incomplete last group is dropped.
    assert parse_candidates("x1,x2,value\n1. 0.1,0.2,3\n- 0.5 0.6", NAMES) == [
        ([0.1, 0.2], 3.0),
        ([0.5, 0.6], None),
    ]
    assert parse_candidates("0.1,0.2,3,0.4,0.5,6,0.7", NAMES) == [
        ([0.1, 0.2], 3.0),
        ([0.4, 0.5], 6.0),
    ]
    assert (
        parse_candidates("value: 0.1\n0.2, 0.3 is a guess", NAMES) == []
    )  # too few numbers, words


def _numbers(text):
    return [float(x) for x in re.findall(r"-?\d+\.\d+|-?\d+", text)]


def test_real_small_model_answers():
    # Verbatim answers of the bundled SmolLM2-135M to the proposer prompt (Hartmann-6).
    fixture = json.loads(
        (Path(__file__).parent / "fixtures" / "smollm2_proposer_answers.json").read_text()
    )
    names = fixture["names"]
    for text in fixture["lines"] + fixture["run_on"]:
        parsed = parse_candidates(text, names)
        assert parsed, text
        written = _numbers(text)
        for coords, value in parsed:
            # Every point is 6 numbers the model wrote, in its order (then its value, if any).
            assert len(coords) == 6
            row = coords + ([value] if value is not None else [])
            starts = [i for i in range(len(written)) if written[i : i + len(row)] == row]
            assert starts, (row, text)
    for text in fixture["prose"]:
        assert parse_candidates(text, names) == []
