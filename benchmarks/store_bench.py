"""Store benchmark: latency of the writes and reads campaigns and studies make, SQLite vs
PostgreSQL, plus a concurrency check (8 processes x 100 ask/tell trials: none lost or doubled).

Prints a markdown table and writes docs/img/store_latency.png.

Usage: python benchmarks/store_bench.py [--postgres URL] [--rounds 60] [--asks 300]
(``--postgres`` defaults to $OPTIFORGE_TEST_POSTGRES_URL; without it only SQLite runs.)
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import tempfile
import time
from pathlib import Path

from optiforge.platform.store import CandidateIn, LLMCallIn, Store

ROOT = Path(__file__).resolve().parents[1]
CODE = "def priority(item, bins):\n" + "    x = bins - item  # some heuristic line\n" * 45  # ~2 KB


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def _median_ms(fn, repeats: int = 5) -> float:
    """Median wall time of ``fn()`` in ms (the machine is shared: single shots are noisy)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def _round(r: int) -> tuple[list[CandidateIn], list[LLMCallIn], dict]:
    calls = [LLMCallIn("p" * 2000, CODE, 500, 400, "smollm2", "e1", 0.5) for _ in range(8)]
    cands = [CandidateIn(f"{r:06d}{i:02d}", "e1", CODE, "idea", ["a", "b"], "train", True,
                         float(i), {"bins": 10.0, "gap": 1.0}, None, 0.2, 0.5, i) for i in range(8)]
    state = {"pool": [{"code": CODE, "score": float(i)} for i in range(20)], "rng": list(range(600))}
    return cands, calls, state


def bench_backend(url: str, rounds: int, asks: int) -> dict[str, float]:
    out: dict[str, float] = {}
    Store(url).close()  # create / migrate once
    out["open existing (ms)"] = _median_ms(lambda: Store(url).close())
    store = Store(url)

    cid = store.create_campaign(task="binpacking", agent="evolution", llm="smollm2",
                                budget=10**6, seed=0, executor="local")
    lat = []
    for r in range(rounds):
        cands, calls, state = _round(r)
        t0 = time.perf_counter()
        store.record_round(cid, r, cands, calls, state)
        lat.append(time.perf_counter() - t0)
    out["record_round p50 (ms)"] = statistics.median(lat) * 1e3
    out["record_round p95 (ms)"] = _pct(lat, 0.95) * 1e3
    n = len(store.candidates(cid))
    out[f"candidates() of {n} (ms)"] = _median_ms(lambda: store.candidates(cid))
    out["best_candidates(k=5) (ms)"] = _median_ms(lambda: store.best_candidates(cid, k=5))

    sid = store.create_study("bench", {"x": {"type": "float", "low": 0, "high": 1}})
    lat = []
    for i in range(asks):
        t0 = time.perf_counter()
        (t,) = store.create_trials(sid, [{"x": i / asks}])
        store.finish_trial(sid, t.id, float(i))
        lat.append(time.perf_counter() - t0)
    out["ask+tell (create_trials+finish_trial) p50 (ms)"] = statistics.median(lat) * 1e3
    out["ask+tell p95 (ms)"] = _pct(lat, 0.95) * 1e3
    store.create_trials(sid, [{"x": 0.5}] * max(0, 1000 - asks))
    n = len(store.trials(sid))
    out[f"trials() of {n} (ms)"] = _median_ms(lambda: store.trials(sid))

    out.update(concurrent(url, store.create_study("bench", {"x": {}}), store))
    store.close()
    return out


def _client(url: str, sid: str, n: int, barrier, results) -> None:
    store = Store(url)
    barrier.wait()
    done = []
    for i in range(n):
        (t,) = store.create_trials(sid, [{"i": i}])
        done.append(store.finish_trial(sid, t.id, float(i)).number)
    results.put(done)


def concurrent(url: str, sid: str, store: Store, procs: int = 8, n: int = 100) -> dict[str, float]:
    ctx = mp.get_context("fork")
    barrier, results = ctx.Barrier(procs + 1), ctx.Queue()
    ps = [ctx.Process(target=_client, args=(url, sid, n, barrier, results)) for _ in range(procs)]
    for p in ps:
        p.start()
    barrier.wait()
    t0 = time.perf_counter()
    numbers = sorted(x for _ in ps for x in results.get(timeout=600))
    wall = time.perf_counter() - t0
    for p in ps:
        p.join()
    stored = [t.number for t in store.trials(sid, states=["complete"])]
    expected = list(range(procs * n))
    lost_or_dup = len(set(expected) ^ set(numbers)) + (len(numbers) - len(set(numbers)))
    assert stored == expected and lost_or_dup == 0, "lost or duplicated trials"
    return {f"{procs} procs x {n} ask+tell: wall (s)": wall,
            "  throughput (trials/s)": procs * n / wall,
            "  lost or duplicated": float(lost_or_dup)}


def sqlite_synchronous_cost(asks: int) -> dict[str, float]:
    """ask+tell p50 with synchronous=NORMAL (default; crash-safe) vs FULL (power-loss-safe)."""
    out = {}
    for mode in ("NORMAL", "FULL"):
        os.environ["OPTIFORGE_SQLITE_SYNCHRONOUS"] = mode
        store = Store(f"sqlite:///{tempfile.mkdtemp()}/s.db")
        del os.environ["OPTIFORGE_SQLITE_SYNCHRONOUS"]
        sid = store.create_study("bench", {"x": {}})
        lat = []
        for i in range(asks):
            t0 = time.perf_counter()
            (t,) = store.create_trials(sid, [{"x": i}])
            store.finish_trial(sid, t.id, 1.0)
            lat.append(time.perf_counter() - t0)
        out[f"SQLite ask+tell p50, synchronous={mode} (ms)"] = statistics.median(lat) * 1e3
        store.close()
    return out


def plot(results: dict[str, dict[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = ["record_round p50 (ms)", "record_round p95 (ms)",
            "ask+tell (create_trials+finish_trial) p50 (ms)", "ask+tell p95 (ms)"]
    labels = ["record_round\np50", "record_round\np95", "ask+tell\np50", "ask+tell\np95"]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    width = 0.8 / len(results)
    for j, (backend, res) in enumerate(results.items()):
        ax.bar([i + j * width for i in range(len(keys))], [res[k] for k in keys], width, label=backend)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(keys))], labels)
    ax.set_ylabel("ms")
    ax.set_title("Store write latency (2 shared CPU cores)")
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--postgres", default=os.environ.get("OPTIFORGE_TEST_POSTGRES_URL"))
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--asks", type=int, default=300)
    ap.add_argument("--no-plot", action="store_true")
    args = ap.parse_args()
    results = {"SQLite (WAL)": bench_backend(f"sqlite:///{tempfile.mkdtemp()}/bench.db",
                                             args.rounds, args.asks)}
    if args.postgres:
        results["PostgreSQL"] = bench_backend(args.postgres, args.rounds, args.asks)
    extra = sqlite_synchronous_cost(args.asks)
    names = list(results)
    print("| measure | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for k in results[names[0]]:
        print(f"| {k} | " + " | ".join(f"{results[n].get(k, float('nan')):.1f}" for n in names) + " |")
    for k, val in extra.items():
        print(f"| {k} | {val:.1f} |" + " |" * (len(names) - 1))
    if not args.no_plot:
        plot(results, ROOT / "docs" / "img" / "store_latency.png")


if __name__ == "__main__":
    main()
