"""Mesh experiment of Ma & Huang: fit a 20x20 mesh to a Helmholtz solution (k = 10) by ZO-SGD.

Every interior vertex of a 20x20 triangulated grid is a convex combination of its 6 neighbours
(barycentric weights in an open 5-simplex, the Tutte/Floater parameterisation of
:mod:`optiforge.blackbox.riemannian.mesh`: positive weights always give a valid mesh). The
objective is the L2 error of the piecewise-linear interpolant of
``f(x, y) = J0(10 |(x, y) - (0.3, 0.4)|) + 0.5 sin(6x) sin(8y)`` (both terms solve
``lap f = -k^2 f`` with ``k = 10``), relative to the regular grid's error. Four optimisers, one
seed, the same ``eta`` and ``mu``:

* **structure-preserving**: ZO-SGD with the barrier metric ``h = 1 + c sum p^-2`` (the paper's
  method; perturbations and steps stay inside the simplices);
* **unconstrained**: the inherited Euclidean metric; weights may leave the simplex and meshes fold;
* **reversion**: Euclidean, and a step that leaves the simplices (or folds the mesh) is undone;
* **soft projection**: Euclidean, and ``mu`` and the step are halved until the points are valid.

Deviation: the error is integrated by a 7-point rule on each triangle instead of sampled on the
200x200 fine grid (same value to 4 digits on the regular grid, 25x cheaper); the final meshes'
error on the 200x200 grid is reported too.

Run: ``python benchmarks/manifold_mesh.py [--steps 20000]``; writes docs/img/manifold_mesh.png and
docs/benchmarks/manifold_mesh.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy.special import j0

from optiforge.blackbox.riemannian import (
    ConformalBarrier,
    Schedule,
    ZORiemannianSGD,
    sample_direction,
)
from optiforge.blackbox.riemannian.mesh import TutteMesh, interpolate_on_grid, interpolation_error

ROOT = Path(__file__).resolve().parent.parent


def helmholtz(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return j0(10.0 * np.hypot(x - 0.3, y - 0.4)) + 0.5 * np.sin(6.0 * x) * np.sin(8.0 * y)


class Problem:
    def __init__(self, n: int) -> None:
        self.mesh = TutteMesh(n)
        self.e0 = interpolation_error(self.mesh, self.mesh.positions(self.mesh.uniform_weights()), helmholtz)

    def __call__(self, w: np.ndarray) -> float:
        return interpolation_error(self.mesh, self.mesh.positions(w), helmholtz) / self.e0

    def valid(self, w: np.ndarray) -> bool:
        return bool(np.all(w.reshape(-1, 6) > 0)) and self.mesh.is_valid(self.mesh.positions(w))

    def grid_mse(self, w: np.ndarray, G: int = 200) -> float:
        X = self.mesh.positions(w)
        g = (np.arange(G) + 0.5) / G
        gx, gy = np.meshgrid(g, g, indexing="ij")
        interp, _ = interpolate_on_grid(self.mesh, X, helmholtz(X[:, 0], X[:, 1]), G)
        return float(np.mean((interp - helmholtz(gx, gy).ravel()) ** 2))


def run(problem: Problem, method: str, steps: int, eta: float, mu: float, c: float, seed: int,
        log_every: int) -> dict:
    barrier = ConformalBarrier(c) if method == "structure-preserving" else None
    manifold = problem.mesh.manifold(barrier)
    w0 = problem.mesh.uniform_weights()
    sched = Schedule(eta, mu, "constant", steps, manifold.dim, manifold.radius)
    opt = ZORiemannianSGD(manifold, w0, sched, "alg1", seed)
    curve, invalid, reverted, shrinks = [], 0, 0, 0
    t0 = time.perf_counter()
    for t in range(steps):
        x = opt.x
        if method in ("structure-preserving", "unconstrained"):
            probe = opt.probe(0)
            probe.f_plus, probe.f_minus = problem(probe.plus), problem(probe.minus)
            opt.step([probe])
        else:
            rng = np.random.default_rng([seed, t, 0])
            frame = manifold.frame(x)
            v = frame.ambient(sample_direction(frame, rng, "alg1"))
            m_t, e_t = mu, eta
            if method == "soft-projection":
                while not (problem.valid(x + m_t * v) and problem.valid(x - m_t * v)) and m_t > 1e-12:
                    m_t *= 0.5
                    shrinks += 1
            g = (problem(x + m_t * v) - problem(x - m_t * v)) / (2 * m_t) * v
            new = x - e_t * g
            if method == "soft-projection":
                while not problem.valid(new) and e_t > 1e-12:
                    e_t *= 0.5
                    new = x - e_t * g
                    shrinks += 1
            elif not problem.valid(new):  # reversion
                new = x
                reverted += 1
            opt.x, opt.t = new, opt.t + 1
        ok = problem.mesh.is_valid(problem.mesh.positions(opt.x))
        invalid += not ok
        if (t + 1) % log_every == 0 or t == 0:
            curve.append((t + 1, problem(opt.x), ok))
    return {"method": method, "curve": curve, "final": problem(opt.x), "invalid_iterates": invalid,
            "reverted": reverted, "shrinks": shrinks, "grid_mse_final": problem.grid_mse(opt.x),
            "min_weight": float(opt.x.min()), "time_s": time.perf_counter() - t0, "w": opt.x}


def plot_curves(runs: list[dict], path: str) -> None:
    """Error curves of earlier runs, clipped at 2x the start so the stable methods stay legible."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(runs), figsize=(6 * len(runs), 4), squeeze=False)
    for ax, run in zip(axes[0], runs, strict=True):
        for r in run["results"]:
            s, v, _ = zip(*r["curve"], strict=True)
            v = np.array(v)
            bad = np.flatnonzero(v > 2.0)
            label = f"{r['method']}: final {r['final']:.3g}"
            if bad.size:
                label += f" (> 2 from step {s[bad[0]]})"
            ax.plot(s, np.minimum(v, 2.0), label=label)
        ax.set(xlabel="step", ylabel="interpolation error / regular grid's (clipped at 2)",
               title=f"eta = {run['args']['eta']}, mu = {run['args']['mu']}, c = {run['args']['c']}",
               ylim=(0.2, 2.05))
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--eta", type=float, default=0.5)
    ap.add_argument("--mu", type=float, default=0.02)
    ap.add_argument("--c", type=float, default=0.01, help="barrier constant (safe radius sqrt(c))")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "docs/benchmarks/manifold_mesh.json"))
    ap.add_argument("--figure", default=str(ROOT / "docs/img/manifold_mesh.png"))
    ap.add_argument("--plot-curves", nargs="+", metavar="JSON",
                    help="only draw the error curves of earlier runs (one panel each) to --figure")
    args = ap.parse_args()
    if args.plot_curves:
        plot_curves([json.loads(Path(p).read_text()) for p in args.plot_curves], args.figure)
        return
    problem = Problem(args.n)
    log_every = max(1, args.steps // 200)
    results = []
    for method in ("structure-preserving", "unconstrained", "reversion", "soft-projection"):
        r = run(problem, method, args.steps, args.eta, args.mu, args.c, args.seed, log_every)
        results.append(r)
        print(f"{method:22s} final rel. error {r['final']:.4f}  invalid iterates {r['invalid_iterates']:6d}  "
              f"reverted {r['reverted']:5d}  shrinks {r['shrinks']:6d}  grid MSE {r['grid_mse_final']:.3e}  "
              f"({r['time_s']:.0f} s)", flush=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for r in results:
        s, v, _ = zip(*r["curve"], strict=True)
        axes[0].plot(s, v, label=f"{r['method']} ({r['invalid_iterates']} invalid)")
    axes[0].set(xlabel="step", ylabel="interpolation error / regular grid's", yscale="log",
                title=f"{args.n}x{args.n} mesh, Helmholtz k = 10")
    axes[0].legend(fontsize=8)
    for ax, r in zip(axes[1:], (results[0], results[1]), strict=True):
        X = problem.mesh.positions(r["w"])
        ax.triplot(X[:, 0], X[:, 1], problem.mesh.triangles, lw=0.5)
        ax.set(title=f"{r['method']}: final mesh", aspect="equal")
    fig.tight_layout()
    fig.savefig(args.figure, dpi=120)
    for r in results:
        r["w"] = r["w"].tolist()
    Path(args.out).write_text(json.dumps({"args": vars(args), "results": results}, indent=1,
                                         default=lambda o: bool(o) if isinstance(o, np.bool_) else float(o)))
    print("wrote", args.out)


if __name__ == "__main__":
    main()
