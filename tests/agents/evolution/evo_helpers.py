"""Test helpers: a small online bin-packing task, a trusted in-process scorer, a scripted LLM.

The scripted LLM is the agent's seam (it satisfies the ``LLM`` protocol); programs are only
ever scripted test code, so scoring them in-process is safe here. The agent itself never
executes code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from optiforge.types import Completion, Evaluation

IMPORTS = "import numpy as np\n"

TEMPLATE = '''import numpy as np


def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """Score each feasible bin (remaining capacities); the item goes to the argmax."""
    return -(bins - item)
'''

BEST_FIT = TEMPLATE

FIRST_FIT = '''import numpy as np


def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """First fit: the lowest-index bin that fits."""
    return -np.arange(len(bins), dtype=float)
'''

WORST_FIT = '''import numpy as np


def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """Worst fit: the emptiest bin."""
    return bins - item
'''


@dataclass
class TinyBinPacking:
    """Online bin packing (FunSearch semantics) on a few fixed Weibull-like instances."""

    name: str = "tiny_binpacking"
    description: str = (
        "items arrive one by one and each must be placed into a bin of capacity 100; the "
        "function priority(item, bins) scores every bin that can fit the item (bins holds "
        "their remaining capacities) and the item goes to the highest score. The goal is to "
        "use as few bins as possible."
    )
    entry_point: str = "priority"
    template: str = TEMPLATE
    imports: str = IMPORTS
    seeds: dict[str, str] = field(default_factory=lambda: {"best_fit": BEST_FIT, "first_fit": FIRST_FIT})
    baseline: str = "best_fit"
    capacity: int = 100

    def instances(self) -> list[np.ndarray]:
        rng = np.random.default_rng(7)
        return [np.clip(np.round(rng.weibull(3.0, 120) * 45), 1, 100).astype(int) for _ in range(3)]


def pack(fn: Callable, items: np.ndarray, capacity: int) -> int:
    bins = np.full(len(items), float(capacity))
    for item in items:
        feasible = np.nonzero(bins >= item)[0]
        scores = np.asarray(fn(float(item), bins[feasible].copy()), dtype=float)
        if scores.shape != (len(feasible),) or not np.all(np.isfinite(scores)):
            raise ValueError("priority must return one finite score per feasible bin")
        bins[feasible[int(np.argmax(scores))]] -= item
    return int(np.sum(bins != capacity))


def evaluate_code(task: TinyBinPacking, code: str | None) -> Evaluation:
    """Trusted scorer: % excess bins over the L1 lower bound, averaged (lower is better)."""
    if code is None:
        return Evaluation.invalid("unparsable")
    ns: dict = {}
    try:
        exec(compile(code, "<program>", "exec"), ns)
        fn = ns[task.entry_point]
        gaps = []
        for items in task.instances():
            lb = int(np.ceil(items.sum() / task.capacity))
            gaps.append(100.0 * (pack(fn, items, task.capacity) - lb) / lb)
    except Exception as exc:  # noqa: BLE001 - any failure of a generated program is "invalid"
        return Evaluation.invalid(f"{type(exc).__name__}: {exc}")
    return Evaluation(valid=True, score=float(np.mean(gaps)))


class ScriptedLLM:
    """``LLM`` protocol with scripted responses, handed out in order (cycling)."""

    def __init__(self, responses: Sequence[str] | Callable[[str, int], str]) -> None:
        self.responses = responses
        self.calls: list[dict] = []
        self._i = 0

    def generate(self, prompts, n=1, *, max_new_tokens=256, temperature=0.8, top_p=1.0, seed=None, system=None):
        self.calls.append({"prompts": list(prompts), "n": n, "seed": seed, "temperature": temperature})
        out = []
        for prompt in prompts:
            group = []
            for _ in range(n):
                if callable(self.responses):
                    text = self.responses(prompt, self._i)
                else:
                    text = self.responses[self._i % len(self.responses)]
                self._i += 1
                group.append(Completion(text=text, completion_tokens=len(text.split())))
            out.append(group)
        return out


def respond(idea: str, body: str, component: str | None = None) -> str:
    """A well-formed CALM-style response."""
    text = f"{{{{The idea of the algorithm is to {idea}}}}}\n\n```python\nimport numpy as np\n\n\ndef priority(item, bins):\n{body}\n```\n"
    if component:
        text += f"Component: {component}\n"
    return text
