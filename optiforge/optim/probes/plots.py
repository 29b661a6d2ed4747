"""PNG figures of the probes, drawn from the dicts their ``figure()`` functions return.

matplotlib is the optional ``plots`` extra: it is imported only when a figure is drawn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from optiforge.extras import require


def _pyplot() -> Any:
    require("plots", "probe figures")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _band(ax: Any, x: Any, runs: list[list[float]], label: str, **kw: Any) -> None:
    """Mean over the last axis of ``runs`` ([point][trial]) with a +-1 std band."""
    arr = np.asarray(runs, dtype=float)
    mean, std = arr.mean(1), arr.std(1)
    line, = ax.plot(x, mean, label=label, **kw)
    ax.fill_between(x, mean - std, mean + std, color=line.get_color(), alpha=0.15, lw=0)


def plot_bbp(res: dict, path: str | Path) -> Path:
    """Four panels: Fig. 1 for each a, the N = inf theory check at p = 1, the large-p check."""
    plt = _pyplot()
    alphas = res["config"]["alphas"]
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.6))
    for ax, entry in zip(axes[:2], res["fig1"], strict=False):
        for run in entry["runs"]:
            ax.errorbar(alphas, run["overlap_mean"], yerr=run["overlap_std"], marker="o", ms=3,
                        capsize=2, label=f"N = {run['n']}")
        theory = next(t for t in res["theory"] if t["a"] == entry["a"])
        ax.axvline(theory["p1"]["alpha_bbp"], color="grey", ls=":", label="p = 1 theory α_BBP")
        ax.axvline(theory["p_inf"]["alpha_bbp"], color="k", ls="--", label="p → ∞: p*(a+1)/2")
        ax.set(title=f"p = {res['config']['p']}, p* = {res['config']['p_star']}, a = {entry['a']}",
               xlabel="α = M/N", ylabel="|m| (lowest Hessian eigenvector · teacher)", ylim=(0, 1))
        ax.legend(fontsize=8)
    ax = axes[2]
    for k, t in enumerate(res["theory"]):
        line, = ax.plot(alphas, t["p1"]["overlap"], color=f"C{k}",
                        label=f"a = {t['a']}: N = ∞ theory (α_BBP {t['p1']['alpha_bbp']:.2f})")
        for j, sim in enumerate(t["simulated"]):
            ax.errorbar(alphas, sim["overlap_mean"], yerr=sim["overlap_std"], ls="none",
                        marker="os^"[j % 3], ms=3, capsize=2, color=line.get_color(),
                        label=f"a = {t['a']}: N = {sim['n']}")
    ax.set(title="p = p* = 1: simulation vs N = ∞ theory", xlabel="α", ylabel="|m|", ylim=(0, 1))
    ax.legend(fontsize=7)
    ax = axes[3]
    lp = res["large_p"]
    for run in lp["runs"]:
        ax.plot(alphas, run["overlap_mean"], marker="o", ms=3, label=f"p = {run['p']}")
    ax.plot(alphas, lp["p_inf_theory_overlap"], "k-", lw=2, label="p → ∞, N = ∞ theory")
    ax.axvline(lp["alpha_bbp_p_inf"], color="k", ls="--", label="p*(a+1)/2")
    ax.set(title=f"large p (N = {lp['n']}, a = {lp['a']})", xlabel="α", ylabel="|m|", ylim=(0, 1))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, plt, path)


def plot_fractal(res: dict, path: str | Path) -> Path:
    """Four panels: the basin map, the box-counting fit, the Thm 1 check, sharpness vs eta."""
    plt = _pyplot()
    from matplotlib.colors import ListedColormap

    cfg = res["config"]
    fig, axes = plt.subplots(1, 4, figsize=(21, 5))
    ax = axes[0]
    e = cfg["extent"]
    ax.imshow(res["classes"], origin="lower", extent=(-e, e, -e, e), interpolation="nearest",
              cmap=ListedColormap(["#d9d9d9", "#1f77b4", "#ff7f0e"]))
    ax.set(title=f"GD basins: y={cfg['y']}, η={cfg['eta']}, λ={cfg['lam']} "
                 f"(grey: not converged)", xlabel="u₀", ylabel="v₀")
    ax = axes[1]
    for name, marker in (("convergence_boundary", "o"), ("all_class_boundary", "s")):
        bc = res["box_counting"][name]
        eps = np.asarray(bc["sizes"], float) / cfg["resolution"]
        ax.loglog(1 / eps, bc["counts"], marker, ms=3,
                  label=f"{name.replace('_', ' ')}: D = {bc['dimension']:.3f}")
        fit = np.asarray(bc["fit_sizes"], float) / cfg["resolution"]
        ax.loglog(1 / fit, np.exp(bc["intercept"]) * (1 / fit) ** bc["dimension"], "k-", lw=1)
    ax.set(title=f"box counting (paper: ≈ {res['paper_dimension']}; Koch calibration "
                 f"{res['koch_calibration']['dimension']:.3f} vs 1.262)",
           xlabel="1/ε", ylabel="N(ε)")
    ax.legend(fontsize=8)
    ax = axes[2]
    c = res["critical_step_check"]
    groups = ["branch_w", "branch_y"]
    x = np.arange(len(groups))
    tot = np.array([max(c["count"][g], 1) for g in groups], float)
    ax.bar(x - 0.27, [c["converged_below"][g] for g in groups] / tot, 0.27,
           label=f"converged at (1-{c['rel']})η*")
    ax.bar(x, [c["count"][g] - c["converged_above"][g] for g in groups] / tot, 0.27,
           label=f"did not converge at (1+{c['rel']})η*")
    ax.bar(x + 0.27, [c["diverged_above"][g] for g in groups] / tot, 0.27,
           label=f"diverged at (1+{c['rel']})η*")
    ax.set_xticks(x, [f"η* = 8/(w+√…)\n({c['count']['branch_w']} inits)",
                      f"η* = 1/|y|\n({c['count']['branch_y']} inits)"])
    ax.set(title=f"Thm 1 by full GD (d={c['d']}, {c['steps']} steps)", ylabel="fraction",
           ylim=(0, 1.05))
    ax.legend(fontsize=8)
    ax = axes[3]
    s = res["sharpness"]
    for eta, vals in zip(s["etas"], res["sharpness_samples"], strict=True):
        ax.scatter(np.full(len(vals), eta), vals, s=2, alpha=0.3, color="C0")
    etas = np.asarray(s["etas"])
    ax.plot(etas, 2 / etas, "k--", label="2/η")
    ax.axhline(s["gamma_min"], color="grey", ls=":", label="γ_min = 2|y|")
    ax.set(title="sharpness of the selected minimum (y = 1, d = 5)", xlabel="η",
           ylabel="sharpness", ylim=(0, 2 / etas.min() if len(etas) else 10))
    ax.set_ylim(0, min(20, 2 / etas.min()))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, plt, path)


def plot_cco(res: dict, path: str | Path) -> Path:
    """Four panels: p_x, |w - w*|, the losses along Algorithm 1, and the sweep of a."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(21, 4.6))
    cfg = res["config"]
    for key, style in (("three_phase", "-"), ("joint", "--")):
        run = res[key]
        label = "Algorithm 1 (three phases)" if key == "three_phase" else "joint GD (ablation)"
        _band(axes[0], run["steps"], run["p_x"], label, ls=style)
        _band(axes[1], run["steps"], run["w_error"], label, ls=style)
        _band(axes[2], run["steps"], run["test_loss_shifted"], f"shifted test: {label}", ls=style)
    run = res["three_phase"]
    _band(axes[2], run["steps"], run["train_loss"], "train: Algorithm 1", ls=":")
    for ax in axes[:3]:
        for k, key in enumerate(("phase1_end", "phase2_end")):
            ax.axvline(float(np.mean(run[key])), color="grey", lw=0.8, ls=":",
                       label="mean phase ends" if k == 0 and ax is axes[0] else None)
        ax.set_xlabel("GD iteration")
    axes[0].set(title=f"attention on the cause (a = {cfg['a']}, c = {cfg['c']}, d = {cfg['d']}, "
                      f"n = {cfg['n']})", ylabel="mean p_x", ylim=(0, 1.02))
    axes[1].set(title="|w - w*|", ylabel="|w_x - w*|")
    axes[2].axhline(res["noise_floor"], color="k", lw=0.8, label="σ²/2")
    axes[2].set(title=f"losses (test: z = {cfg['c_test']} y e₁ + ξ)", ylabel="loss", yscale="log")
    axes[0].legend(fontsize=8)
    axes[2].legend(fontsize=7)
    ax = axes[3]
    rows = res["sweep"]
    a_vals = [r["a"] for r in rows]
    _band(ax, a_vals, [r["p_x"] for r in rows], "final mean p_x")
    _band(ax, a_vals, [r["sign_condition_fraction"] for r in rows], "share with sgn(x₁-z₁)=sgn(x₁)")
    ax2 = ax.twinx()
    loss = np.asarray([r["test_loss_shifted"] for r in rows], float)
    ax2.plot(a_vals, np.median(loss, 1), "r.-", label="median shifted test loss")
    ax2.axhline(res["noise_floor"], color="r", lw=0.8, ls=":")
    ax2.set(yscale="log", ylabel="shifted test loss")
    held = [r["a"] for r in rows if r["cond1_margin"] > 0]
    if held:
        ax.axvspan(min(held), max(a_vals), color="green", alpha=0.07, label="Cond 1 holds")
    ax.set(xscale="log", title="sweep of the correlation strength a", xlabel="a = Var(x₁)",
           ylabel="share", ylim=(0, 1.02))
    ax.legend(fontsize=7, loc="center left")
    ax2.legend(fontsize=7, loc="center right")
    fig.tight_layout()
    return _save(fig, plt, path)


def _save(fig: Any, plt: Any, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


__all__ = ["plot_bbp", "plot_cco", "plot_fractal"]
