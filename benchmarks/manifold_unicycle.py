"""Unicycle reference tracking on a learned behaviour manifold (Kharitenko et al., DLF / DRGD).

Simulate 4,000 unicycle trajectories (T = 32 steps of 0.1 s) under random smooth inputs, train
a small 1-D UNet score on them (inputs and outputs together, ``(T, 4)``), and minimise the
tracking cost ``sum_k 0.01 |u_k|^2 + |y_k - r_k|^2`` of a circular-arc reference that no training
trajectory follows, by DRGD and DLF from the training trajectory with the lowest cost (the
reference's choice). The judge is the true system: the optimised inputs ``u`` are replayed on the
unicycle and the tracking cost of the outputs it really produces is compared with the best
training trajectory's. DLF at the reference's score time 0.3, DRGD at 0.3, 0.1 and 0.03;
``gamma = 2e-2``, 300 steps (the paper runs 2,500 iterations on 20,000 trajectories of length
100; sizes here fit a 2-core CPU).

Run: ``python benchmarks/manifold_unicycle.py``; writes docs/img/manifold_unicycle.png and
docs/benchmarks/manifold_unicycle.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from optiforge.blackbox.manifold import (
    ScoreModel,
    Unicycle,
    dlf,
    drgd,
    figure_reference,
    fit_score,
    tracking_cost,
    tracking_objective,
    trajectories,
)

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--length", type=int, default=32)
    ap.add_argument("--train-steps", type=int, default=3000)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--t", type=float, default=0.3, help="projector noise level (standardised units)")
    ap.add_argument("--gamma", type=float, default=2e-2)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--landing", type=float, default=1.0)
    ap.add_argument("--drgd-t", type=float, nargs="+", default=[0.3, 0.1, 0.03],
                    help="projector noise levels for DRGD (its iterated projection drifts at large t)")
    ap.add_argument("--model", default=None, help="save the trained score here, or load it if it exists")
    args = ap.parse_args()
    t0 = time.perf_counter()
    data = trajectories("unicycle", args.n, args.length, seed=0)
    ref = figure_reference(args.length)
    costs = tracking_cost(data, ref)
    best = int(np.argmin(costs))
    print(f"data {data.shape}; best training trajectory cost {costs[best]:.4f} (median {np.median(costs):.2f})",
          flush=True)

    def progress(i: int, total: int, loss: float) -> None:
        if i % max(1, total // 10) == 0:
            print(f"  train {i}/{total} loss {loss:.4f} ({time.perf_counter() - t0:.0f} s)", flush=True)

    if args.model and Path(args.model).is_file():
        model = ScoreModel.load(args.model)
    else:
        model = fit_score(torch.tensor(data, dtype=torch.float32), steps=args.train_steps, batch=256,
                          width=args.width, sigma_min=0.005, sigma_max=5.0, progress=progress)
        if args.model:
            model.save(args.model)
    train_s = time.perf_counter() - t0
    f = tracking_objective(torch.tensor(ref, dtype=torch.float32))
    proj = model.projector(args.t)
    x0 = torch.tensor(data[best][None], dtype=torch.float32)
    uni = Unicycle()
    out = {"args": vars(args), "best_training_cost": float(costs[best]), "train_s": train_s,
           "final_train_loss": float(np.mean(model.losses[-50:])), "methods": {}}
    paths = {}
    runs = [(f"dlf t={args.t}", proj, lambda p: dlf(f, p, x0, args.steps, gamma=args.gamma, landing=args.landing))]
    runs += [(f"drgd t={t}", model.projector(t), lambda p: drgd(f, p, x0, args.steps, gamma=args.gamma))
             for t in args.drgd_t]
    for name, proj, run in runs:
        res = run(proj)
        with torch.no_grad():
            x = (proj(res.x) if name.startswith("dlf") else res.x).double().numpy()[0]
        u = x[:, :2]
        y_true = uni.simulate(u[None])[0]
        true_cost = float(tracking_cost(np.concatenate([u, y_true], axis=1), ref))
        model_cost = float(tracking_cost(x, ref))
        gap = float(np.abs(x[:, 2:] - y_true).max())
        out["methods"][name] = {"model_cost": model_cost, "replayed_cost": true_cost,
                                "max_output_mismatch": gap, "curve": res.values}
        paths[name] = (x, y_true)
        print(f"{name}: cost on the learned manifold {model_cost:.4f}; replayed on the unicycle "
              f"{true_cost:.4f} (best training trajectory {costs[best]:.4f}); max |y - y_true| {gap:.3f}",
              flush=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    ax = axes[0]
    ax.plot(ref[:, 0], ref[:, 1], "k--", lw=2, label="reference")
    ax.plot(data[best][:, 2], data[best][:, 3], color="grey", label=f"best training ({costs[best]:.2f})")
    for name, (x, y_true) in paths.items():
        ax.plot(y_true[:, 0], y_true[:, 1], label=f"{name}: replayed ({out['methods'][name]['replayed_cost']:.2f})")
        ax.plot(x[:, 2], x[:, 3], ":", label=f"{name}: on the learned manifold")
    ax.set(aspect="equal", title="unicycle tracking: outputs", xlabel="x", ylabel="y")
    ax.legend(fontsize=7)
    for name in paths:
        axes[1].plot(out["methods"][name]["curve"], label=name)
    axes[1].axhline(costs[best], color="grey", ls="--", label="best training")
    axes[1].set(yscale="log", xlabel="step", ylabel="tracking cost (model)", title="objective")
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(ROOT / "docs/img/manifold_unicycle.png", dpi=120)
    for m in out["methods"].values():
        m["curve"] = [float(v) for v in m["curve"][:: max(1, len(m["curve"]) // 50)]]
    (ROOT / "docs/benchmarks/manifold_unicycle.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
