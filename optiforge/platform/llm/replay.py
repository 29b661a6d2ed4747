"""Deterministic backends built from recorded responses: replay a JSONL file, or record one."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from optiforge.platform.llm._common import check_generate_args
from optiforge.types import Completion


class ReplayLLM:
    """Replays recorded responses from a JSONL file, in order, cycling when exhausted.

    Each line is a JSON object with at least ``"text"``; ``"prompt_tokens"``,
    ``"completion_tokens"`` and ``"finish_reason"`` are used when present. Sample ``j`` of
    prompt ``i`` in a call is the next record after all earlier samples of all earlier calls,
    so a given sequence of calls always gets the same responses, whatever the sampling
    arguments. Useful for reproducibility tests and for re-running a campaign from the
    responses a :class:`RecordingLLM` captured.

    Parameters
    ----------
    path : str or PathLike
        The JSONL file (one response per line; blank lines ignored).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        p = Path(path).expanduser()
        if not p.is_file():
            raise FileNotFoundError(f"path: no replay file at {str(path)!r}")
        records: list[Completion] = []
        for lineno, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"path: {p}:{lineno} is not valid JSON ({exc.msg})") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
                raise ValueError(f'path: {p}:{lineno} must be an object with a string "text" field')
            records.append(Completion(
                text=obj["text"],
                prompt_tokens=int(obj.get("prompt_tokens", 0)),
                completion_tokens=int(obj.get("completion_tokens", 0)),
                finish_reason=str(obj.get("finish_reason", "stop")),
            ))
        if not records:
            raise ValueError(f"path: replay file {str(path)!r} holds no responses")
        self.path = str(p)
        self.records = records
        self._cursor = 0
        self._lock = threading.Lock()

    @property
    def position(self) -> int:
        """How many responses have been served so far."""
        return self._cursor

    def reset(self, position: int = 0) -> None:
        """Restart the replay at ``position`` (e.g. to resume a campaign mid-way)."""
        if isinstance(position, bool) or not isinstance(position, int) or position < 0:
            raise ValueError(f"position: expected an int >= 0, got {position!r}")
        with self._lock:
            self._cursor = position

    def generate(
        self,
        prompts: Sequence[str],
        n: int = 1,
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.8,
        top_p: float = 1.0,
        seed: int | None = None,
        system: str | None = None,
    ) -> list[list[Completion]]:
        prompts = check_generate_args(prompts, n, max_new_tokens, temperature, top_p, seed, system)
        with self._lock:
            out = []
            for _ in prompts:
                row = []
                for _ in range(n):
                    row.append(self.records[self._cursor % len(self.records)])
                    self._cursor += 1
                out.append(row)
        return out

    def __repr__(self) -> str:
        return f"ReplayLLM(path={self.path!r}, responses={len(self.records)})"


class RecordingLLM:
    """Wraps any LLM and appends every completion it returns to a JSONL file.

    The file is in :class:`ReplayLLM`'s format (plus the prompt, for inspection), written in
    the order ``ReplayLLM`` serves responses, so replaying it reproduces the run.

    Parameters
    ----------
    inner : LLM
        The backend that really generates.
    path : str or PathLike
        JSONL file to append to (created with its parent directories).
    """

    def __init__(self, inner: Any, path: str | os.PathLike[str]) -> None:
        if not callable(getattr(inner, "generate", None)):
            raise TypeError("inner: expected an object with a generate(prompts, n, ...) method")
        self.inner = inner
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def generate(self, prompts: Sequence[str], n: int = 1, **kwargs: Any) -> list[list[Completion]]:
        out = self.inner.generate(prompts, n, **kwargs)
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            for prompt, row in zip(prompts, out, strict=True):
                for c in row:
                    fh.write(json.dumps({
                        "text": c.text, "prompt_tokens": c.prompt_tokens,
                        "completion_tokens": c.completion_tokens,
                        "finish_reason": c.finish_reason, "prompt": prompt,
                    }) + "\n")
        return out

    def __getattr__(self, name: str) -> Any:
        # load_adapter, format_prompt, model, ... stay reachable through the wrapper.
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
