"""Muon (Polar Express / Jordan) vs AdamW, and ALIAS vs tuned sign-SGD vs AdamW, on a small
character-level transformer trained on the Python standard library's own source files.

Run: ``python benchmarks/optim_charlm.py [--steps 300]``. Prints markdown tables and writes
docs/img/optim_charlm.png. Data: a fixed list of stdlib modules (bytes as tokens), first 90% for
training, last 10% for validation; nothing is downloaded. Runs on CUDA when available.
"""

from __future__ import annotations

import argparse
import math
import sysconfig
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from optiforge.optim import ALIAS, Muon, muon_param_groups  # noqa: E402

STDLIB_FILES = (
    "argparse.py", "ast.py", "calendar.py", "collections/__init__.py", "csv.py", "dataclasses.py",
    "difflib.py", "enum.py", "functools.py", "inspect.py", "json/decoder.py", "json/encoder.py",
    "pathlib.py", "pprint.py", "shutil.py", "statistics.py", "string.py", "textwrap.py",
    "threading.py", "typing.py",
)


def load_corpus() -> tuple[torch.Tensor, torch.Tensor]:
    root = Path(sysconfig.get_paths()["stdlib"])
    data = b"".join((root / f).read_bytes() for f in STDLIB_FILES if (root / f).exists())
    t = torch.frombuffer(bytearray(data), dtype=torch.uint8).long()
    cut = int(0.9 * len(t))
    return t[:cut], t[cut:]


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.fc, self.out = nn.Linear(d, 4 * d, bias=False), nn.Linear(4 * d, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class CharLM(nn.Module):
    def __init__(self, vocab: int = 256, d: int = 64, layers: int = 2, heads: int = 4, ctx: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(ctx, d))
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.embed(idx) + self.pos[: idx.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


class SignSGD(torch.optim.Optimizer):
    """Plain sign descent ``x <- x - lr sign(g)`` (the grid-searched baseline)."""

    def __init__(self, params, lr: float) -> None:
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    p.add_(p.grad.sign(), alpha=-g["lr"])
        return loss


def batches(data: torch.Tensor, n: int, bsz: int, ctx: int, seed: int, device: str):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(n):
        ix = torch.randint(0, len(data) - ctx - 1, (bsz,), generator=gen)
        x = torch.stack([data[i : i + ctx] for i in ix])
        y = torch.stack([data[i + 1 : i + ctx + 1] for i in ix])
        yield x.to(device), y.to(device)


@torch.no_grad()
def evaluate(model: nn.Module, val: torch.Tensor, ctx: int, device: str) -> float:
    model.eval()
    losses = [
        F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item()
        for x, y in batches(val, 8, 64, ctx, seed=1234, device=device)
    ]
    model.train()
    return sum(losses) / len(losses)


def run(name: str, make_opt, train: torch.Tensor, val: torch.Tensor, steps: int, device: str, seed: int = 0,
        width: int = 64, layers: int = 2):
    torch.manual_seed(seed)
    model = CharLM(d=width, layers=layers).to(device)
    opt = make_opt(model)
    curve = []
    t0 = time.perf_counter()
    for i, (x, y) in enumerate(batches(train, steps, 16, 64, seed=seed, device=device), 1):
        def closure(x=x, y=y):
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
            loss.backward()
            return loss

        loss = opt.step(closure)  # a closure: ALIAS with lower_bound reads f(x_0) from it
        if not math.isfinite(loss.item()):
            break
        if i % max(1, steps // 5) == 0 or i == steps:
            curve.append((i, evaluate(model, val, 64, device)))
    final = curve[-1][1] if curve and len(curve) and curve[-1][0] == steps else float("nan")
    print(f"  {name} (seed {seed}): val loss {final:.4f} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return final, curve


def muon(ns: str, lr: float):
    def make(model):
        hidden, rest = muon_param_groups(model, exclude=("embed", "head", "pos"))
        return Muon(hidden, lr=lr, ns=ns, adamw_params=rest, adamw_lr=3e-3)
    return make


def best_of_grid(res: dict[str, tuple], prefix: str) -> tuple[str, float]:
    """The run named ``prefix ...`` with the lowest finite mean loss (a grid search's winner)."""
    finite = {k: v[0] for k, v in res.items() if k.startswith(prefix) and math.isfinite(v[0])}
    best = min(finite, key=finite.get)
    return best, finite[best]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=1, help="seeds (model init + batch order) averaged per optimizer")
    ap.add_argument("--only", choices=("all", "muon", "alias"), default="all", help="which comparison to run")
    ap.add_argument("--adamw-lrs", default="1e-3,3e-3,6e-3,1e-2,2e-2", help="AdamW learning-rate grid")
    ap.add_argument("--muon-lrs", default="0.02", help="Muon learning rates (each run with both iterations)")
    ap.add_argument("--png", default=None, help="plot path (default docs/img/optim_charlm[_<only>].png)")
    ap.add_argument("--width", type=int, default=64, help="model width d")
    ap.add_argument("--layers", type=int, default=2, help="transformer blocks")
    ap.add_argument("--sign-lrs", default="3e-4,1e-3,3e-3,1e-2,3e-2", help="sign-SGD learning-rate grid")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    train, val = load_corpus()
    print(f"corpus: {len(train)} train / {len(val)} validation bytes; {args.steps} steps, batch 16x64, "
          f"{args.seeds} seed(s)\n")
    res: dict[str, tuple[float, list]] = {}
    plan = {
        "ALIAS (standard)": lambda m: ALIAS(m.parameters()),
        "ALIAS (momentum)": lambda m: ALIAS(m.parameters(), variant="momentum"),
        "ALIAS (memory_efficient)": lambda m: ALIAS(m.parameters(), variant="memory_efficient"),
        "ALIAS (standard, lower_bound=0)": lambda m: ALIAS(m.parameters(), lower_bound=0.0),
        "ALIAS (momentum, lower_bound=0)": lambda m: ALIAS(m.parameters(), variant="momentum", lower_bound=0.0),
        "ALIAS (memory_efficient, lower_bound=0)": lambda m: ALIAS(m.parameters(), variant="memory_efficient",
                                                                  lower_bound=0.0),
    }
    for lr in (float(v) for v in args.adamw_lrs.split(",")):
        plan[f"AdamW lr={lr:g}"] = lambda m, lr=lr: torch.optim.AdamW(m.parameters(), lr=lr, betas=(0.9, 0.95))
    muon_lrs = [float(v) for v in args.muon_lrs.split(",")]
    for lr in muon_lrs:
        for ns in ("polar_express", "jordan"):
            plan[f"Muon ({ns}) lr={lr:g}"] = muon(ns, lr)
    for lr in (float(v) for v in args.sign_lrs.split(",")):
        plan[f"sign-SGD lr={lr:g}"] = lambda m, lr=lr: SignSGD(m.parameters(), lr)
    wanted = {"muon": ("AdamW", "Muon"), "alias": ("AdamW", "ALIAS", "sign-SGD")}.get(args.only)
    if wanted:
        plan = {k: v for k, v in plan.items() if k.startswith(wanted)}
    for name, make in plan.items():
        runs = [run(name, make, train, val, args.steps, device, seed, args.width, args.layers)
                for seed in range(args.seeds)]
        # Seeds share evaluation steps, so curves average point-wise; a diverged seed makes the mean nan.
        curve = [(c[0][0], sum(r[1][i][1] for r in runs) / len(runs)) for i, c in enumerate(zip(*(r[1] for r in runs), strict=False))]
        res[name] = (sum(r[0] for r in runs) / len(runs), curve, [r[0] for r in runs])

    best_adamw, adamw = best_of_grid(res, "AdamW")
    print("\n| optimizer | validation loss (mean) | per seed |\n|---|---|---|")
    for name, (final, _, per_seed) in res.items():
        print(f"| {name} | {final:.4f} | {', '.join(f'{v:.4f}' for v in per_seed)} |")
    panels = []
    if any(k.startswith("Muon") for k in res):
        for lr in muon_lrs:
            pe, jo = res[f"Muon (polar_express) lr={lr:g}"][0], res[f"Muon (jordan) lr={lr:g}"][0]
            print(f"lr={lr:g}: Polar Express {pe:.4f} vs Jordan {jo:.4f} ({100 * (pe - jo) / jo:+.2f}%)")
        best = {ns: min((res[f"Muon ({ns}) lr={lr:g}"][0], lr) for lr in muon_lrs) for ns in ("polar_express", "jordan")}
        (pe, pe_lr), (jo, jo_lr) = best["polar_express"], best["jordan"]
        print(f"\nMuon goal, each at its best lr (Polar Express {pe:.4f} @ {pe_lr:g} <= Jordan {jo:.4f} @ {jo_lr:g} "
              f"< {best_adamw} {adamw:.4f}): {pe <= jo < adamw}")
        panels.append(("Muon (each at its best lr) vs AdamW",
                       [best_adamw, f"Muon (polar_express) lr={pe_lr:g}", f"Muon (jordan) lr={jo_lr:g}"]))
    if "ALIAS (standard)" in res:
        best_sign_name, best_sign = best_of_grid(res, "sign-SGD")
        print()
        for v in [k[len("ALIAS ("):-1] for k in res if k.startswith("ALIAS")]:
            a = res[f"ALIAS ({v})"][0]
            print(f"ALIAS ({v}) vs tuned {best_sign_name} ({best_sign:.4f}): {100 * (a - best_sign) / best_sign:+.2f}% "
                  f"(goal within 5%: {a <= 1.05 * best_sign})")
        panels.append(("ALIAS (no lr) vs grid-searched sign-SGD",
                       [k for k in res if k.startswith("ALIAS")] + [best_sign_name,
                        best_adamw]))

    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.5), squeeze=False)
    for ax, (title, keys) in zip(axes[0], panels, strict=True):
        for k in keys:
            c = res[k][1]
            ax.plot([s for s, _ in c], [v for _, v in c], marker="o", label=k)
        ax.set_xlabel("step")
        ax.set_ylabel(f"validation loss (nats/byte, mean of {args.seeds} seed(s))")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    suffix = "" if args.only == "all" else f"_{args.only}"
    fig.savefig(args.png or f"docs/img/optim_charlm{suffix}.png", dpi=110)


if __name__ == "__main__":
    main()
