"""Quantised Adam vs quantised Muon: final loss vs mantissa bits (1..10, and fp32).

Weights, gradients and optimizer states are all rounded (stochastically) to M mantissa bits each
step with :class:`optiforge.optim.lowprec.Quantized`, on a 4-layer MLP classifying scikit-learn's
bundled 8x8 digits (no download). Run: ``python benchmarks/optim_lowprec.py``; writes
docs/img/optim_lowprec.png.
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from torch import nn  # noqa: E402

from optiforge.optim import Muon  # noqa: E402
from optiforge.optim.lowprec import Quantized  # noqa: E402


def train(opt_name: str, bits: int | None, steps: int, seed: int, rounding: str = "stochastic") -> float:
    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    y = torch.tensor(digits.target)
    torch.manual_seed(seed)
    model = nn.Sequential(
        nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
        nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10),
    )
    if opt_name == "Adam":
        inner = torch.optim.Adam(model.parameters(), lr=1e-3)
    else:
        inner = Muon(model.parameters(), lr=0.02, adamw_lr=1e-3, ns_dtype=torch.float32)
    opt = Quantized(inner, weights=bits, grads=bits, states=bits, rounding=rounding, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(0, len(y), (128,), generator=gen)
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return nn.functional.cross_entropy(model(x), y).item()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounding", choices=("stochastic", "nearest"), default="stochastic",
                    help="stochastic rounding is unbiased; round-to-nearest lets small updates stagnate")
    ap.add_argument("--png", default="docs/img/optim_lowprec.png")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    settings: list[int | None] = list(range(1, 11)) + [None]
    res = {}
    for name in ("Adam", "Muon"):
        for bits in settings:
            vals = [train(name, bits, args.steps, s, args.rounding) for s in range(args.seeds)]
            res[(name, bits)] = sum(vals) / len(vals)
            print(f"  {name} M={bits if bits is not None else 'fp32'}: {res[(name, bits)]:.4f}", flush=True)
    print("\n| mantissa bits | " + " | ".join("fp32" if b is None else str(b) for b in settings) + " |")
    print("|---|" + "---|" * len(settings))
    for name in ("Adam", "Muon"):
        print(f"| {name} | " + " | ".join(f"{res[(name, b)]:.3f}" for b in settings) + " |")

    def min_bits(name: str) -> int | None:
        # Fewest bits whose loss stays within 2x of (fp32 loss + 0.05).
        ref = res[(name, None)]
        ok = [b for b in range(1, 11) if res[(name, b)] <= 2 * ref + 0.05]
        return min(ok) if ok else None

    ma, mm = min_bits("Adam"), min_bits("Muon")
    print(f"\nFewest mantissa bits within 2x(fp32 loss)+0.05: Adam {ma}, Muon {mm} "
          f"(goal: Muon tolerates fewer bits: {mm is not None and (ma is None or mm < ma)})")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in ("Adam", "Muon"):
        ax.plot(range(1, 11), [res[(name, b)] for b in range(1, 11)], marker="o", label=f"{name} (quantised)")
        ax.axhline(res[(name, None)], ls="--", lw=0.8, color="C0" if name == "Adam" else "C1",
                   label=f"{name} fp32")
    ax.set_yscale("log")
    ax.set_title(f"digits MLP, {args.rounding} rounding, mean of {args.seeds} seed(s)")
    ax.set_xlabel("mantissa bits M (weights, gradients, states)")
    ax.set_ylabel(f"final training loss after {args.steps} steps")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)


if __name__ == "__main__":
    main()
