"""Bi-LoRA vs LoRA vs LoRA-SAM: fine-tuning a small pretrained model, held-out loss under a shift.

Run: ``python benchmarks/optim_bilora.py [--steps 300 --seeds 3]``. The char-level transformer of
``optim_charlm.py`` is pretrained (AdamW) on the stdlib's Python source, then fine-tuned with
peft LoRA adapters (r=8 on every attention and MLP matrix) on a small slice of English
documentation (``pydoc_data/topics.py``). Evaluation: a held-out slice of the same
documentation (in distribution) and IDLE's English change logs and README (a shifted
distribution). Every method takes the same number of steps on the same batches:

* LoRA: AdamW on the adapter;
* LoRA-SAM: SAM (Foret et al.) on the adapter's parameters, two forward/backward passes;
* Bi-LoRA (:class:`optiforge.optim.BiLoRA`, the auxiliary adapter held by peft), with global,
  layer-wise or no clipping of the auxiliary perturbation.

Each method's radius ``rho`` is chosen on the in-distribution held-out loss (a small grid). A
second table measures the CPU time per step of the three methods on random models of growing
width (the adapter's share of the work shrinks as ``d`` grows). Prints markdown tables and
writes docs/img/optim_bilora.png.
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
from optim_charlm import CharLM, batches, load_corpus  # noqa: E402
from peft import LoraConfig, get_peft_model  # noqa: E402

from optiforge.agents.evolution.grpo.bilora import (  # noqa: E402
    AUX_ADAPTER,
    adapter_factors,
    add_auxiliary_adapter,
)
from optiforge.optim import BiLoRA  # noqa: E402

CTX = 64
TARGETS = ["qkv", "proj", "fc", "out"]


def texts() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    root = Path(sysconfig.get_paths()["stdlib"])
    docs = (root / "pydoc_data" / "topics.py").read_bytes()
    shifted = b"".join((root / "idlelib" / f).read_bytes() for f in ("NEWS2x.txt", "README.txt", "HISTORY.txt"))

    def t(b: bytes) -> torch.Tensor:
        return torch.frombuffer(bytearray(b), dtype=torch.uint8).long()

    return t(docs[20_000:52_000]), t(docs[400_000:460_000]), t(shifted)


def pretrain(steps: int, width: int) -> dict:
    train, _ = load_corpus()
    torch.manual_seed(0)
    model = CharLM(d=width, layers=2)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95))
    for x, y in batches(train, steps, 32, CTX, seed=7, device="cpu"):
        opt.zero_grad()
        F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
        opt.step()
    return {k: v.clone() for k, v in model.state_dict().items()}


@torch.no_grad()
def loss_on(model, data: torch.Tensor, n: int = 16) -> float:
    model.eval()
    out = [F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item()
           for x, y in batches(data, n, 32, CTX, seed=4321, device="cpu")]
    model.train()
    return sum(out) / len(out)


def lora_model(base: dict, width: int, seed: int):
    model = CharLM(d=width, layers=2)
    model.load_state_dict(base)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=TARGETS))


def finetune(method: str, rho: float, base: dict | None, width: int, data, steps: int, lr: float, seed: int,
             evaluate: bool = True):
    train, held_in, held_out = data
    if base is None:  # cost measurement only: a random model of this width
        torch.manual_seed(seed)
        base = CharLM(d=width, layers=2).state_dict()
    model = lora_model(base, width, seed)
    primary = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(primary, lr=lr, weight_decay=0.0)
    if method.startswith("Bi-LoRA"):
        add_auxiliary_adapter(model, "default", seed=seed + 1000)
        clip = {"Bi-LoRA": "global", "Bi-LoRA (layer-wise clip)": "layer", "Bi-LoRA (no clip)": "none"}[method]
        opt = BiLoRA(opt, adapter_factors(model, AUX_ADAPTER), aux_lr=lr, rho=rho, clip=clip)
        model.base_model.set_adapter(["default", AUX_ADAPTER])   # both in the training forward
    seconds = []
    for x, y in batches(train, steps, 16, CTX, seed=seed, device="cpu"):
        c0 = time.process_time()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        if method == "LoRA-SAM":
            grads = [p.grad.clone() for p in primary]
            norm = torch.sqrt(sum((g * g).sum() for g in grads)) + 1e-12
            eps = [rho * g / norm for g in grads]
            with torch.no_grad():
                for p, e in zip(primary, eps, strict=True):
                    p.add_(e)
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
            with torch.no_grad():
                for p, e in zip(primary, eps, strict=True):
                    p.sub_(e)
        opt.step()
        seconds.append(time.process_time() - c0)
    if method.startswith("Bi-LoRA"):
        model.base_model.set_adapter("default")   # the auxiliary is dropped for evaluation
    if not evaluate:
        return {"step_s": sorted(seconds[2:])[len(seconds[2:]) // 2]}
    return {"train": loss_on(model, train), "in": loss_on(model, held_in), "shifted": loss_on(model, held_out),
            "step_s": sorted(seconds)[len(seconds) // 2]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--pretrain", type=int, default=600)
    ap.add_argument("--width", type=int, default=96)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--sam-rhos", default="0.02,0.05,0.1")
    ap.add_argument("--bilora-rhos", default="0.05,0.1,0.2")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cost-widths", default="96,256,512", help="model widths of the cost-per-step table")
    ap.add_argument("--only", default="", help="comma-separated method-name prefixes to run (default: all)")
    ap.add_argument("--png", default="docs/img/optim_bilora.png")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    data = texts()
    t0 = time.perf_counter()
    base = pretrain(args.pretrain, args.width)
    print(f"pretrained d={args.width} on Python source in {time.perf_counter() - t0:.0f} s; fine-tune set "
          f"{len(data[0])} bytes of English documentation, {args.steps} steps of 16x{CTX}\n", flush=True)
    frozen = lora_model(base, args.width, 0)
    print(f"pretrained model, no fine-tuning: held-in {loss_on(frozen, data[1]):.4f}, "
          f"shifted {loss_on(frozen, data[2]):.4f}\n")
    plan = [("LoRA", 0.0)]
    plan += [("LoRA-SAM", float(r)) for r in args.sam_rhos.split(",")]
    for m in ("Bi-LoRA", "Bi-LoRA (layer-wise clip)", "Bi-LoRA (no clip)"):
        rhos = args.bilora_rhos.split(",") if m != "Bi-LoRA (no clip)" else ["1"]
        plan += [(m, float(r)) for r in rhos]
    if args.only:
        plan = [p for p in plan if p[0].startswith(tuple(args.only.split(",")))]
    res: dict[tuple[str, float], list[dict]] = {}
    for method, rho in plan:
        res[(method, rho)] = [finetune(method, rho, base, args.width, data, args.steps, args.lr, s)
                              for s in range(args.seeds)]
        r = res[(method, rho)]
        print(f"  {method} rho={rho:g}: train {mean(r, 'train'):.4f} held-in {mean(r, 'in'):.4f} "
              f"shifted {mean(r, 'shifted'):.4f}  {mean(r, 'step_s') * 1000:.0f} ms/step", flush=True)

    chosen = {}
    for method in dict.fromkeys(m for m, _ in plan):
        runs = {k: v for k, v in res.items() if k[0] == method}
        chosen[method] = min(runs, key=lambda k: mean(runs[k], "in"))
    lora_cost = mean(res[chosen["LoRA"]], "step_s") if "LoRA" in chosen else math.nan
    print("\n| method (rho chosen on held-in) | train loss | held-in loss | shifted held-out loss (per seed) |"
          " time per step | vs LoRA |\n|---|---|---|---|---|---|")
    for method, key in chosen.items():
        r = res[key]
        per_seed = ", ".join(f"{x['shifted']:.4f}" for x in r)
        print(f"| {method} (rho={key[1]:g}) | {mean(r, 'train'):.4f} | {mean(r, 'in'):.4f} | "
              f"{mean(r, 'shifted'):.4f} ({per_seed}) | {mean(r, 'step_s') * 1000:.0f} ms | "
              + (f"{mean(r, 'step_s') / lora_cost:.2f}x |" if math.isfinite(lora_cost) else "— |"))
    print("\n| width d (LoRA r=8) | LoRA | LoRA-SAM | Bi-LoRA | SAM / LoRA | Bi-LoRA / LoRA |\n|---|---|---|---|---|---|")
    for w in (int(v) for v in args.cost_widths.split(",") if v):
        cost = {m: finetune(m, 0.05, None, w, data, 12, args.lr, 0, evaluate=False)["step_s"]
                for m in ("LoRA", "LoRA-SAM", "Bi-LoRA")}
        print(f"| {w} | {cost['LoRA'] * 1000:.0f} ms | {cost['LoRA-SAM'] * 1000:.0f} ms | "
              f"{cost['Bi-LoRA'] * 1000:.0f} ms | {cost['LoRA-SAM'] / cost['LoRA']:.2f}x | "
              f"{cost['Bi-LoRA'] / cost['LoRA']:.2f}x |", flush=True)
    print("\n| run | train | held-in | shifted |\n|---|---|---|---|")
    for (method, rho), r in res.items():
        print(f"| {method} rho={rho:g} | {mean(r, 'train'):.4f} | {mean(r, 'in'):.4f} | {mean(r, 'shifted'):.4f} |")

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.2))
    names = list(chosen)
    for ax, key, title in ((a1, "shifted", "shifted held-out loss (lower is better)"),
                           (a2, "step_s", "CPU seconds per step")):
        vals = [[x[key] for x in res[chosen[m]]] for m in names]
        ax.bar(range(len(names)), [sum(v) / len(v) for v in vals], color="tab:blue", alpha=0.6)
        for i, v in enumerate(vals):
            ax.plot([i] * len(v), v, "k.", ms=5)
        ax.set_xticks(range(len(names)), [n.replace(" (", "\n(") for n in names], fontsize=8)
        ax.set_title(title)
        ax.grid(alpha=0.3, axis="y")
        if key == "shifted":
            lo = min(min(v) for v in vals)
            hi = max(max(v) for v in vals)
            ax.set_ylim(lo - 0.5 * (hi - lo) - 1e-3, hi + 0.5 * (hi - lo) + 1e-3)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)


def mean(runs: list[dict], key: str) -> float:
    vals = [r[key] for r in runs]
    return sum(vals) / len(vals) if all(math.isfinite(v) for v in vals) else math.nan


if __name__ == "__main__":
    main()
