"""Speed of the black-box service: ask latency, HTTP round trip, concurrent clients.

1. ``ask`` latency of the HOLLM agent with 1,000 observations in 20-D (each ``--proposers``
   entry, default the LLM-free default ``gp-ts`` and ``sobol``; each predictor), in memory and
   through a store-backed Study (SQLite, default agent options). Wall time and the process's
   CPU time per ask are both reported: on a shared machine the wall time grows with the load,
   the CPU time much less.
2. HTTP ask+tell round trip on loopback (``optiforge serve`` in its own process, SQLite store,
   one client).
3. 8 concurrent clients x 100 trials each: throughput, lost and duplicated trials.

    python benchmarks/hollm_speed.py [--repeats 30] [--proposers gp-ts,sobol] [--agent-only]
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from optiforge import create_study  # noqa: E402
from optiforge.agents.hollm import HOLLMAgent  # noqa: E402
from optiforge.agents.hollm.proposers import PROPOSERS  # noqa: E402
from optiforge.blackbox import get_blackbox_task  # noqa: E402


def pct(xs: list[float]) -> str:
    a = np.array(xs) * 1000
    return f"p50 {np.percentile(a, 50):.1f} ms, p90 {np.percentile(a, 90):.1f} ms"


def agent_latency(
    predictor: str, repeats: int, proposer: str = "sobol"
) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of ``repeats`` one-point asks after 1,000 told points (Ackley-20)."""
    task = get_blackbox_task("ackley-20")
    agent = HOLLMAgent(task.space, {"proposer": proposer, "predictor": predictor}, seed=0)
    rng = np.random.default_rng(0)
    for p in task.space.sample(rng, 1000):
        agent.tell(p, task(p))
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        p = agent.ask(1)[0]
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
        agent.tell(p, task(p))
    return wall, cpu


def study_latency(predictor: str, repeats: int, tmp: str) -> list[float]:
    from optiforge.platform.store import Store

    task = get_blackbox_task("ackley-20")
    store = Store(f"sqlite:///{tmp}/study_{predictor}.db")
    study = create_study(task.space, storage=store, agent_options={"predictor": predictor}, seed=0)
    rng = np.random.default_rng(0)
    for p in task.space.sample(rng, 1000):
        study.add_trial(p, task(p))
    study.ask()  # first ask loads 1,000 trials into the agent
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        t = study.ask()[0]
        times.append(time.perf_counter() - t0)
        study.tell(t.id, task(t.params))
    return times


