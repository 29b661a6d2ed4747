"""The lookahead-2 mask: batched PyTorch fallback (and Triton on a GPU) vs a per-instance Python loop.

B = 512 instances of TSPTW-hard, n = 100, at a mid-tour state (a third of the customers visited
along greedy-C's tour), where most candidates pass the first test so the loop does its full
work. On a CUDA machine the Triton kernel is timed too (``--device cuda``).

    OMP_NUM_THREADS=2 python benchmarks/routing_mask_kernel.py [--device cuda] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from optiforge.heuristics.routing import lazymask as lm
from optiforge.heuristics.routing.instances import generate
from optiforge.kernels import lookahead2_mask


def _timed(fn, repeats: int) -> tuple[float, object]:
    fn()
    t0 = time.perf_counter()
    for _ in range(repeats):
        out = fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / repeats, out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--B", type=int, default=512)
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    B, n = args.B, args.n
    ins = generate("tsptw", "hard", n, B, seed=0)
    # A mid-tour state: follow greedy-C (with LazyMask) for n // 3 steps.
    full = lm.decode(ins, lm.constraint_chooser(ins), budget=None).tours
    steps = n // 3
    rows = np.arange(B)
    current = full[:, steps]
    unvisited = np.ones((B, n), dtype=bool)
    unvisited[rows[:, None], full[:, : steps + 1]] = False
    dist = ins.distances()
    t = np.zeros(B)
    for s in range(1, steps + 1):
        t = np.maximum(t + dist[rows, full[:, s - 1], full[:, s]], ins.tw_start[rows, full[:, s]])
    pending = unvisited.copy()
    pending[:, 0] = True

    def loop() -> np.ndarray:
        out = np.zeros((B, n), dtype=bool)
        for b in range(B):
            e, late, d = ins.tw_start[b], ins.tw_end[b], dist[b]
            pend = [k for k in range(n) if pending[b, k]]
            for j in range(n):
                if not unvisited[b, j]:
                    continue
                a = max(t[b] + d[current[b], j], e[j])
                if a > late[j] + 1e-6:
                    continue
                out[b, j] = all(max(a + d[j, k], e[k]) <= late[k] + 1e-6 for k in pend if k != j)
        return out

    t_loop, want = _timed(loop, 1)
    t_np, got_np = _timed(lambda: lm.lookahead_mask(lm.rules_for(ins), rows, current, t, unvisited, 2), 5)
    dev = torch.device(args.device)
    tensors = (torch.as_tensor(dist, device=dev), torch.as_tensor(ins.tw_start, device=dev),
               torch.as_tensor(ins.tw_end, device=dev), torch.as_tensor(current, device=dev),
               torch.as_tensor(t, device=dev), torch.as_tensor(unvisited, device=dev),
               torch.as_tensor(pending, device=dev))
    t_torch, got_torch = _timed(lambda: lookahead2_mask(*tensors, backend="torch"), 5)
    report = {"B": B, "n": n, "device": str(dev), "torch_threads": torch.get_num_threads(),
              "mean_candidates_allowed": float(want.sum(1).mean()),
              "loop_s": t_loop, "numpy_s": t_np, "torch_s": t_torch,
              "speedup_torch_vs_loop": t_loop / t_torch, "speedup_numpy_vs_loop": t_loop / t_np}
    assert (got_np == want).all() and (got_torch.cpu().numpy() == want).all()
    if dev.type == "cuda":
        t_tri, got_tri = _timed(lambda: lookahead2_mask(*tensors, backend="triton"), 20)
        assert (got_tri.cpu().numpy() == want).all()
        report.update(triton_s=t_tri, speedup_triton_vs_torch=t_torch / t_tri)
    print(json.dumps(report, indent=2))
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
