"""ReplayLLM / RecordingLLM: deterministic responses from a JSONL file."""

from __future__ import annotations

import json

import pytest

from optiforge.agents.protocols import LLM
from optiforge.platform.llm import RecordingLLM, ReplayLLM, from_spec


def _write(path, records):
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def test_replay_serves_in_order_and_cycles(tmp_path):
    p = _write(tmp_path / "r.jsonl", [{"text": "a"}, {"text": "b", "completion_tokens": 4}, {"text": "c"}])
    llm = ReplayLLM(p)
    assert isinstance(llm, LLM)
    out = llm.generate(["p1", "p2"], n=2)
    assert [[c.text for c in row] for row in out] == [["a", "b"], ["c", "a"]]
    assert out[0][1].completion_tokens == 4
    assert llm.position == 4
    assert [c.text for c in llm.generate(["p"], n=1)[0]] == ["b"]


def test_replay_is_reproducible_across_instances_and_reset(tmp_path):
    p = _write(tmp_path / "r.jsonl", [{"text": str(i)} for i in range(5)])
    a, b = ReplayLLM(p), ReplayLLM(p)
    calls = [(["x"], 3), (["y", "z"], 2)]
    ra = [a.generate(ps, n=k, seed=1) for ps, k in calls]
    rb = [b.generate(ps, n=k, temperature=0.1) for ps, k in calls]
    assert ra == rb
    a.reset(3)
    assert a.generate(["q"])[0][0].text == "3"


def test_replay_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="^path:"):
        ReplayLLM(tmp_path / "none.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a"}\n{oops\n')
    with pytest.raises(ValueError, match="^path: .*:2 is not valid JSON"):
        ReplayLLM(bad)
    with pytest.raises(ValueError, match='"text"'):
        ReplayLLM(_write(tmp_path / "nt.jsonl", [{"content": "a"}]))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(ValueError, match="no responses"):
        ReplayLLM(empty)
    with pytest.raises(TypeError, match="^prompts:"):
        ReplayLLM(_write(tmp_path / "ok.jsonl", [{"text": "a"}])).generate("a single string")


def test_recording_then_replaying_reproduces_the_run(tmp_path):
    source = ReplayLLM(_write(tmp_path / "src.jsonl", [{"text": f"r{i}", "completion_tokens": i} for i in range(7)]))
    rec = RecordingLLM(source, tmp_path / "rec" / "calls.jsonl")
    first = [rec.generate(["a", "b"], n=2), rec.generate(["c"], n=3)]
    replay = ReplayLLM(tmp_path / "rec" / "calls.jsonl")
    again = [replay.generate(["a", "b"], n=2), replay.generate(["c"], n=3)]
    assert first == again
    lines = [json.loads(x) for x in (tmp_path / "rec" / "calls.jsonl").read_text().splitlines()]
    assert [x["prompt"] for x in lines] == ["a", "a", "b", "b", "c", "c", "c"]
    assert rec.position == 7  # other attributes reach the wrapped backend


def test_replay_spec(tmp_path):
    p = _write(tmp_path / "r.jsonl", [{"text": "hello"}])
    llm = from_spec(f"replay:{p}")
    assert isinstance(llm, ReplayLLM) and llm.generate(["x"])[0][0].text == "hello"
    assert from_spec(f"replay:{p}") is not llm  # replays keep a cursor: never shared
