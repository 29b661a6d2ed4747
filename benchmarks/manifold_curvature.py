"""Curvature vs estimator MSE (Ma & Huang, Thm 2.7): four conformal metrics on the 2-simplex.

On the open 2-simplex with ``g' = h g_E``, ``h = (1 + c sum p_i^-2)^q`` for four ``(c, q)`` (and a
nearly flat fifth), the
two-point estimator with the exact exponential map of ``g'`` (RK4 on the geodesic equation) is
drawn 50,000 times at ``p0`` for ``f_KL(p) = KL(p || q)`` and ``f_sq(p) = |p - q|^2 / 2`` with
``q`` uniform. Reported: the Gaussian curvature ``K(p0)`` of each metric and the normalised MSE
``E |g_hat - grad f / d|^2_g' / |grad f|^2_g'`` (Thm 2.7 bounds it by ``(1 + mu^2 kappa^2)/d``
plus ``O(mu^2)``), at a fixed ``mu`` in each metric's own length. The paper's claim: the metric
with the smaller ``|K(p0)|`` gives the lower MSE.

Run: ``python benchmarks/manifold_curvature.py``; writes docs/img/manifold_curvature.png and
docs/benchmarks/manifold_curvature.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from optiforge.blackbox.riemannian import ConformalBarrier, Simplex, simplex_curvature

ROOT = Path(__file__).resolve().parent.parent
METRICS = [(1e-5, 1.0), (0.001, 1.0), (0.01, 1.0), (0.1, 1.0), (0.05, 2.0)]  # the first: nearly flat


def mse(c: float, q: float, f, grad, p0: np.ndarray, mu: float, n: int, seed: int) -> tuple[float, float]:
    """(normalised MSE, raw MSE in g') of the two-point estimator at ``p0``."""
    m = Simplex(3, barrier=ConformalBarrier(c, q), retraction="exp", exp_steps=64)
    frame = m.frame(p0)
    h = float(m.h(p0)[0])
    rng = np.random.default_rng(seed)
    s = rng.standard_normal((n, 2))
    s /= np.linalg.norm(s, axis=1, keepdims=True)
    V = frame.ambient(s / np.sqrt(h))  # the g'-unit circle (g' is isotropic: all samplers agree)
    plus, minus = m.exp(p0, mu * V), m.exp(p0, -mu * V)
    ok = np.all(plus > 0, axis=1) & np.all(minus > 0, axis=1)
    fp, fm = f(plus[ok]), f(minus[ok])
    G = ((fp - fm) / (2 * mu))[:, None] * V[ok]
    g = m.egrad2rgrad(p0, grad(p0))
    err = h * np.sum((G - g / 2) ** 2, axis=1)  # |.|^2 in g'
    return float(err.mean() / (h * g @ g)), float(err.mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--mu", type=float, nargs="+", default=[0.05, 0.2, 0.5])
    ap.add_argument("--p0", type=float, nargs=3, default=[0.15, 0.25, 0.6])
    args = ap.parse_args()
    p0 = np.array(args.p0)
    qv = np.full(3, 1 / 3)
    objectives = {
        "KL": (lambda P: np.sum(P * np.log(P / qv), axis=-1), lambda p: np.log(p / qv) + 1.0),
        "squared": (lambda P: 0.5 * np.sum((P - qv) ** 2, axis=-1), lambda p: p - qv),
    }
    rows = []
    for c, q in METRICS:
        K = simplex_curvature(ConformalBarrier(c, q), p0)
        row = {"c": c, "q": q, "K": K}
        for name, (f, grad) in objectives.items():
            for mu in args.mu:
                row[f"{name}@{mu}"], row[f"{name}_raw@{mu}"] = mse(c, q, f, grad, p0, mu, args.n, seed=0)
        rows.append(row)
        print(json.dumps(row), flush=True)
    summary = {}
    for key in rows[0]:
        if "@" in key:
            rho = spearmanr([abs(r["K"]) for r in rows], [r[key] for r in rows]).statistic
            summary[key] = float(rho)
    print("Spearman(|K|, MSE):", json.dumps(summary))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, name in zip(axes, objectives, strict=True):
        for mu in args.mu:
            ks = [abs(r["K"]) for r in rows]
            order = np.argsort(ks)
            ax.plot(np.array(ks)[order], np.array([r[f"{name}@{mu}"] for r in rows])[order], "o-",
                    label=f"mu={mu}")
        ax.set(xscale="log", xlabel="|K(p0)|", ylabel="normalised MSE", title=f"f_{name}, {args.n} draws")
        ax.legend()
    fig.tight_layout()
    fig.savefig(ROOT / "docs/img/manifold_curvature.png", dpi=120)
    (ROOT / "docs/benchmarks/manifold_curvature.json").write_text(
        json.dumps({"args": vars(args), "metrics": rows, "spearman_absK_vs_mse": summary}, indent=1))


if __name__ == "__main__":
    main()
