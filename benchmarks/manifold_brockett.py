"""Brockett's cost on SO(3) by DRGD with a learned score (Kharitenko et al., the Stiefel demo).

Train a small MLP score on 20,000 uniform rotations (9-vectors), then minimise
``f(X) = tr(X^T A X N)`` (``A`` symmetric with eigenvalues 1, 2, 4; ``N = diag(1, 2, 3)``;
minimum 11 over SO(3)) by DRGD from 64 random rotations: ``gamma = 5e-3``, 200 steps (the
reference's defaults), at several noise levels ``sigma`` of the projector. Reported: the gap to
the known minimum at the final iterates and at their nearest rotations, and the distance to
SO(3), ``|X - polar(X)|_F``, against ``sigma`` (Thm 5: ``O(sigma)`` plus the score error).

Run: ``python benchmarks/manifold_brockett.py``; writes docs/img/manifold_brockett.png and
docs/benchmarks/manifold_brockett.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from optiforge.blackbox.manifold import (
    brockett_minimum,
    brockett_objective,
    drgd,
    fit_score,
    project_so3,
    synthetic,
)

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20_000, help="training rotations")
    ap.add_argument("--train-steps", type=int, default=3000)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--sigmas", type=float, nargs="+", default=[0.025, 0.05, 0.1, 0.2],
                    help="projector noise levels, in the data's units")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--gamma", type=float, default=5e-3)
    ap.add_argument("--starts", type=int, default=64)
    args = ap.parse_args()
    torch.manual_seed(0)
    t0 = time.perf_counter()
    data = torch.tensor(synthetic("so3", args.n, seed=0), dtype=torch.float32)
    last = [0.0]

    def progress(i: int, total: int, loss: float) -> None:
        if i % max(1, total // 10) == 0:
            print(f"  train {i}/{total} loss {loss:.4f} ({time.perf_counter() - t0:.0f} s)", flush=True)
            last[0] = loss

    model = fit_score(data, steps=args.train_steps, batch=256, width=args.width, sigma_min=0.01,
                      sigma_max=3.0, progress=progress)
    train_s = time.perf_counter() - t0
    scale = float(model.scale)
    Q, _ = np.linalg.qr(np.random.default_rng(3).standard_normal((3, 3)))
    A = torch.tensor((Q * np.array([1.0, 2.0, 4.0])) @ Q.T, dtype=torch.float32)
    N = torch.diag(torch.tensor([1.0, 2.0, 3.0]))
    f, fmin = brockett_objective(A, N), brockett_minimum(A, N)
    x0 = torch.tensor(synthetic("so3", args.starts, seed=1), dtype=torch.float32)
    rows = []
    for sigma in args.sigmas:
        proj = model.projector(sigma / scale)
        res = drgd(f, proj, x0, args.steps, gamma=args.gamma)
        X = res.x.double().numpy()
        P = project_so3(X)
        dist = np.linalg.norm(X - P, axis=1)
        gap = f(torch.tensor(X)).numpy() - fmin
        gap_p = f(torch.tensor(P)).numpy() - fmin
        row = {"sigma": sigma, "gap_median": float(np.median(gap)), "gap_rotation_median": float(np.median(gap_p)),
               "gap_rotation_q90": float(np.quantile(gap_p, 0.9)), "distance_mean": float(dist.mean()),
               "curve": res.values}
        rows.append(row)
        print(f"sigma {sigma:.3f}: f - f* median {row['gap_median']:.4f}, at nearest rotation "
              f"{row['gap_rotation_median']:.4f} (90% {row['gap_rotation_q90']:.4f}); distance to SO(3) "
              f"{row['distance_mean']:.4f}", flush=True)
    s = np.log([r["sigma"] for r in rows])
    slope = float(np.polyfit(s, np.log([r["distance_mean"] for r in rows]), 1)[0])
    print(f"distance ~ sigma^{slope:.2f}; f* = {fmin:.3f}; training {train_s:.0f} s")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for r in rows:
        axes[0].plot(np.array(r["curve"]) - fmin, label=f"sigma={r['sigma']}")
    axes[0].set(yscale="log", xlabel="DRGD step", ylabel="mean f - f*", title="Brockett on SO(3), learned score")
    axes[0].legend()
    sg = [r["sigma"] for r in rows]
    axes[1].loglog(sg, [r["distance_mean"] for r in rows], "o-", label=f"measured (slope {slope:.2f})")
    axes[1].loglog(sg, np.array(sg) * rows[0]["distance_mean"] / sg[0], "k--", label="O(sigma)")
    axes[1].set(xlabel="sigma", ylabel="mean |X - polar(X)|", title="distance to SO(3)")
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(ROOT / "docs/img/manifold_brockett.png", dpi=120)
    for r in rows:
        r.pop("curve")
    (ROOT / "docs/benchmarks/manifold_brockett.json").write_text(json.dumps(
        {"args": vars(args), "f_min": fmin, "rows": rows, "distance_slope": slope, "train_s": train_s,
         "final_train_loss": float(np.mean(model.losses[-50:]))}, indent=1))


if __name__ == "__main__":
    main()
