"""Time of one GRPO update (QLoRA: NF4 SmolLM2-135M + LoRA r=16 on all linear layers) on this CPU.

Checks the claim of issue 3: "TRL GRPO + NF4 + LoRA on SmolLM2-135M runs on CPU at about 5 s
per step with G=4 and 24-token completions". Two shapes are timed:

* ``short``: the claim's setting, a one-line chat prompt, G=4 completions of 24 tokens;
* ``calm``: a real CALM bin-packing prompt (~450 tokens), G=4 completions of 128 tokens.

Each step includes the reference pass (adapter disabled), the policy forward/backward and the
AdamW update. Completions are sampled from the model itself first (as in the online loop), so
the first sampling also triggers bitsandbytes' CPU weight packing that each step undoes.

Usage: ``python benchmarks/grpo_step_time.py [--steps 4] [--shapes short,calm]``
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CALM_PROMPT_TASK = "binpacking"


def _calm_prompt() -> str:
    from optiforge.agents.evolution.population import PoolEntry
    from optiforge.agents.evolution.prompts import build_prompt
    from optiforge.heuristics import get_task

    task = get_task(CALM_PROMPT_TASK)
    code = task.seeds[task.baseline]
    parent = PoolEntry(idea="Best fit.", code=code, hash="0", score=4.46, operator="seed")
    return build_prompt("replacement", task, [parent], library=[])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=4, help="timed GRPO steps per shape (after 1 warm-up)")
    ap.add_argument("--shapes", default="short,calm")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch threads (0: torch's default); 1 is fastest on oversubscribed cores")
    args = ap.parse_args(argv)
    if args.steps < 1:
        print("error: --steps must be >= 1", file=sys.stderr)
        return 2

    import torch

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    from optiforge.agents.evolution.grpo import GRPOLearner
    from optiforge.platform.llm.transformers_backend import TransformersLLM

    t0 = time.perf_counter()
    llm = TransformersLLM("smollm2", quantization="int4", device="cpu")
    load_s = time.perf_counter() - t0
    learner = GRPOLearner(llm, seed=0, temperature=0.8)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"torch {torch.__version__} ({torch.get_num_threads()} threads); model load {load_s:.1f} s; "
          f"LoRA parameters {learner.trainable_parameters():,}")
    shapes = {
        "short": ("Write a Python function that returns the square of a number.", 24),
        "calm": (None, 128),
    }
    print("\n| shape | prompt tokens | completion tokens (G=4 total) | sample (s) | GRPO step median (s) | min | max |")
    print("|---|---|---|---|---|---|---|")
    for name in args.shapes.split(","):
        if name not in shapes:
            print(f"error: unknown shape {name!r}", file=sys.stderr)
            return 2
        user, max_new = shapes[name]
        user = user or _calm_prompt()
        prompt = llm.format_prompt(user)
        t = time.perf_counter()
        comps = llm.generate([user], n=4, max_new_tokens=max_new, temperature=0.8, seed=1)[0]
        sample_s = time.perf_counter() - t
        rewards = [1.0, -0.8, 0.3, -0.2]
        group = [(prompt, comps, rewards)]
        learner.step(group)  # warm-up (first backward allocates)
        times = []
        for _ in range(args.steps):
            # Sample between updates, as the online loop does.
            llm.generate([user], n=1, max_new_tokens=1, temperature=0.8, seed=2)
            t = time.perf_counter()
            stats = learner.step(group)
            times.append(time.perf_counter() - t)
        n_prompt = len(llm.tokenizer(prompt, add_special_tokens=False)["input_ids"])
        print(f"| {name} | {n_prompt} | {int(stats['tokens'])} | {sample_s:.1f} | "
              f"{statistics.median(times):.2f} | {min(times):.2f} | {max(times):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
