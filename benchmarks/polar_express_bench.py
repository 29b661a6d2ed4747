"""Polar Express vs Newton-Schulz (Jordan, You) vs SVD: accuracy per step count and time per call.

Run: ``python benchmarks/polar_express_bench.py [--quick]``. Prints markdown tables and writes
docs/img/optim_polar_error.png. Runs on CUDA too (timings then use the Triton kernel path).
"""

from __future__ import annotations

import argparse
import statistics
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from optiforge.optim.polar import POLAR_EXPRESS, newton_schulz, polar_express, svd_polar  # noqa: E402

METHODS = {
    "polar_express": lambda g, s, dt: polar_express(g, s, dt),
    "jordan": lambda g, s, dt: newton_schulz(g, s, "jordan", dt),
    "you": lambda g, s, dt: newton_schulz(g, s, "you", dt),
}


def spectrum_matrix(n: int, lo: float, seed: int, device: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    u, _ = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))
    v, _ = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))
    s = torch.logspace(torch.log10(torch.tensor(lo)).item(), 0, n, dtype=torch.float64)
    return ((u * s) @ v.T).float().to(device)


def plain_unfused(g: torch.Tensor, steps: int = 5, dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """The reference-style loop (three separate matmuls and elementwise ops per step)."""
    x = g.to(dtype)
    x = x / (x.norm() * 1.01 + 1e-7)
    for a, b, c in POLAR_EXPRESS[:steps]:
        A = x @ x.mT
        B = b * A + c * A @ A
        x = a * x + B @ x
    return x


def timeit(fn, reps: int, device: str) -> float:
    fn()
    times = []
    for _ in range(reps):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller matrices, fewer repeats")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    n_acc = 256 if args.quick else 512
    results: dict[tuple[float, str, str], list[float]] = {}
    for lo in (1e-3, 1e-6):
        g = spectrum_matrix(n_acc, lo, 0, device)
        ref = svd_polar(g.double()).float()
        for dt in (torch.float32, torch.bfloat16):
            for name, fn in METHODS.items():
                errs = []
                for steps in range(1, 9):
                    x = fn(g, steps, dt).float()
                    errs.append(((x - ref).norm() / ref.norm()).item())
                results[(lo, str(dt).replace("torch.", ""), name)] = errs
    print(f"## Relative error ||X - UV^T||_F / ||UV^T||_F, {n_acc}x{n_acc}, log-spaced spectrum\n")
    print("| range | dtype | method | " + " | ".join(f"{s} steps" for s in range(1, 9)) + " |")
    print("|---|---|---|" + "---|" * 8)
    for (lo, dt, name), errs in results.items():
        print(f"| [{lo:g}, 1] | {dt} | {name} | " + " | ".join(f"{e:.4f}" for e in errs) + " |")
    ok = all(
        results[(1e-3, dt, "polar_express")][s - 1]
        < min(results[(1e-3, dt, "jordan")][s - 1], results[(1e-3, dt, "you")][s - 1])
        for dt in ("float32", "bfloat16") for s in range(5, 9)
    )
    print(f"\nGoal (Polar Express below both baselines at every step count >= 5 in [1e-3, 1]): {ok}\n")

    fig, axes = plt.subplots(1, 4, figsize=(18, 4), sharey=True)
    for ax, (lo, dt) in zip(axes, [(1e-3, "float32"), (1e-3, "bfloat16"), (1e-6, "float32"), (1e-6, "bfloat16")], strict=True):
        for name in METHODS:
            ax.semilogy(range(1, 9), results[(lo, dt, name)], marker="o", label=name)
        ax.set_title(f"spectrum [{lo:g}, 1], {dt}")
        ax.set_xlabel("steps")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("relative error vs SVD polar")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig("docs/img/optim_polar_error.png", dpi=110)

    print(f"## Time per call ({device}, {torch.get_num_threads()} threads, median)\n")
    print("| size | SVD polar (fp32) | plain unfused 5-step (bf16) | kernel path 5-step (bf16) | kernel path 5-step (fp32) | SVD / plain | SVD / kernel (bf16) |")
    print("|---|---|---|---|---|---|---|")
    reps = 3 if args.quick else 7
    for n in ((256, 512) if args.quick else (512, 1024)):
        g = torch.randn(n, n, device=device)
        t_svd = timeit(lambda g=g: svd_polar(g), reps, device)
        t_plain = timeit(lambda g=g: plain_unfused(g), reps, device)
        t_k16 = timeit(lambda g=g: polar_express(g, 5, torch.bfloat16), reps, device)
        t_k32 = timeit(lambda g=g: polar_express(g, 5, torch.float32), reps, device)
        print(f"| {n}x{n} | {t_svd * 1e3:.1f} ms | {t_plain * 1e3:.1f} ms | {t_k16 * 1e3:.1f} ms | "
              f"{t_k32 * 1e3:.1f} ms | {t_svd / t_plain:.2f}x | {t_svd / t_k16:.2f}x |")


if __name__ == "__main__":
    main()
