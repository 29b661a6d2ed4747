"""Shared fixtures for platform tests: an isolated OPTIFORGE_HOME and scripted LLM responses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# Responses a small instruct model might give: two valid programs, one refusal (no code), one
# syntax error. Replayed in order by the `replay:` backend, so a campaign is deterministic.
REPLAY_RESPONSES = [
    "{The idea of the algorithm is to prefer the tightest bin.}\n```python\nimport numpy as np\n"
    "def priority(item, bins):\n    return -(bins - item)\n```",
    "{The idea of the algorithm is to favour leftovers smaller than the item.}\n```python\n"
    "def priority(item, bins):\n    r = bins - item\n    return -r + 0.5 * (r < item) * (r > 0)\n```",
    "I cannot help with that.",
    "{The idea of the algorithm is to square the slack.}\n```python\n"
    "def priority(item, bins):\n    return -(bins - item) ** 2 +\n```",
    "{The idea of the algorithm is to prefer nearly full bins but avoid tiny gaps.}\n```python\n"
    "import numpy as np\ndef priority(item, bins):\n    r = bins - item\n"
    "    return -r - 3.0 * ((r > 0) & (r < 3))\n```",
]


@pytest.fixture
def replay_file(tmp_path: Path) -> Path:
    path = tmp_path / "responses.jsonl"
    path.write_text("\n".join(json.dumps({"text": t}) for t in REPLAY_RESPONSES) + "\n")
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    monkeypatch.setenv("OPTIFORGE_HOME", str(h))
    monkeypatch.delenv("OPTIFORGE_DB", raising=False)
    return h
