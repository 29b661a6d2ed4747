"""Evidence for the distributed training schemes (optiforge.optim.distributed), on CPU.

Data: scikit-learn's bundled digits (1,437 train / 360 test), split among 16 agents with
Dirichlet(0.1) (non-IID) unless said otherwise; every figure is a mean over ``--seeds`` seeds
(the seed drives the split, the initial point and every random draw).

``decentralized`` (Zhu et al., ICLR 2026), MLP 64-128-128-10, 200 rounds x 5 local SGD steps
(batch 32, lr 0.2), gossip with one random peer at R = 0.2:
  - late vs early vs uniform all-reduce windows at an equal budget (10% of the rounds);
  - a final global merge vs parallel SGD (an all-reduce every round);
  - zero communication + final merge vs R = 0.2 + final merge (shared and independent inits).
``federated`` (ADI, OpenReview zOWljZMbCm): ADI vs DIANA on the worst client's loss, non-IID
(alpha 0.1) and IID, rand-k 10%, exact local gradients, 300 rounds, server lr 0.5, softmax
regression (convex, ADI's setting) and an MLP with 32 hidden units; EF21 (top-k) and FedAvg for
reference; accuracy against uplink bits for each compressor (``bits``); ADI vs DIANA with partial
participation p = 0.5 (``participation``).
``engines``: the Ray engine against the in-process engine at 4 and 16 agents (wall time, and
the same curves).

Run: ``PYTHONPATH=. python benchmarks/distributed.py all`` (or one part; ``--help``). Writes
docs/img/distributed_*.png and docs/benchmarks/distributed.json, prints markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from optiforge.optim.distributed import (
    ADI,
    DIANA,
    EF21,
    AllReduce,
    DecentralizedConfig,
    FedAvg,
    FederatedConfig,
    FlatModel,
    Gossip,
    Identity,
    LocalEngine,
    Natural,
    NoCommunication,
    RandK,
    RunResult,
    Schedule,
    TopK,
    Windows,
    dirichlet_partition,
    mlp,
    train_decentralized,
    train_federated,
)
from optiforge.platform.distributed import load_dataset
from optiforge.platform.distributed.plots import pyplot, save

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
OUT_JSON = ROOT / "docs" / "benchmarks" / "distributed.json"
AGENTS, ALPHA = 16, 0.1


def load() -> float:
    return os.getloadavg()[0]


def split(seed: int, alpha: float = ALPHA, agents: int = AGENTS):
    data = load_dataset("digits", seed=0)  # one train/test split; the seed moves the shards
    return data, dirichlet_partition(data.y_train, agents, alpha, np.random.default_rng(seed))


def mean_std(values: list[float]) -> tuple[float, float]:
    return float(np.mean(values)), float(np.std(values))


def fmt(values: list[float], digits: int = 3) -> str:
    m, s = mean_std(values)
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def mean_curves(runs: list[RunResult], keys: tuple[str, ...]) -> dict[str, list[float]]:
    """Seed-mean of each curve in ``keys`` (plus the rounds), for the JSON and the figures."""
    out = {"round": list(runs[0].curves["round"])}
    for key in keys:
        out[key] = [float(v) for v in np.mean([r.curves[key] for r in runs], axis=0)]
    return out


# --------------------------------------------------------------------------- decentralized

def decentralized(seeds: int, rounds: int) -> dict[str, Any]:
    def run(schedule: Schedule, seed: int, init: str = "shared") -> RunResult:
        data, shards = split(seed)
        cfg = DecentralizedConfig(rounds=rounds, local_steps=5, batch_size=32, lr=0.2,
                                  schedule=schedule, eval_every=max(1, rounds // 20), seed=seed)
        return train_decentralized(LocalEngine(), FlatModel(mlp(64, 10, (128, 128), seed=seed)),
                                   data, shards, cfg, init=init)

    gossip = Gossip(0.2)
    arms = {
        "late windows": (Schedule(gossip, Windows("late", 0.1), final_merge=False), "shared"),
        "early windows": (Schedule(gossip, Windows("early", 0.1), final_merge=False), "shared"),
        "uniform windows": (Schedule(gossip, Windows("uniform", 0.1), final_merge=False), "shared"),
        "R=0.2 + final merge": (Schedule(gossip, final_merge=True), "shared"),
        "parallel SGD": (Schedule(AllReduce(), final_merge=False), "shared"),
        "no communication + final merge": (Schedule(NoCommunication(), final_merge=True), "shared"),
        "no communication + final merge (independent inits)":
            (Schedule(NoCommunication(), final_merge=True), "independent"),
        "R=0.2 + final merge (independent inits)": (Schedule(gossip, final_merge=True), "independent"),
    }
    t0 = time.perf_counter()
    results = {name: [run(s, seed, init) for seed in range(seeds)] for name, (s, init) in arms.items()}
    wall = time.perf_counter() - t0
    rows = {name: {"merged_acc": [r.final["merged_acc"] for r in rs],
                   "local_acc_mean": [r.final["local_acc_mean"] for r in rs],
                   "bits": [r.final["bits"] for r in rs]} for name, rs in results.items()}
    curves = {name: mean_curves(rs, ("merged_acc", "local_acc_mean")) for name, rs in results.items()}
    print(f"\n### Decentralized: 16 agents, Dirichlet 0.1, {rounds} rounds, {seeds} seeds ({wall:.0f} s)\n")
    print("| schedule | merged model acc | local models mean acc | Gbit sent |")
    print("|---|---|---|---|")
    for name, row in rows.items():
        print(f"| {name} | {fmt(row['merged_acc'])} | {fmt(row['local_acc_mean'])} | "
              f"{np.mean(row['bits']) / 1e9:.2f} |")
    late, early = np.array(rows["late windows"]["merged_acc"]), np.array(rows["early windows"]["merged_acc"])
    print(f"\nlate - early (merged model), per seed: {np.round(late - early, 3).tolist()}")
    return {"rounds": rounds, "seeds": seeds, "wall_s": round(wall, 1), "rows": rows, "curves": curves}


SHORT = {"late windows": "late\nwindows", "early windows": "early\nwindows",
         "uniform windows": "uniform\nwindows", "R=0.2 + final merge": "R=0.2\n+ merge",
         "parallel SGD": "parallel\nSGD", "no communication + final merge": "no comm.\n+ merge",
         "no communication + final merge (independent inits)": "no comm.\n+ merge\nindep. inits",
         "R=0.2 + final merge (independent inits)": "R=0.2\n+ merge\nindep. inits"}


def plot_decentralized(res: dict[str, Any]) -> Path:
    rows, curves = res["rows"], res["curves"]
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.4))
    for name in ("late windows", "early windows", "uniform windows"):
        axes[0].plot(curves[name]["round"], curves[name]["merged_acc"], label=name)
    axes[0].set(title="all-reduce windows, equal budget (10% of rounds), gossip R=0.2",
                xlabel="round", ylabel="merged model: test accuracy", ylim=(0.6, 1.0))
    for k, name in enumerate(("R=0.2 + final merge", "parallel SGD", "no communication + final merge")):
        c = curves[name]
        axes[1].plot(c["round"], c["merged_acc"], color=f"C{k}", label=f"{name}: merged model")
        axes[1].plot(c["round"], c["local_acc_mean"], color=f"C{k}", ls="--", label=f"{name}: local models")
    axes[1].set(title="local models (--) vs their global average (—)", xlabel="round",
                ylabel="test accuracy")
    names = list(rows)
    pos = np.arange(len(names))
    for off, key, label in ((-0.2, "local_acc_mean", "local models (mean)"), (0.2, "merged_acc", "merged model")):
        axes[2].bar(pos + off, [np.mean(rows[n][key]) for n in names], 0.4,
                    yerr=[np.std(rows[n][key]) for n in names], label=label)
    axes[2].axhline(0.1, color="k", ls=":", label="chance")
    axes[2].set_xticks(pos, [SHORT.get(n, n) for n in names], fontsize=7)
    axes[2].set(ylabel="final test accuracy",
                title="end: local models (before any final merge), their average")
    for ax in axes:
        ax.legend(fontsize=7)
    for ax in axes[:2]:
        ax.grid(alpha=0.3)
    fig.suptitle(f"digits, 16 agents, Dirichlet 0.1, MLP 64-128-128-10, {res['rounds']} rounds x 5 "
                 f"local steps, mean of {res['seeds']} seeds", fontsize=10)
    fig.tight_layout()
    return save(fig, IMG / "distributed_decentralized.png")


# --------------------------------------------------------------------------- federated

def federated(seeds: int, rounds: int) -> dict[str, Any]:
    rk = RandK(fraction=0.1)
    lin = {"DIANA": DIANA(lr=0.5, compressor=rk),
           "ADI a=4 γπ=0.2 α=1 (default)": ADI(lr=0.5, a=4, pi_lr=0.2, alpha=1.0, compressor=rk),
           "ADI a=4 γπ=0.2 α=0": ADI(lr=0.5, a=4, pi_lr=0.2, alpha=0.0, compressor=rk),
           "ADI a=2 γπ=0.2 α=1": ADI(lr=0.5, a=2, pi_lr=0.2, alpha=1.0, compressor=rk),
           "ADI a=8 γπ=0.2 α=1": ADI(lr=0.5, a=8, pi_lr=0.2, alpha=1.0, compressor=rk),
           "ADI a=2 γπ=1 α=1": ADI(lr=0.5, a=2, pi_lr=1.0, alpha=1.0, compressor=rk),
           "ADI a=4 γπ=1 α=1": ADI(lr=0.5, a=4, pi_lr=1.0, alpha=1.0, compressor=rk),
           "EF21 (top-k 10%)": EF21(lr=0.5, compressor=TopK(fraction=0.1)),
           "FedAvg (5 local steps, uncompressed)": FedAvg(client_lr=0.1, local_steps=5, batch_size=32)}
    nets = {"DIANA": lin["DIANA"], "ADI a=4 γπ=0.2 α=1 (default)": lin["ADI a=4 γπ=0.2 α=1 (default)"],
            "ADI a=4 γπ=0.02 α=1": ADI(lr=0.5, a=4, pi_lr=0.02, alpha=1.0, compressor=rk),
            "ADI a=2 γπ=0.2 α=1": lin["ADI a=2 γπ=0.2 α=1"]}
    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    curves: dict[str, dict[str, list[RunResult]]] = {}
    for model_name, hidden, methods in (("softmax regression", (), lin), ("MLP 32", (32,), nets)):
        for alpha in (0.1, float("inf")):
            key = f"{model_name}, alpha={alpha}"
            res: dict[str, list[RunResult]] = {}
            for name, method in methods.items():
                res[name] = []
                for seed in range(seeds):
                    data, shards = split(seed, alpha)
                    res[name].append(train_federated(
                        LocalEngine(), FlatModel(mlp(64, 10, hidden, seed=seed)), data, shards, method,
                        FederatedConfig(rounds=rounds, eval_every=max(1, rounds // 30), seed=seed)))
            curves[key] = res
            out[key] = {name: {"worst_client_loss": [r.final["worst_client_loss"] for r in rs],
                               "mean_client_loss": [r.final["mean_client_loss"] for r in rs],
                               "test_acc": [r.final["test_acc"] for r in rs],
                               "bits_up": [r.final["bits_up"] for r in rs]} for name, rs in res.items()}
    wall = time.perf_counter() - t0
    print(f"\n### Federated: 16 clients, rand-k 10%, {rounds} rounds, {seeds} seeds ({wall:.0f} s)\n")
    for key, rows in out.items():
        base = np.mean(rows["DIANA"]["worst_client_loss"])
        print(f"\n{key}\n\n| method | worst client's loss | vs DIANA | mean client loss | test acc |")
        print("|---|---|---|---|---|")
        for name, row in rows.items():
            rel = np.mean(row["worst_client_loss"]) / base - 1
            print(f"| {name} | {fmt(row['worst_client_loss'])} | {rel:+.0%} | "
                  f"{fmt(row['mean_client_loss'])} | {fmt(row['test_acc'])} |")

    mean = {key: {name: mean_curves(rs, ("worst_client_loss", "test_acc", "pi_max"))
                  for name, rs in res.items()} for key, res in curves.items()}
    return {"rounds": rounds, "seeds": seeds, "wall_s": round(wall, 1), "rows": out, "curves": mean}


def plot_federated(res: dict[str, Any]) -> Path:
    plt = pyplot()
    curves = res["curves"]
    fig, axes = plt.subplots(1, len(curves), figsize=(4.8 * len(curves), 4))
    for ax, (key, runs) in zip(axes, curves.items(), strict=True):
        for name, c in runs.items():
            if name.startswith(("DIANA", "ADI a=4 γπ=0.2 α=1", "ADI a=4 γπ=0.02", "ADI a=2 γπ=0.2 α=1")):
                ax.plot(c["round"], c["worst_client_loss"], label=name)
        ax.set(title=key.replace("alpha=inf", "IID").replace("alpha=0.1", "Dirichlet 0.1"),
               xlabel="round", ylabel="worst client's loss", yscale="log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"ADI vs DIANA: digits, 16 clients, rand-k 10%, exact gradients, mean of "
                 f"{res['seeds']} seeds", fontsize=10)
    fig.tight_layout()
    return save(fig, IMG / "distributed_adi.png")


def bits(rounds: int) -> dict[str, Any]:
    """Test accuracy against uplink bits, one line per (method, compressor); seed 0, non-IID."""
    arms = {"DIANA, none": DIANA(lr=0.5, compressor=Identity()),
            "DIANA, rand-k 10%": DIANA(lr=0.5, compressor=RandK(fraction=0.1)),
            "DIANA, rand-k 1%": DIANA(lr=0.2, compressor=RandK(fraction=0.01)),
            "DIANA, natural": DIANA(lr=0.5, compressor=Natural()),
            "ADI, rand-k 10%": ADI(lr=0.5, a=4, pi_lr=0.2, compressor=RandK(fraction=0.1)),
            "ADI, natural": ADI(lr=0.5, a=4, pi_lr=0.2, compressor=Natural()),
            "EF21, top-k 10%": EF21(lr=0.5, compressor=TopK(fraction=0.1)),
            "EF21, top-k 1%": EF21(lr=0.5, compressor=TopK(fraction=0.01)),
            "FedAvg, none": FedAvg(client_lr=0.1, local_steps=5, batch_size=32),
            "FedAvg, natural": FedAvg(client_lr=0.1, local_steps=5, batch_size=32, compressor=Natural())}
    data, shards = split(0)
    t0 = time.perf_counter()
    res = {name: train_federated(LocalEngine(), FlatModel(mlp(64, 10, (), seed=0)), data, shards, m,
                                 FederatedConfig(rounds=rounds, eval_every=max(1, rounds // 60)))
           for name, m in arms.items()}
    wall = time.perf_counter() - t0
    target = 0.9
    print(f"\n### Accuracy vs uplink bits: softmax regression, Dirichlet 0.1, {rounds} rounds ({wall:.0f} s)\n")
    print(f"| method, compressor | bits / message | final test acc | Mbit to reach {target:.0%} | Mbit in all |")
    print("|---|---|---|---|---|")
    rows = {}
    for name, r in res.items():
        hit = next((b for b, a in zip(r.curves["bits_up"], r.curves["test_acc"], strict=True) if a >= target), None)
        per_msg = r.final["bits_up"] / max(r.final["participants"], 1)
        rows[name] = {"final_acc": r.final["test_acc"], "bits_to_target": hit,
                      "bits_up": r.final["bits_up"], "bits_per_message": per_msg}
        print(f"| {name} | {per_msg:,.0f} | {r.final['test_acc']:.3f} | "
              f"{'—' if hit is None else f'{hit / 1e6:.2f}'} | {r.final['bits_up'] / 1e6:.1f} |")
    curves = {name: {"bits_up": r.curves["bits_up"], "test_acc": r.curves["test_acc"]}
              for name, r in res.items()}
    return {"rounds": rounds, "wall_s": round(wall, 1), "target_acc": target, "rows": rows,
            "curves": curves}


def plot_bits(res: dict[str, Any]) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.8))
    for name, c in res["curves"].items():
        ax.plot(c["bits_up"][1:], c["test_acc"][1:], label=name,
                ls="--" if name.startswith(("EF21", "FedAvg")) else "-")
    ax.axhline(res["target_acc"], color="k", ls=":", lw=0.8)
    ax.set(xscale="log", xlabel="uplink bits (all clients)", ylabel="server model: test accuracy",
           title=f"accuracy vs bits sent: digits, 16 clients, Dirichlet 0.1, {res['rounds']} rounds",
           ylim=(0.5, 1.0))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return save(fig, IMG / "distributed_bits.png")


def participation(seeds: int, rounds: int, p: float = 0.5) -> dict[str, Any]:
    """ADI vs DIANA when each client takes part with probability p (softmax regression, non-IID)."""
    rk = RandK(fraction=0.1)
    arms = {"DIANA": DIANA(lr=0.5, compressor=rk),
            "ADI a=4 γπ=0.2 α=1 (default)": ADI(lr=0.5, a=4, pi_lr=0.2, alpha=1.0, compressor=rk),
            "ADI a=4 γπ=0.2 α=0": ADI(lr=0.5, a=4, pi_lr=0.2, alpha=0.0, compressor=rk)}
    t0 = time.perf_counter()
    res: dict[str, list[RunResult]] = {}
    for name, method in arms.items():
        res[name] = []
        for seed in range(seeds):
            data, shards = split(seed)
            res[name].append(train_federated(
                LocalEngine(), FlatModel(mlp(64, 10, (), seed=seed)), data, shards, method,
                FederatedConfig(rounds=rounds, participation=p, eval_every=max(1, rounds // 30), seed=seed)))
    wall = time.perf_counter() - t0
    rows = {name: {"worst_client_loss": [r.final["worst_client_loss"] for r in rs],
                   "peak_worst_client_loss": [max(r.curves["worst_client_loss"][1:]) for r in rs],
                   "test_acc": [r.final["test_acc"] for r in rs],
                   "participants": [r.final["participants"] for r in rs]} for name, rs in res.items()}
    print(f"\n### Partial participation p = {p}: softmax regression, Dirichlet 0.1, rand-k 10%, "
          f"{rounds} rounds, {seeds} seeds ({wall:.0f} s)\n")
    print("| method | worst client's loss | highest on the way | test acc |")
    print("|---|---|---|---|")
    for name, row in rows.items():
        print(f"| {name} | {fmt(row['worst_client_loss'])} | {fmt(row['peak_worst_client_loss'])} | "
              f"{fmt(row['test_acc'])} |")
    curves = {name: mean_curves(rs, ("worst_client_loss", "test_acc")) for name, rs in res.items()}
    return {"rounds": rounds, "seeds": seeds, "p": p, "wall_s": round(wall, 1), "rows": rows,
            "curves": curves}


def plot_participation(res: dict[str, Any]) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, c in res["curves"].items():
        ax.plot(c["round"], c["worst_client_loss"], label=name)
    ax.set(yscale="log", xlabel="round", ylabel="worst client's loss",
           title=f"partial participation p = {res['p']} (softmax regression, Dirichlet 0.1)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save(fig, IMG / "distributed_participation.png")


# --------------------------------------------------------------------------- engines

def engines(rounds: int, sizes: tuple[int, ...]) -> dict[str, Any]:
    """Wall time of the Ray engine vs the in-process one, and the same curves from both."""
    import ray

    from optiforge.platform.distributed.ray_engine import RayEngine

    cfg = DecentralizedConfig(rounds=rounds, local_steps=5, batch_size=32, lr=0.2, eval_every=5,
                              schedule=Schedule(Gossip(0.2), Windows("late", 0.1), final_merge=True))
    fcfg = FederatedConfig(rounds=rounds, eval_every=5, participation=0.5)
    method = ADI(lr=0.5, a=2, pi_lr=0.2, compressor=RandK(fraction=0.1))
    t0 = time.perf_counter()
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    ray_init = time.perf_counter() - t0
    eng = RayEngine()
    rows: dict[str, Any] = {"ray_init_s": round(ray_init, 1)}
    runs: dict[int, dict[str, RunResult]] = {}
    try:
        for m in sizes:
            data, shards = split(0, agents=m)
            model = FlatModel(mlp(64, 10, (128, 128), seed=0))
            row: dict[str, Any] = {}
            train_decentralized(LocalEngine(), model, data, shards, cfg)  # warm-up (lazy imports)
            t = time.perf_counter()
            local = train_decentralized(LocalEngine(), model, data, shards, cfg)
            row["local_s"] = time.perf_counter() - t
            t = time.perf_counter()
            first = train_decentralized(eng, model, data, shards, cfg)  # spawns m actors
            row["ray_first_s"] = time.perf_counter() - t
            t = time.perf_counter()
            on_ray = train_decentralized(eng, model, data, shards, cfg)  # actors reused
            row["ray_s"] = time.perf_counter() - t
            row["max_param_diff"] = float((local.theta - on_ray.theta).abs().max())
            row["max_acc_diff"] = float(np.max(np.abs(np.subtract(local.curves["merged_acc"],
                                                                  on_ray.curves["merged_acc"]))))
            row["same_as_first_ray_run"] = bool(torch.equal(first.theta, on_ray.theta))
            lin = FlatModel(mlp(64, 10, (), seed=0))
            t = time.perf_counter()
            f_local = train_federated(LocalEngine(), lin, data, shards, method, fcfg)
            row["fed_local_s"] = time.perf_counter() - t
            t = time.perf_counter()
            f_ray = train_federated(eng, lin, data, shards, method, fcfg)
            row["fed_ray_s"] = time.perf_counter() - t
            row["fed_max_param_diff"] = float((f_local.theta - f_ray.theta).abs().max())
            row["fed_same_bits"] = f_local.final["bits_up"] == f_ray.final["bits_up"]
            rows[str(m)] = {k: round(v, 3) if isinstance(v, float) and "diff" not in k else v
                            for k, v in row.items()}
            runs[m] = {"in process": local, "Ray": on_ray}
    finally:
        eng.close()
        ray.shutdown()
    print(f"\n### Engines: {rounds} rounds x 5 local steps, MLP 64-128-128-10 (Ray init {ray_init:.1f} s)\n")
    print("| agents | in process (s) | Ray, first run incl. actor start (s) | Ray, warm (s) | "
          "max abs param diff | federated ADI: in process / Ray (s) |")
    print("|---|---|---|---|---|---|")
    for m in sizes:
        r = rows[str(m)]
        print(f"| {m} | {r['local_s']:.2f} | {r['ray_first_s']:.1f} | {r['ray_s']:.2f} | "
              f"{r['max_param_diff']:.1e} | {r['fed_local_s']:.2f} / {r['fed_ray_s']:.2f} |")
    curves = {str(m): {name: {"round": r.curves["round"], "merged_acc": r.curves["merged_acc"]}
                       for name, r in by_engine.items()} for m, by_engine in runs.items()}
    return {"rounds": rounds, "sizes": list(sizes), "rows": rows, "curves": curves}


def plot_engines(res: dict[str, Any]) -> Path:
    plt = pyplot()
    rows, sizes = res["rows"], res["sizes"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for k, m in enumerate(sizes):
        for name, c in res["curves"][str(m)].items():
            axes[0].plot(c["round"], c["merged_acc"], color=f"C{k}", marker="o" if name == "Ray" else "x",
                         ms=5, ls="-" if name == "Ray" else ":", label=f"{m} agents, {name}")
    axes[0].set(xlabel="round", ylabel="merged model: test accuracy",
                title="same seed, both engines: the same curves")
    axes[0].legend(fontsize=8)
    axes[0].grid(alpha=0.3)
    pos = np.arange(len(sizes))
    for off, key, label in ((-0.27, "local_s", "in process (vmap)"), (0.0, "ray_s", "Ray actors (warm)"),
                            (0.27, "ray_first_s", "Ray, first run (starts the actors)")):
        axes[1].bar(pos + off, [rows[str(m)][key] for m in sizes], 0.27, label=label)
    axes[1].set_xticks(pos, [f"{m} agents" for m in sizes])
    axes[1].set(ylabel="wall time (s)", yscale="log",
                title=f"{res['rounds']} rounds x 5 local steps (2 cores, shared)")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    return save(fig, IMG / "distributed_engines.png")


PLOTS = {"decentralized": plot_decentralized, "federated": plot_federated, "bits": plot_bits,
         "participation": plot_participation, "engines": plot_engines}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=(*PLOTS, "all"))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=None, help="Override each part's rounds.")
    ap.add_argument("--sizes", default="4,16", help="Agent counts of the engine comparison.")
    ap.add_argument("--plot-only", action="store_true", help="Redraw the figures from the JSON.")
    args = ap.parse_args()
    torch.set_num_threads(1)
    saved = json.loads(OUT_JSON.read_text()) if OUT_JSON.exists() else {}
    parts = tuple(PLOTS) if args.part == "all" else (args.part,)
    for part in parts:
        if args.plot_only:
            print(PLOTS[part](saved[part]))
            continue
        before, t0 = load(), time.perf_counter()
        if part == "decentralized":
            res = decentralized(args.seeds, args.rounds or 200)
        elif part == "federated":
            res = federated(args.seeds, args.rounds or 300)
        elif part == "bits":
            res = bits(args.rounds or 300)
        elif part == "participation":
            res = participation(args.seeds, args.rounds or 300)
        else:
            res = engines(args.rounds or 30, tuple(int(s) for s in args.sizes.split(",")))
        res["machine"] = {"cpus": os.cpu_count(), "load_before": round(before, 1),
                          "load_after": round(load(), 1), "wall_s": round(time.perf_counter() - t0, 1),
                          "torch": torch.__version__}
        print(f"\n({part}: {res['machine']})")
        saved[part] = res
        OUT_JSON.write_text(json.dumps(saved, indent=1, default=float))
        PLOTS[part](res)


if __name__ == "__main__":
    main()
