"""Batched push-relabel (torch, slack-scan kernel) vs the one-request-at-a-time numpy reference.

Runs both on the same instance (requests in batches of ``--batch-size``, 200 in the paper) and
prints wall time, time per request, cost / OPT and the speed-up. ``--device cuda`` runs the
batched matcher on a GPU, where the slack scan is the Triton kernel; ``--kernel`` adds a
micro-benchmark of the slack scan itself (Triton vs torch on CUDA, torch only on a CPU).

Usage::

    python benchmarks/matching_batched.py --n 400 --bid                    # CPU
    python benchmarks/matching_batched.py --n 2000 --bid --device cuda --kernel   # on a GPU
"""

from __future__ import annotations

import argparse
import time

import torch

from optiforge.heuristics.matching import PushRelabelParams, make_instance, opt_cost, run_method


def kernel_bench(device: str, f: int, n: int, levels: int = 9, reps: int = 20) -> None:
    from optiforge.kernels import slack_scan
    from optiforge.kernels.matching import INVISIBLE

    g = torch.Generator().manual_seed(0)
    dhat = torch.randint(0, 500, (f, n), generator=g, dtype=torch.int32).to(device)
    offset = -torch.randint(0, 50, (levels, n), generator=g, dtype=torch.int32)
    offset[torch.rand(levels, n, generator=g) < 0.2] = INVISIBLE
    offset = offset.to(device)
    rows = torch.arange(f, device=device)
    lv = torch.randint(0, levels, (f,), generator=g).to(device)
    free = (torch.rand(n, generator=g) < 0.3).to(device)
    backends = ["torch"] + (["triton"] if device.startswith("cuda") else [])
    for backend in backends:
        slack_scan(dhat, rows, rows, lv, offset, free, backend=backend)  # compile / warm up
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        start = time.perf_counter()
        for i in range(reps):
            slack_scan(dhat, rows, rows, lv, offset, free, seed=i, backend=backend)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        dt = (time.perf_counter() - start) / reps
        print(f"slack_scan {backend:6s} {f} x {n}: {dt * 1e3:.3f} ms ({f * n * 8 / dt / 1e9:.1f} GB/s of dhat+offset reads)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--data", default="uniform")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=200)
    ap.add_argument("--bid", action="store_true")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--kernel", action="store_true")
    args = ap.parse_args()
    inst = make_instance(args.data, args.n, args.seed)
    opt = opt_cost(inst.cost)
    params = PushRelabelParams(bid=args.bid)
    print(f"{inst.description}; batch {args.batch_size}; bid {args.bid}; torch threads {torch.get_num_threads()}")
    ref = run_method(inst, "pushrelabel", params=params)
    bat = run_method(inst, "pushrelabel-batched", params=params, batch_size=args.batch_size,
                     device=args.device, seed=args.seed)
    for run in (ref, bat):
        s = run.summary(opt)
        print(f"{run.method:20s} {s['total_s']:8.2f} s  {s['ms_per_request_mean']:8.3f} ms/request  "
              f"cost/OPT {s['ratio_to_opt']:.4f}  {run.stats}")
    print(f"speed-up of the batched matcher over the reference: {ref.request_times.sum() / bat.request_times.sum():.2f}x")
    if args.kernel:
        kernel_bench(args.device, f=args.batch_size, n=args.n)


if __name__ == "__main__":
    main()
