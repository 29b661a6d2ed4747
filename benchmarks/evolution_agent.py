"""Evolution-agent benchmark: CALM's collapse statistics and the agent's own overhead.

Prints (and writes docs/img/evolution_collapse.png):
1. CALM Eq. 2: with ``C > 1/δ0`` the stagnation counter at collapse is Rayleigh-distributed
   with mean ``sqrt(π / (2 δ0))``. Monte-Carlo means of our collapse rule next to the formula
   for several δ0, and, for the paper's setting (δ0 = 0.0005, C = 15), how often the hard
   bound C is what triggers the restart.
2. Agent overhead per round (prompt building, parsing G = 4 responses, dedup, pool update,
   rewards, collapse check) with a scripted LLM on the real bin-packing task, excluding the
   LLM and the evaluation; goal: median < 5 ms per round, negligible next to generation
   (seconds per round even for the 135M bundled model).
3. Parser throughput (responses per second) on a mix of well-formed and broken responses.

Usage: python benchmarks/evolution_agent.py [--runs 4000] [--rounds 200] [--no-plot]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from pathlib import Path

import numpy as np

from optiforge.agents.evolution import EvolutionAgent, EvolutionConfig, parse_response
from optiforge.agents.evolution.population import collapse_triggered
from optiforge.heuristics import evaluate_in_process, get_task
from optiforge.types import Completion, Evaluation

ROOT = Path(__file__).resolve().parents[1]


def trigger_points(delta0: float, C: int, runs: int, rng: np.random.Generator) -> np.ndarray:
    out = np.empty(runs, dtype=int)
    for i in range(runs):
        c = 0
        while True:
            c += 1
            if collapse_triggered(c, float(rng.random()), delta0, C):
                out[i] = c
                break
    return out


def response(i: int) -> str:
    rng = np.random.default_rng(i)
    a, b = rng.uniform(0, 2, size=2).round(3)
    text = (
        f"{{{{The idea of the algorithm is to weight slack by power {1 + a} and index by {b}}}}}\n"
        "```python\nimport numpy as np\n\n\ndef priority(item, bins):\n"
        f"    # slack term\n    r = bins - item\n    return -r ** {1 + a} - {b} * np.arange(len(bins))\n```\n"
        f"Component: power {1 + a} slack\n"
    )
    if i % 5 == 4:
        return text[: len(text) // 2]  # truncated by max_new_tokens
    if i % 7 == 6:
        return text.replace("def priority(item, bins)", "def priority(item, bins")
    return text


class ScriptedLLM:
    def __init__(self) -> None:
        self.i = 0

    def generate(self, prompts, n=1, **_):
        out = []
        for _p in prompts:
            out.append([Completion(response(self.i + j)) for j in range(n)])
            self.i += n
        return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--no-plot", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(0)

    print("## 1. Collapse trigger point (C = infinity): Monte Carlo vs sqrt(pi / (2 delta0))")
    print("| delta0 | MC mean c_n | formula | rel. error |")
    print("|---|---|---|---|")
    deltas = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02]
    means, formula = [], []
    for d in deltas:
        pts = trigger_points(d, 10**9, args.runs, rng)
        f = math.sqrt(math.pi / (2 * d))
        means.append(pts.mean())
        formula.append(f)
        print(f"| {d} | {pts.mean():.2f} | {f:.2f} | {(pts.mean() - f) / f:+.1%} |")
    paper = trigger_points(0.0005, 15, args.runs, rng)
    aggressive = trigger_points(0.005, 15, args.runs, rng)
    print(f"\nPaper setting (delta0=0.0005, C=15): mean c_n {paper.mean():.2f}, "
          f"triggered by the bound C in {np.mean(paper == 15):.1%} of restarts")
    print(f"Aggressive (delta0=0.005, C=15): mean c_n {aggressive.mean():.2f}, "
          f"by the bound C in {np.mean(aggressive == 15):.1%}")

    print("\n## 2. Agent overhead per round (bin packing, G=4, scripted LLM, evaluation excluded)")
    task = get_task("binpacking")
    agent = EvolutionAgent(task, ScriptedLLM(), EvolutionConfig(), seed=0)
    p = agent.propose()
    agent.observe(p, [evaluate_in_process(task, x.code) for x in p.programs])
    cache: dict[str, Evaluation] = {}
    t_prop, t_obs = [], []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        p = agent.propose()
        t1 = time.perf_counter()
        evs = []
        for x in p.programs:
            if x.code is None:
                evs.append(Evaluation.invalid(x.error or ""))
            else:
                if x.hash not in cache:
                    cache[x.hash] = evaluate_in_process(task, x.code)
                evs.append(cache[x.hash])
        t2 = time.perf_counter()
        agent.observe(p, evs)
        t3 = time.perf_counter()
        t_prop.append(t1 - t0)
        t_obs.append(t3 - t2)
    per_round = [a + b for a, b in zip(t_prop, t_obs, strict=True)]
    print(f"rounds {args.rounds}: propose median {statistics.median(t_prop) * 1e3:.2f} ms, "
          f"observe median {statistics.median(t_obs) * 1e3:.2f} ms, "
          f"total median {statistics.median(per_round) * 1e3:.2f} ms (goal < 5 ms), "
          f"p95 {np.percentile(per_round, 95) * 1e3:.2f} ms")
    print(f"pool size {len(agent.population)}, library {len(agent.population.library)}, "
          f"collapses at rounds {agent.collapse_rounds}, best score {agent.best.score:.3f} "
          f"(best_fit seed {evaluate_in_process(task, task.seeds['best_fit']).score:.3f})")
    print(f"state_dict JSON size: {len(__import__('json').dumps(agent.state_dict())) / 1024:.1f} KiB")

    print("\n## 3. Parser throughput")
    texts = [response(i) for i in range(2000)]
    t0 = time.perf_counter()
    ok = sum(parse_response(t, "priority", ["item", "bins"], task.imports).valid for t in texts)
    dt = time.perf_counter() - t0
    print(f"{len(texts)} responses in {dt:.3f} s = {len(texts) / dt:,.0f} responses/s ({ok} valid)")

    if not args.no_plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
        ax1.loglog(deltas, means, "o", label="Monte Carlo (our collapse rule)")
        grid = np.geomspace(deltas[0], deltas[-1], 50)
        ax1.loglog(grid, np.sqrt(np.pi / (2 * grid)), "-", label=r"$\sqrt{\pi / (2\delta_0)}$ (CALM Eq. 2)")
        ax1.set_xlabel(r"$\delta_0$")
        ax1.set_ylabel(r"mean stagnation counter $c_n$ at collapse")
        ax1.set_title("Collapse point, C = ∞")
        ax1.legend()
        bins = np.arange(1, 17) - 0.5
        ax2.hist(paper, bins=bins, alpha=0.6, label=r"$\delta_0$=0.0005, C=15 (paper)")
        ax2.hist(aggressive, bins=bins, alpha=0.6, label=r"$\delta_0$=0.005, C=15")
        ax2.set_xlabel(r"$c_n$ at collapse")
        ax2.set_ylabel("restarts")
        ax2.set_title("Collapse point with the bound C")
        ax2.legend()
        fig.tight_layout()
        out = ROOT / "docs" / "img" / "evolution_collapse.png"
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=120)
        print(f"\nwrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
