"""Quantised Adam vs quantised Muon: held-out loss vs mantissa bits (1..10, and fp32).

Weights (the model's view; fp32 master copy), gradients and optimizer states are all rounded to
M mantissa bits every step with :class:`optiforge.optim.lowprec.Quantized` (truncation by
default, the biased floating-point rounding Tang, Li and Zou analyse). The task is a
teacher-student classification: a fixed random 2-layer tanh teacher labels Gaussian inputs
(argmax of its 10 logits), and a 4-layer ReLU MLP student learns it from 100,000 examples over
``--steps`` mini-batches of 128; the score is cross-entropy on 5,000 held-out examples. Unlike
a small real data set, the student cannot memorise it within the run, so the loss stays far
from zero and differences between precisions are not swamped by memorisation noise.

Learning rates were picked in fp32 at 1,000 steps, seed 0: Adam from {1e-3, 3e-3, 1e-2}
(1e-3 best: 0.352), Muon from {0.005, 0.01, 0.02, 0.05} (0.005 best: 0.349).

Run: ``python benchmarks/optim_lowprec.py``; writes docs/img/optim_lowprec.png.
"""

from __future__ import annotations

import argparse
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from optiforge.optim import Muon  # noqa: E402
from optiforge.optim.lowprec import ROUNDINGS, Quantized  # noqa: E402

LEARNING_RATES = {"Adam": 1e-3, "Muon": 0.005}
TOLERANCE = 0.05  # "tolerates M bits": held-out loss within 5 % of the same optimizer's fp32 loss


def teacher_data(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` Gaussian inputs labelled by one fixed random teacher network."""
    torch.manual_seed(1234)  # the same teacher for every call
    teacher = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 10))
    with torch.no_grad():
        x = torch.randn(n, 32, generator=torch.Generator().manual_seed(seed))
        return x, teacher(x).argmax(1)


def train(opt_name: str, bits: int | None, steps: int, seed: int, rounding: str = "truncate",
          components: tuple[str, ...] = ("weights", "grads", "states")) -> float:
    """Train the student with one quantised optimizer; return the held-out cross-entropy.

    ``components`` names what is rounded to ``bits`` (the rest stays fp32).
    """
    x_train, y_train = teacher_data(100_000, seed=99)
    x_test, y_test = teacher_data(5_000, seed=7)
    torch.manual_seed(seed)
    model = nn.Sequential(
        nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
        nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10),
    )
    lr = LEARNING_RATES[opt_name]
    if opt_name == "Adam":
        inner = torch.optim.Adam(model.parameters(), lr=lr)
    else:
        inner = Muon(model.parameters(), lr=lr, adamw_lr=1e-3, ns_dtype=torch.float32)
    opt = Quantized(inner, **{c: bits for c in components}, rounding=rounding, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(0, len(y_train), (128,), generator=gen)
        loss = nn.functional.cross_entropy(model(x_train[idx]), y_train[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return nn.functional.cross_entropy(model(x_test), y_test).item()


def fewest_tolerated_bits(losses: dict[int | None, float]) -> int | None:
    """Smallest M such that M and every larger M stay within TOLERANCE of the fp32 loss."""
    limit = (1 + TOLERANCE) * losses[None]
    fewest = None
    for bits in range(10, 0, -1):
        if losses[bits] > limit:
            break
        fewest = bits
    return fewest


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounding", choices=ROUNDINGS, default="truncate",
                    help="truncate: biased, as the paper models hardware; stochastic: unbiased")
    ap.add_argument("--ablation-bits", type=int, default=2,
                    help="M for the per-component ablation (one component quantised at a time)")
    ap.add_argument("--png", default="docs/img/optim_lowprec.png")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    settings: list[int | None] = list(range(1, 11)) + [None]
    res: dict[str, dict[int | None, float]] = {}
    for name in LEARNING_RATES:
        res[name] = {}
        for bits in settings:
            t0 = time.perf_counter()
            vals = [train(name, bits, args.steps, s, args.rounding) for s in range(args.seeds)]
            res[name][bits] = sum(vals) / len(vals)
            print(f"  {name} M={bits if bits is not None else 'fp32'}: {res[name][bits]:.4f} "
                  f"({', '.join(f'{v:.4f}' for v in vals)}; {time.perf_counter() - t0:.0f} s)", flush=True)
    print("\n| optimizer | " + " | ".join("fp32" if b is None else f"M={b}" for b in settings) + " |")
    print("|---|" + "---|" * len(settings))
    for name in res:
        print(f"| {name} | " + " | ".join(f"{res[name][b]:.3f}" for b in settings) + " |")
    fewest = {name: fewest_tolerated_bits(res[name]) for name in res}
    print(f"\nFewest mantissa bits within {TOLERANCE:.0%} of fp32 (and every M above): "
          f"Adam {fewest['Adam']}, Muon {fewest['Muon']} "
          f"(goal, Muon tolerates fewer bits: {fewest['Muon'] is not None and (fewest['Adam'] is None or fewest['Muon'] < fewest['Adam'])})")
    m = args.ablation_bits
    print(f"\nPer-component ablation at M={m} (only that component quantised; mean of {args.seeds} seeds)\n")
    print("| optimizer | fp32 | weights only | gradients only | states only | all three |\n|---|---|---|---|---|---|")
    for name in res:
        parts = [sum(train(name, m, args.steps, s, args.rounding, (c,)) for s in range(args.seeds)) / args.seeds
                 for c in ("weights", "grads", "states")]
        print(f"| {name} | {res[name][None]:.3f} | " + " | ".join(f"{v:.3f}" for v in parts)
              + f" | {res[name][m]:.3f} |", flush=True)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, name in enumerate(res):
        ax.plot(range(1, 11), [res[name][b] for b in range(1, 11)], marker="o", color=f"C{i}",
                label=f"{name} (quantised)")
        ax.axhline(res[name][None], ls="--", lw=0.8, color=f"C{i}", label=f"{name} fp32")
    ax.set_title(f"teacher-student MLP, {args.rounding} rounding, mean of {args.seeds} seed(s)")
    ax.set_xlabel("mantissa bits M (weights, gradients, optimizer states)")
    ax.set_ylabel(f"held-out cross-entropy after {args.steps} steps")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)


if __name__ == "__main__":
    main()
