"""Peak resident memory of a discovery campaign, by phase (load, sample, evaluate, GRPO update).

Runs a real campaign (``create_campaign`` + ``run_campaign``, the code ``optiforge campaign run``
runs) in a temporary home and records the peak RSS of this process during each phase. Before a
phase the kernel's high-water mark is reset (``echo 5 > /proc/self/clear_refs``), after it
``VmHWM`` is read, so each figure is that phase's own peak (the whole run's peak is the largest).
The phases are found by wrapping the backend's ``generate``, the executor's ``evaluate`` and the
learner's ``step`` (measurement only; nothing else changes). Sandbox workers are separate
processes and are reported apart (their peak RSS from ``getrusage(RUSAGE_CHILDREN)``).

Usage: python benchmarks/campaign_memory.py [--budget 24] [--rl grpo] [--llm smollm2] [--task binpacking]
       [--max-new-tokens N] [--label TEXT] [--json out.json]
Linux only (/proc). Prints one JSON line per phase and a summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def reset_peak() -> None:
    """Make VmHWM start again from the current RSS (Linux >= 4.0)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


class Phases:
    """Per-phase peak RSS (MB): the maximum over every occurrence of the phase."""

    def __init__(self) -> None:
        self.peak: dict[str, float] = {}
        self.count: dict[str, int] = {}
        self.seconds: dict[str, float] = {}

    def wrap(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            # Whatever ran since the last phase ended (e.g. the RL twin's lazy load, the store).
            self.peak["between phases"] = max(self.peak.get("between phases", 0.0), status_mb("VmHWM"))
            reset_peak()
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - t0
                self.peak[phase] = max(self.peak.get(phase, 0.0), status_mb("VmHWM"))
                self.count[phase] = self.count.get(phase, 0) + 1
                reset_peak()

        return wrapped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=24)
    ap.add_argument("--rl", default="grpo", choices=["grpo", "none"])
    ap.add_argument("--llm", default=None, help="LLM spec (default: the campaign default)")
    ap.add_argument("--task", default="binpacking")
    ap.add_argument("--max-new-tokens", type=int, default=None)
    ap.add_argument("--label", default="")
    ap.add_argument("--json", default=None, help="append the summary as one JSON line to this file")
    args = ap.parse_args()
    if args.budget < 1:
        print("error: --budget must be >= 1", file=sys.stderr)
        sys.exit(2)
    home = tempfile.mkdtemp(prefix="optiforge-mem-")
    os.environ["OPTIFORGE_HOME"] = home

    from optiforge.agents.evolution.grpo import learner as grpo_learner
    from optiforge.platform import executors
    from optiforge.platform.campaigns import runner
    from optiforge.platform.llm import spec as llm_spec
    from optiforge.platform.store import Store

    phases = Phases()
    reset_peak()
    base_rss = status_mb("VmRSS")
    build = llm_spec._checked_build

    def load_and_wrap(*a: Any, **k: Any) -> Any:
        llm = build(*a, **k)
        llm.generate = phases.wrap("sample", llm.generate)
        return llm

    llm_spec._checked_build = phases.wrap("load", load_and_wrap)
    executors.LocalExecutor.evaluate = phases.wrap("evaluate", executors.LocalExecutor.evaluate)
    grpo_learner.GRPOLearner.step = phases.wrap("grpo update", grpo_learner.GRPOLearner.step)
    grpo_learner.GRPOLearner.__init__ = phases.wrap("load", grpo_learner.GRPOLearner.__init__)

    store = Store()
    config = {"agent_options": {"max_new_tokens": args.max_new_tokens}} if args.max_new_tokens else None
    cid = runner.create_campaign(store, task=args.task, budget=args.budget, llm=args.llm, rl=args.rl,
                                 config=config)
    t0 = time.perf_counter()
    runner.run_campaign(store, cid)
    wall = time.perf_counter() - t0
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    phases.peak["between phases"] = max(phases.peak.get("between phases", 0.0), status_mb("VmHWM"))
    for name in ("load", "sample", "evaluate", "grpo update"):
        if name in phases.peak:
            print(json.dumps({"phase": name, "peak_rss_mb": round(phases.peak[name]), "calls": phases.count[name],
                              "seconds": round(phases.seconds[name], 1)}))
    summary = {
        "label": args.label, "budget": args.budget, "rl": args.rl, "llm": args.llm or "default",
        "peak_rss_mb": round(max(phases.peak.values())), "python_start_rss_mb": round(base_rss),
        "sandbox_child_peak_mb": round(children), "wall_s": round(wall),
        "phases": {k: round(v) for k, v in phases.peak.items()},
        "seconds": {k: round(v) for k, v in phases.seconds.items()},
        "env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MALLOC_ARENA_MAX", "OMP_WAIT_POLICY")},
        "load_avg": os.getloadavg()[0],
    }
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "a", encoding="utf-8") as f:
            f.write(json.dumps(summary) + "\n")


if __name__ == "__main__":
    main()
