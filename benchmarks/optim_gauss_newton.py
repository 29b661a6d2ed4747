"""Full and layerwise Gauss-Newton vs Muon vs AdamW in the large-batch regime: outer steps to a target loss.

Run: ``python benchmarks/optim_gauss_newton.py [--steps 60]``. The char-level transformer and
the stdlib corpus of ``optim_charlm.py``. As in the paper, every run starts from one AdamW
warm-up checkpoint; then each method gets the same data per outer step: ``N`` mini-batches of
``b`` sequences (global batch ``N * b``). Muon and AdamW take one step on the whole global
batch; Gauss-Newton takes ``N`` inner Muon steps on the linearised model's quadratic, one per
mini-batch, then a line search over ``alpha in {1, 2^-1/2, 2^-1, 2^-3/2}`` on two extra
mini-batches. A reference run takes GN's inner loop on the true loss (``N`` Muon steps of
``b`` sequences per outer step) to separate the Gauss-Newton model from the step count. Prints
markdown tables (steps to the target validation loss, CPU seconds per
outer step) and writes docs/img/optim_gauss_newton.png.
"""

from __future__ import annotations

import argparse
import copy
import math
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from optim_charlm import CharLM, batches, evaluate, load_corpus  # noqa: E402

from optiforge.optim import GaussNewton, Muon, muon_param_groups  # noqa: E402

CTX = 64


def split(model):
    return muon_param_groups(model, exclude=("embed", "head", "pos"))


def muon_factory(model, lr: float, adamw_lr: float):
    hidden_ids = {id(p) for p in split(model)[0]}
    names = {n for n, p in model.named_parameters() if id(p) in hidden_ids}

    def make(named):
        mats = [t for n, t in named if n in names]
        rest = [t for n, t in named if n not in names]
        return Muon(mats, lr=lr, adamw_params=rest, adamw_lr=adamw_lr)

    return make


def layer_groups(model) -> list[list[str]]:
    """The paper's layers: the embedding (with positions), each block, the head (with the final norm)."""
    names = [n for n, _ in model.named_parameters()]
    groups = [[n for n in names if n.startswith(("embed", "pos"))]]
    groups += [[n for n in names if n.startswith(f"blocks.{i}.")] for i in range(len(model.blocks))]
    groups.append([n for n in names if n.startswith(("ln.", "head"))])
    return groups


def warm_up(train, steps: int, device: str) -> dict:
    torch.manual_seed(0)
    model = CharLM(d=64, layers=2).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95))
    for x, y in batches(train, steps, 16, CTX, seed=10_000, device=device):
        opt.zero_grad()
        F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
        opt.step()
    return copy.deepcopy(model.state_dict())


