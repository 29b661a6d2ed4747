"""Several campaigns on one machine: wall time of N concurrent default campaigns vs one alone.

Each campaign is a real ``optiforge campaign run`` process (own ``OPTIFORGE_HOME``, seed i)
with the default LLM and sandbox workers. Two thread policies are compared:

- ``budget``: the platform's default (``OPTIFORGE_THREADS`` = half the cores, OpenMP waits
  passively);
- ``per-core``: every process takes one thread per core and OpenMP spins (what the platform
  did before: torch's default threads, ``OMP_WAIT_POLICY=active``).

Usage: python benchmarks/concurrent_campaigns.py [--n 3] [--budget 4] [--max-new-tokens 128]
       [--rl none] [--policies budget,per-core]
Prints one JSON line per (policy, concurrency) with each campaign's wall time and the load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POLICIES = {
    "budget": {},
    "per-core": {"OPTIFORGE_THREADS": str(len(os.sched_getaffinity(0))), "OMP_WAIT_POLICY": "active"},
}


def launch(n: int, policy: str, args: argparse.Namespace) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OPTIFORGE_THREADS")}
    env.update(POLICIES[policy])
    env["PYTHONPATH"] = str(ROOT)
    env["HF_HUB_OFFLINE"] = "1"
    procs = []
    load0 = os.getloadavg()[0]
    for i in range(n):
        home = tempfile.mkdtemp(prefix="optiforge-conc-")
        cmd = [sys.executable, "-m", "optiforge.platform.cli", "campaign", "run", "--task", "binpacking",
               "--budget", str(args.budget), "--seed", str(i), "--max-new-tokens", str(args.max_new_tokens),
               "--rl", args.rl]
        procs.append((time.perf_counter(), subprocess.Popen(cmd, env={**env, "OPTIFORGE_HOME": home},
                                                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)))
    walls, codes = [], []
    for t0, p in procs:
        _, err = p.communicate()
        walls.append(round(time.perf_counter() - t0, 1))
        codes.append(p.returncode)
        if p.returncode != 0:
            print(err.decode()[-2000:], file=sys.stderr)
    return {"policy": policy, "concurrent": n, "wall_s": walls, "exit_codes": codes,
            "load_avg_before": round(load0, 1), "load_avg_after": round(os.getloadavg()[0], 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--budget", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--rl", default="none", choices=["none", "grpo", "auto"])
    ap.add_argument("--policies", default="budget,per-core")
    args = ap.parse_args()
    policies = [p for p in args.policies.split(",") if p]
    if args.n < 1 or not policies or set(policies) - set(POLICIES):
        print(f"error: --n must be >= 1 and --policies a comma list of {sorted(POLICIES)}", file=sys.stderr)
        sys.exit(2)
    for policy in policies:
        for n in (1, args.n):
            print(json.dumps(launch(n, policy, args)), flush=True)


if __name__ == "__main__":
    main()