def start_server(tmp: str):
    """``optiforge serve`` in its own process, as deployed (a thread would share the client's GIL)."""
    import subprocess
    import sys
    from pathlib import Path

    import httpx

    from optiforge.platform.store import Store

    db = f"sqlite:///{tmp}/api.db"
    token = Store(db).create_token("bench")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = Path(sys.executable).with_name("optiforge")
    # One owner drives 8 workers at once in `concurrent`: the operator raises the per-owner
    # ask limit (default 2) for it, as SECURITY.md describes.
    srv = subprocess.Popen(
        [
            str(exe),
            "serve",
            "--port",
            str(port),
            "--db",
            db,
            "--log-level",
            "warning",
            "--limit",
            "max_asks_per_owner=8",
            "--limit",
            "max_requests_per_owner=16",
        ],
        env=dict(os.environ, OMP_NUM_THREADS="1"),
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            httpx.get(f"{url}/v1/health", timeout=1.0)
            break
        except httpx.TransportError:
            time.sleep(0.1)
    else:
        srv.terminate()
        raise RuntimeError(f"optiforge serve did not answer on {url} within 30 s")
    return srv, url, token


def http_round_trip(
    url: str, token: str, repeats: int, predictor: str | None
) -> tuple[list[float], list[float]]:
    from optiforge import Client

    task = get_blackbox_task("hartmann-6")
    client = Client(url, token)
    if predictor is None:  # the random agent: the service's own overhead
        study = client.create_study(task.space.to_dict(), agent="random", seed=0)
    else:
        study = client.create_study(
            task.space.to_dict(), agent_options={"predictor": predictor}, seed=0
        )
    for _ in range(10):  # past the initial design
        t = study.ask()[0]
        study.tell(t.id, task(t.params))
    rt, asks = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        t = study.ask()[0]
        t1 = time.perf_counter()
        study.tell(t.id, task(t.params))
        rt.append(time.perf_counter() - t0)
        asks.append(t1 - t0)
    client.close()
    return rt, asks


def concurrent(url: str, token: str) -> dict:
    from optiforge import Client

    client = Client(url, token)
    study = client.create_study(
        {"x": {"type": "float", "low": 0, "high": 1}, "y": {"type": "float", "low": 0, "high": 1}},
        agent_options={"predictor": "random"},
        seed=0,
    )

    def worker(w: int) -> list[int]:
        c = Client(url, token)
        s = c.get_study(study.id)
        ids = []
        for _ in range(100):
            t = s.ask()[0]
            s.tell(t.id, t.params["x"] + t.params["y"])
            ids.append(t.id)
        return ids

    t0 = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        ids = [i for r in pool.map(worker, range(8)) for i in r]
    wall = time.perf_counter() - t0
    trials = study.trials
    return {
        "wall_s": wall,
        "told": len(ids),
        "unique_ids": len(set(ids)),
        "stored": len(trials),
        "complete": sum(t.state == "complete" for t in trials),
        "unique_points": len({(t.params["x"], t.params["y"]) for t in trials}),
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument(
        "--proposers",
        default="gp-ts,sobol",
        help="comma-separated HOLLM proposers for the in-memory ask latency",
    )
    ap.add_argument(
        "--agent-only",
        action="store_true",
        help="only the in-memory ask latency (skip the Study, HTTP and concurrency parts)",
    )
    args = ap.parse_args()
    proposers = [p.strip() for p in args.proposers.split(",") if p.strip()]
    llm_free = [p for p in PROPOSERS if p != "llm"]
    if not proposers or any(p not in llm_free for p in proposers):
        ap.error(
            f"--proposers: expected LLM-free proposers from {', '.join(llm_free)}, got {args.proposers!r}"
        )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        print("\n## ask latency, 1,000 observations in 20-D, one point per ask")
        for proposer in proposers:
            for pred in ("random", "forest", "gp"):
                wall, cpu = agent_latency(pred, args.repeats, proposer)
                print(
                    f"- agent (in memory), proposer {proposer}, predictor {pred}: wall {pct(wall)}; "
                    f"CPU {pct(cpu)}"
                )
        print(f"(load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
        if args.agent_only:
            return
        for pred in ("random", "gp"):
            print(
                f"- Study on SQLite, predictor {pred}: {pct(study_latency(pred, args.repeats, tmp))}"
            )
        srv, url, token = start_server(tmp)
        print("\n## HTTP ask+tell round trip (loopback, SQLite, Hartmann-6)")
        for pred in (None, "random", "gp"):
            rt, asks = http_round_trip(url, token, args.repeats * 3, pred)
            label = (
                "agent random (service overhead)" if pred is None else f"HOLLM, predictor {pred}"
            )
            print(f"- {label}: round trip {pct(rt)}; ask alone {pct(asks)}")
        print("\n## 8 concurrent clients x 100 trials")
        c = concurrent(url, token)
        print(
            f"- {c['told']} told, {c['stored']} stored, {c['complete']} complete, "
            f"{c['unique_ids']} distinct trial ids, {c['unique_points']} distinct points, "
            f"lost {c['told'] - c['complete']}, duplicated {c['told'] - c['unique_ids']}; "
            f"{c['told'] / c['wall_s']:.0f} trials/s ({c['wall_s']:.1f} s)"
        )
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    main()
