"""Peak RSS of one GRPO update on the bundled NF4 model, by micro-batch size and checkpointing.

One group of G completions of ``--tokens`` tokens each (random code-like text) after a
campaign-sized prompt (``--prompt-tokens``); the kernel's high-water mark is reset before the
update (``/proc/self/clear_refs``) and read after it. Each configuration runs in a fresh
process so one configuration's freed-but-kept pages do not hide the next one's peak.

The process gets the campaign's thread and allocator budget first
(:func:`optiforge.platform.resources.apply_budget`); ``--mmap-threshold 0`` keeps glibc's
dynamic mmap threshold (the campaign's allocator before the fixed threshold) to compare.

Usage: python benchmarks/grpo_update_memory.py [--g 4] [--tokens 384] [--prompt-tokens 700]
       [--configs 4:off,1:off,1:on] [--mmap-threshold BYTES] [--phases]
Prints one JSON line per configuration: micro-batch size, gradient checkpointing, RSS before
the update, peak during it, seconds; with ``--phases`` also the RSS before, peak and RSS after
of every forward pass (the reference's without grad, the policy's with) and backward pass.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from optiforge.platform.resources import DEFAULT_MMAP_THRESHOLD  # noqa: E402  (no torch import)


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def _trace_phases(learner: object) -> list[dict]:
    """Record the peak RSS of every forward pass and backward pass of the update (a list that
    fills as it runs). Measurement only: VmHWM is reset before each phase and read after it."""
    import torch

    rows: list[dict] = []

    def traced(name: str, fn):
        def run(*args, **kwargs):
            phase = (
                name
                if name == "backward"
                else f"forward ({'grad' if torch.is_grad_enabled() else 'no grad'})"
            )
            before = _status_mb("VmRSS")
            Path("/proc/self/clear_refs").write_text("5")
            try:
                return fn(*args, **kwargs)
            finally:
                rows.append(
                    {
                        "phase": phase,
                        "rss_before_mb": round(before),
                        "peak_mb": round(_status_mb("VmHWM")),
                        "rss_after_mb": round(_status_mb("VmRSS")),
                    }
                )
                Path("/proc/self/clear_refs").write_text("5")

        return run

    learner._logps = traced("forward", learner._logps)
    torch.Tensor.backward = traced("backward", torch.Tensor.backward)
    return rows


def one(
    g: int,
    tokens: int,
    prompt_tokens: int,
    micro: int,
    checkpointing: bool,
    mmap_threshold: int,
    phases: bool = False,
) -> dict:
    import random

    from optiforge.platform.resources import apply_budget

    apply_budget(mmap_threshold=mmap_threshold)  # as the campaign does, before torch loads
    from optiforge.agents.evolution.grpo import GRPOLearner
    from optiforge.platform.llm import from_spec

    llm = from_spec("smollm2")
    learner = GRPOLearner(llm, micro_batch_size=micro, gradient_checkpointing=checkpointing, seed=0)
    rng = random.Random(0)
    words = [
        "def",
        "return",
        "bins",
        "item",
        "score",
        "np.",
        "max(",
        "min(",
        "for",
        "in",
        "if",
        "else",
        "capacity",
        "-",
        "+",
        "*",
        "0.5",
        "1",
        ":",
        "\n    ",
    ]

    def text(n_tokens: int) -> str:
        out = []
        while len(llm.tokenizer(" ".join(out))["input_ids"]) < n_tokens:
            out.extend(rng.choice(words) for _ in range(32))
        ids = llm.tokenizer(" ".join(out))["input_ids"][:n_tokens]
        return llm.tokenizer.decode(ids)

    prompt = llm.format_prompt(text(prompt_tokens))
    group = (prompt, [text(tokens) for _ in range(g)], [float(i) for i in range(g)])
    rows = _trace_phases(learner) if phases else []
    before = _status_mb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")
    t0 = time.perf_counter()
    learner.step([group])
    seconds = time.perf_counter() - t0
    # With --phases VmHWM restarts at every phase: the update's peak is the largest phase's.
    peak = max([_status_mb("VmHWM")] + [r["peak_mb"] for r in rows])
    result = {
        "G": g,
        "tokens": tokens,
        "prompt_tokens": prompt_tokens,
        "micro_batch_size": micro,
        "gradient_checkpointing": checkpointing,
        "mmap_threshold": mmap_threshold,
        "rss_before_mb": round(before),
        "update_peak_mb": round(peak),
        "seconds": round(seconds, 1),
        "threads": os.environ.get("OMP_NUM_THREADS"),
        "load_avg": round(os.getloadavg()[0], 1),
    }
    if phases:
        result["phases"] = rows
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--g", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=384)
    ap.add_argument("--prompt-tokens", type=int, default=700)
    ap.add_argument("--configs", default="4:off,1:off,1:on", help="micro:checkpointing pairs")
    ap.add_argument(
        "--mmap-threshold",
        type=int,
        default=DEFAULT_MMAP_THRESHOLD,
        help="glibc mmap threshold in bytes (0: glibc's dynamic default)",
    )
    ap.add_argument(
        "--phases",
        action="store_true",
        help="also report the peak RSS of every forward and backward pass of the update",
    )
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.mmap_threshold < 0:
        print("error: --mmap-threshold: expected bytes >= 0", file=sys.stderr)
        sys.exit(2)
    if args.child:
        micro, ck = args.child.split(":")
        print(
            json.dumps(
                one(
                    args.g,
                    args.tokens,
                    args.prompt_tokens,
                    int(micro),
                    ck == "on",
                    args.mmap_threshold,
                    args.phases,
                )
            ),
            flush=True,
        )
        return
    for config in args.configs.split(","):
        parts = config.split(":")
        if len(parts) != 2 or not parts[0].isdigit() or parts[1] not in ("on", "off"):
            print(f"error: --configs: expected micro:on|off pairs, got {config!r}", file=sys.stderr)
            sys.exit(2)
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--g",
                str(args.g),
                "--tokens",
                str(args.tokens),
                "--prompt-tokens",
                str(args.prompt_tokens),
                "--mmap-threshold",
                str(args.mmap_threshold),
                "--child",
                config,
            ]
            + (["--phases"] if args.phases else []),
            check=True,
        )


if __name__ == "__main__":
    main()
