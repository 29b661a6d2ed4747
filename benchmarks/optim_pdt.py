"""PDT (DMD weight prediction) around SGD and AdamW: time to reach the baseline's best loss.

Run: ``python benchmarks/optim_pdt.py [--epochs 40 --seeds 3]``. Data: scikit-learn's bundled
digits (1797 8x8 images, 10 classes; 80 % train, 20 % test, standardised), nothing downloaded.
Models: an MLP (64-128-128-10, ReLU) and a small CNN (two 3x3 convolutions, max-pool, linear).
For each (model, optimizer, seed) the baseline trains ``--epochs`` epochs; PDT wraps the same
optimizer (same init, same batch order) and the clock (training steps plus PDT's own overhead;
the per-epoch loss evaluation is not timed) stops when its training loss first reaches the
baseline's best. The clock is the process's CPU time (the development machine is shared; with
one thread it equals wall time on an idle machine); epochs to the loss are load-independent. Prints markdown tables and writes docs/img/optim_pdt.png.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from torch import nn  # noqa: E402

from optiforge.optim import PDT  # noqa: E402


def load() -> tuple[torch.Tensor, ...]:
    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x, dtype=torch.float32)
    y = torch.tensor(y)
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    x, y = x[perm], y[perm]
    cut = int(0.8 * len(x))
    mean, std = x[:cut].mean(0), x[:cut].std(0) + 1e-3
    x = (x - mean) / std
    return x[:cut], y[:cut], x[cut:], y[cut:]


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))


class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(1, 16, 3, padding=1), nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.c1(x.view(-1, 1, 8, 8)))
        h = F.max_pool2d(F.relu(self.c2(h)), 2)
        return self.fc(h.flatten(1))


MODELS = {"MLP": mlp, "CNN": CNN}
OPTIMIZERS = {
    "SGD": lambda p: torch.optim.SGD(p, lr=0.05),
    "AdamW": lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=1e-4),
}


@torch.no_grad()
def full_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    return float(F.cross_entropy(model(x), y))


def train(model_name: str, opt_name: str, seed: int, epochs: int, data, pdt: dict | None, batch: int = 64):
    """Per-epoch (cumulative timed seconds, train loss, test accuracy); PDT stats."""
    xtr, ytr, xte, yte = data
    torch.manual_seed(seed)
    model = MODELS[model_name]()
    base = OPTIMIZERS[opt_name](model.parameters())
    opt = PDT(base, **pdt) if pdt is not None else base
    gen = torch.Generator().manual_seed(seed)
    clock, wall, curve = 0.0, 0.0, []
    for _ in range(epochs):
        perm = torch.randperm(len(xtr), generator=gen)
        c0, t0 = time.process_time(), time.perf_counter()
        for i in range(0, len(xtr), batch):
            idx = perm[i : i + batch]
            opt.zero_grad()
            F.cross_entropy(model(xtr[idx]), ytr[idx]).backward()
            opt.step()
        if pdt is not None:
            opt.epoch_end()
        clock += time.process_time() - c0
        wall += time.perf_counter() - t0
        with torch.no_grad():
            acc = float((model(xte).argmax(1) == yte).float().mean())
        curve.append((clock, full_loss(model, xtr, ytr), acc, wall))
    return curve, (opt.history if pdt is not None else [])


def time_to(curve, target: float) -> tuple[float, int]:
    for k, (t, loss, _, _) in enumerate(curve, 1):
        if loss <= target:
            return t, k
    return math.nan, 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--horizon", type=int, default=5)
    ap.add_argument("--png", default="docs/img/optim_pdt.png")
    ap.add_argument("--json", default="docs/benchmarks/optim_pdt.json", help="raw results ('' to skip)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    data = load()
    variants = {
        "PDT (code mask)": dict(burn_in=5, window=5, horizon=args.horizon, mask="code"),
        "PDT (paper mask)": dict(burn_in=5, window=5, horizon=args.horizon, mask="paper"),
        "PDT (no mask, ablation)": dict(burn_in=5, window=5, horizon=args.horizon, mask="none"),
    }
    rows, curves = [], {}
    for model_name in MODELS:
        for opt_name in OPTIMIZERS:
            for seed in range(args.seeds):
                base, _ = train(model_name, opt_name, seed, args.epochs, data, None)
                best = min(c[1] for c in base)
                tb, eb = time_to(base, best)
                curves[(model_name, opt_name, "baseline", seed)] = base
                for name, kw in variants.items():
                    # 1.5x the epochs: a variant that is slower still gets to finish
                    curve, hist = train(model_name, opt_name, seed, int(1.5 * args.epochs), data, kw)
                    tp, ep = time_to(curve, best)
                    # DMD seconds (wall) up to the epoch the target was reached, as a share of that wall time
                    overhead = sum(h["seconds"] for h in hist if not ep or h["epoch"] <= ep)
                    share = overhead / curve[ep - 1][3] if ep else math.nan
                    accepted = sum(h["accepted"] for h in hist) / max(1, len(hist))
                    rows.append((model_name, opt_name, name, seed, tb, eb, tp, ep, share, accepted,
                                 base[-1][2], curve[min(len(curve), args.epochs) - 1][2]))
                    curves[(model_name, opt_name, name, seed)] = curve
                    print(f"  {model_name}/{opt_name}/{name} seed {seed}: baseline {tb:.2f}s ({eb} ep) -> "
                          f"{tp:.2f}s ({ep} ep), DMD overhead {100 * share:.1f} %, accepted {accepted:.1%}",
                          flush=True)

    print("\n| model | optimizer | variant | time-to-loss reduction (CPU s, mean over seeds) | epoch reduction |"
          " epochs to loss: baseline → PDT | DMD share of PDT's time | accepted coordinates |"
          " test acc. at epoch E: baseline → PDT |")
    print("|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for model_name in MODELS:
        for opt_name in OPTIMIZERS:
            for name in variants:
                rs = [r for r in rows if r[:3] == (model_name, opt_name, name)]
                red = [1 - r[6] / r[4] for r in rs]
                reached = [x for x in red if math.isfinite(x)]
                mean = sum(reached) / len(reached) if reached else math.nan
                summary[(model_name, opt_name, name)] = mean
                eb = sum(r[5] for r in rs) / len(rs)
                ep = ", ".join(str(r[7]) if r[7] else "—" for r in rs)
                ered = [1 - r[7] / r[5] for r in rs if r[7]]
                emean = f"{100 * sum(ered) / len(ered):+.1f} %" if ered else "—"
                shares = [r[8] for r in rs if math.isfinite(r[8])]
                share = f"{100 * sum(shares) / len(shares):.1f} %" if shares else "—"
                print(f"| {model_name} | {opt_name} | {name} | {100 * mean:+.1f} % ({len(reached)}/{len(rs)} reached) | "
                      f"{emean} | {eb:.0f} → {ep} | {share} | {sum(r[9] for r in rs) / len(rs):.1%} | "
                      f"{sum(r[10] for r in rs) / len(rs):.3f} → {sum(r[11] for r in rs) / len(rs):.3f} |")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "summary": {" / ".join(k): v for k, v in summary.items()},
                       "rows": rows, "curves_seed0": {" / ".join(k[:3]): v for k, v in curves.items() if k[3] == 0}},
                      f, indent=1)
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.2))
    for ax, (model_name, opt_name) in zip(axes, [(m, o) for m in MODELS for o in OPTIMIZERS], strict=True):
        for name in ["baseline", *variants]:
            c = curves[(model_name, opt_name, name, 0)]
            ax.plot([x[0] for x in c], [x[1] for x in c], label=name)
        best = min(x[1] for x in curves[(model_name, opt_name, "baseline", 0)])
        ax.axhline(best, color="grey", ls=":", lw=1)
        ax.set_yscale("log")
        base = curves[(model_name, opt_name, "baseline", 0)]
        ax.set_ylim(best / 3, 2 * base[0][1])   # the unmasked ablation diverges off the top
        ax.set_xlim(0, 1.1 * base[-1][0])
        ax.set_xlabel("training CPU time incl. PDT overhead (s)")
        ax.set_ylabel("training loss (seed 0)")
        ax.set_title(f"{model_name} / {opt_name}: "
                     f"{100 * summary[(model_name, opt_name, 'PDT (code mask)')]:+.0f} % time to loss")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.png, dpi=100)


if __name__ == "__main__":
    main()