def run(name: str, kind: str, lr: float, start: dict, train, val, steps: int, n_inner: int, bsz: int,
        device: str, eval_every: int):
    model = CharLM(d=64, layers=2).to(device)
    model.load_state_dict(start)
    data = batches(train, steps * (n_inner + 2), bsz, CTX, seed=1, device=device)
    if kind == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95))
    elif kind in ("muon", "muon_small"):
        hidden, rest = split(model)
        opt = Muon(hidden, lr=lr, adamw_params=rest, adamw_lr=3e-3)
    else:
        gn = GaussNewton(model, variant=kind, inner_optimizer=muon_factory(model, lr, 3e-3), line_search=4,
                         layers=layer_groups(model))
    curve, seconds, alphas = [(0, evaluate(model, val, CTX, device))], [], []
    for t in range(1, steps + 1):
        chunk = [next(data) for _ in range(n_inner + 2)]  # same data for every method
        c0 = time.process_time()
        if kind in ("adamw", "muon"):
            x = torch.cat([b[0] for b in chunk[:n_inner]])
            y = torch.cat([b[1] for b in chunk[:n_inner]])
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
            opt.step()
        elif kind == "muon_small":  # GN's inner loop on the true loss: N Muon steps of b sequences
            for x, y in chunk[:n_inner]:
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
                opt.step()
        else:
            stats = gn.step(chunk[:n_inner], line_search_batches=chunk[n_inner:])
            alphas.append(stats["alpha"])
        seconds.append(time.process_time() - c0)
        if t % eval_every == 0 or t == steps:
            curve.append((t, evaluate(model, val, CTX, device)))
            if not math.isfinite(curve[-1][1]):
                break
    med = sorted(seconds)[len(seconds) // 2]
    print(f"  {name}: val {curve[-1][1]:.4f} after {curve[-1][0]} outer steps, {med:.2f} CPU s/step"
          + (f", mean alpha {sum(alphas) / len(alphas):.2f}" if alphas else ""), flush=True)
    return curve, med


def steps_to(curve, target: float) -> float:
    """First outer step whose validation loss is <= target, linearly interpolated between evaluations."""
    for (t0, l0), (t1, l1) in zip(curve, curve[1:], strict=False):
        if l1 <= target:
            return t1 if l0 == l1 else t0 + (t1 - t0) * (l0 - target) / (l0 - l1)
    return math.nan


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60, help="outer steps per method")
    ap.add_argument("--warmup", type=int, default=300, help="AdamW warm-up steps (batch 16) before every run")
    ap.add_argument("--inner", type=int, default=8, help="N: inner steps (mini-batches) per outer step")
    ap.add_argument("--batch", type=int, default=16, help="b: sequences per mini-batch (global batch N*b)")
    ap.add_argument("--eval-every", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--adamw-lrs", default="1e-3,3e-3,6e-3")
    ap.add_argument("--muon-lrs", default="0.02,0.05")
    ap.add_argument("--gn-lrs", default="0.02", help="inner Muon lr of both GN variants")
    ap.add_argument("--prox", action="store_true", help="also run the prox-linear ablation")
    ap.add_argument("--only", default="", help="comma-separated run-name prefixes to run (default: all)")
    ap.add_argument("--png", default="docs/img/optim_gauss_newton.png")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    train, val = load_corpus()
    start = warm_up(train, args.warmup, device)
    print(f"AdamW warm-up: {args.warmup} steps at batch 16; then {args.steps} outer steps at global batch "
          f"{args.inner} x {args.batch} sequences of {CTX} bytes\n")
    plan = [(f"AdamW lr={lr}", "adamw", float(lr)) for lr in args.adamw_lrs.split(",")]
    plan += [(f"Muon lr={lr}", "muon", float(lr)) for lr in args.muon_lrs.split(",")]
    plan += [(f"Muon {args.inner} small steps lr={lr}", "muon_small", float(lr)) for lr in args.muon_lrs.split(",")]
    for lr in args.gn_lrs.split(","):
        plan += [(f"GN inner lr={lr}", "full", float(lr)), (f"layerwise GN inner lr={lr}", "layerwise", float(lr))]
        if args.prox:
            plan.append((f"GN prox-linear inner lr={lr}", "prox_linear", float(lr)))
    if args.only:
        plan = [p for p in plan if p[0].startswith(tuple(args.only.split(",")))]
    res = {name: run(name, kind, lr, start, train, val, args.steps, args.inner, args.batch, device, args.eval_every)
           for name, kind, lr in plan}

    def best(prefix: str) -> str | None:
        cands = {k: v[0][-1][1] for k, v in res.items() if k.startswith(prefix) and math.isfinite(v[0][-1][1])}
        return min(cands, key=cands.get) if cands else None

    chosen = {"AdamW": best("AdamW"), "Muon": best("Muon lr"), "GN": best("GN inner"),
              "layerwise GN": best("layerwise GN"),
              f"reference: Muon, {args.inner} steps of {args.batch} per outer step": best(f"Muon {args.inner} small")}
    if args.prox:
        chosen["GN prox-linear"] = best("GN prox-linear")
    chosen = {k: v for k, v in chosen.items() if v is not None}
    if "Muon" not in chosen or "AdamW" not in chosen:
        for name, (curve, sec) in res.items():
            print(f"| {name} | {curve[-1][1]:.4f} | {sec:.2f} s/step |")
        return
    targets = {"Muon's final loss": res[chosen["Muon"]][0][-1][1],
               "AdamW's final loss": res[chosen["AdamW"]][0][-1][1]}
    print("\n| method (best of its lr grid) | final val loss | " + " | ".join(f"outer steps to {k} ({v:.3f})"
                                                                          for k, v in targets.items())
          + " | CPU s per outer step | relative cost |")
    print("|---|---|" + "---|" * len(targets) + "---|---|")
    base_cost = res[chosen["Muon"]][1]
    for label, name in chosen.items():
        curve, sec = res[name]
        cells = [f"{steps_to(curve, v):.1f}" if math.isfinite(steps_to(curve, v)) else f"> {args.steps}"
                 for v in targets.values()]
        print(f"| {label} ({name}) | {curve[-1][1]:.4f} | " + " | ".join(cells) + f" | {sec:.2f} | {sec / base_cost:.1f}x |")
    print("\n| run | final val loss |\n|---|---|")
    for name, (curve, _) in res.items():
        print(f"| {name} | {curve[-1][1]:.4f} |")

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for label, name in chosen.items():
        c = res[name][0]
        ax.plot([t for t, _ in c], [v for _, v in c], marker=".", label=f"{label} ({name})")
    ax.axhline(targets["Muon's final loss"], color="grey", ls=":", lw=1)
    ax.set_xlabel(f"outer step (each: {args.inner} x {args.batch} sequences)")
    ax.set_ylabel("validation loss (nats/byte)")
    ax.set_title("Gauss-Newton vs Muon vs AdamW from one AdamW warm-up")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)


if __name__ == "__main__":
    main()
