"""DEFT vs a single expert (GATES) vs heuristics on dynamic cloud workflow scheduling.

Writes docs/benchmarks/scheduling.json and scheduling.png; docs/benchmarks/scheduling.md
records the numbers. CPU budget knobs (defaults fit about an hour on 2 shared cores)::

    python benchmarks/scheduling.py --g1 20 --g2 30 --workflows 2 --per-gamma 1 --workers 2

Measures: simulator throughput (heuristic decisions/s, one core); ES generation time with
the local and Ray executors (2 workers, population 40); two-stage ES training of DEFT (graph
gate) and its linear / MLP gate ablations (sharing one stage 1) and of the single expert
(same total generations, on mixed gammas); cost of every method on the fixed test instances
of S / M / L (``per-gamma`` instances for each of the seven test gammas); latency per decision.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from optiforge.heuristics.scheduling import (
    BASELINES,
    TEST_GAMMAS,
    PriorityPolicy,
    holdout_instances,
    simulate,
)

OUT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"


def _eval_job(job: tuple[str, bytes | None, str, float, int]) -> dict[str, float]:
    """One (method, scale, gamma, instance) evaluation; runs in an executor worker."""
    import io

    import torch

    from optiforge.heuristics.scheduling.policy import DeftConfig, DeftPolicy

    method, blob, scale, gamma, k = job
    torch.set_num_threads(1)
    inst = holdout_instances(scale, gamma, n=k + 1)[k]
    if blob is None:
        policy = PriorityPolicy(BASELINES[method])
    else:
        saved = torch.load(io.BytesIO(blob), weights_only=True)
        policy = DeftPolicy(DeftConfig(**saved["config"]))
        policy.load_state_dict(saved["state"])
    t0 = time.perf_counter()
    r = simulate(inst, policy)
    dt = time.perf_counter() - t0
    return {"cost": r.cost, "vm_cost": r.vm_cost, "penalty": r.penalty, "n_late": r.n_late,
            "decisions": r.decisions, "seconds": dt}


def _blob(policy) -> bytes:  # noqa: ANN001 - a DeftPolicy
    import io

    import torch

    buf = io.BytesIO()
    torch.save({"config": policy.config.to_dict(), "state": policy.state_dict()}, buf)
    return buf.getvalue()


def throughput() -> dict[str, float]:
    insts = holdout_instances("S", 1.5, n=5)
    out = {}
    for name, fn in BASELINES.items():
        t0 = time.perf_counter()
        d = sum(simulate(i, PriorityPolicy(fn)).decisions for i in insts)
        out[name] = d / (time.perf_counter() - t0)
    return out


def es_generation_times(workers: int, workflows: int) -> dict[str, float]:
    from optiforge.heuristics.scheduling.policy import DeftConfig
    from optiforge.heuristics.scheduling.train import ESConfig, train_deft
    from optiforge.platform.executors import make_executor

    es = ESConfig(population=40, workflows=workflows, seed=0)
    out = {}
    for name in ("local", "ray"):
        try:
            with make_executor(name, workers=workers) as ex:
                train_deft(DeftConfig(1, None), (0, 1), es, executor=ex)  # warm the workers
                t0 = time.perf_counter()
                train_deft(DeftConfig(1, None), (0, 1), es, executor=ex)
                out[name] = time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001 - Ray missing: the row says so
            out[name] = f"unavailable: {exc}"
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--g1", type=int, default=20, help="ES generations per stage-1 expert")
    ap.add_argument("--g2", type=int, default=30, help="ES generations of stage 2")
    ap.add_argument("--population", type=int, default=40)
    ap.add_argument("--workflows", type=int, default=2, help="workflows per training instance")
    ap.add_argument("--per-gamma", type=int, default=1, help="test instances per gamma and scale")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--scales", default="SML")
    ap.add_argument("--gammas", default=",".join(map(str, TEST_GAMMAS)), help="test gammas (comma-separated)")
    args = ap.parse_args()
    gammas = [float(g) for g in args.gammas.split(",")]

    from rich.progress import Progress

    from optiforge.heuristics.scheduling.policy import DeftConfig
    from optiforge.heuristics.scheduling.train import ESConfig, TrainState, train_deft
    from optiforge.platform.executors import make_executor

    report: dict = {"args": vars(args), "machine": "2-core shared CPU, no GPU"}
    OUT.mkdir(parents=True, exist_ok=True)

    def dump() -> None:  # after every phase: a long run killed later still leaves its numbers
        (OUT / "scheduling.json").write_text(json.dumps(report, indent=1))
    report["throughput_decisions_per_s"] = throughput()
    print("throughput", report["throughput_decisions_per_s"], flush=True)
    dump()
    report["es_generation_s"] = es_generation_times(args.workers, args.workflows)
    print("es generation", report["es_generation_s"], flush=True)
    dump()

    es = ESConfig(population=args.population, workflows=args.workflows, seed=0)
    models = {}
    training: dict[str, list] = {}

    class Keep:  # a Checkpointer that only remembers the latest state in memory
        data = None

        def save(self, name, data):
            self.data = data

        def latest(self):
            return self.data

    with make_executor("local", workers=args.workers) as ex, Progress() as bar:
        def run(label, config, gens, **kw):
            h = bar.add_task(label, total=None)
            hist = []

            def cb(done, total, stats):
                hist.append(stats)
                bar.update(h, completed=done, total=total)
            t0 = time.perf_counter()
            keep = Keep()
            policy = train_deft(config, gens, es, executor=ex, progress=cb, checkpointer=keep, **kw)
            training[label] = {"history": hist, "seconds": time.perf_counter() - t0}
            models[label] = policy
            report.setdefault("training", {})[label] = {
                "seconds": training[label]["seconds"], "cost_mean": [x["cost_mean"] for x in hist]}
            print("trained", label, f"{training[label]['seconds']:.0f} s", flush=True)
            dump()
            return keep
        keep = run("DEFT (graph gate)", DeftConfig(4, "graph"), (args.g1, args.g2))
        stage1 = TrainState.from_bytes(keep.data).experts
        run("DEFT + linear gate", DeftConfig(4, "linear"), (args.g1, args.g2), experts=stage1)
        run("DEFT + MLP gate", DeftConfig(4, "mlp"), (args.g1, args.g2), experts=stage1)
        run("single expert (GATES)", DeftConfig(1, None), (0, 4 * args.g1 + args.g2))

        jobs = []
        for scale in args.scales:
            for g in gammas:
                for k in range(args.per_gamma):
                    jobs += [(m, None, scale, g, k) for m in BASELINES]
                    jobs += [(label, _blob(p), scale, g, k) for label, p in models.items()]
        h = bar.add_task("evaluate", total=len(jobs))
        results = []
        for lo in range(0, len(jobs), 2 * args.workers):
            results += ex.map(_eval_job, jobs[lo:lo + 2 * args.workers])
            bar.update(h, completed=len(results))

    table: dict[str, dict[str, float]] = {}
    latency: dict[str, float] = {}
    for (method, _, scale, _g, _k), r in zip(jobs, results, strict=True):
        table.setdefault(method, {}).setdefault(scale, []).append(r["cost"])
        latency.setdefault(method, []).append(r["seconds"] / r["decisions"])
    report["cost"] = {m: {s: float(np.mean(v)) for s, v in by.items()} for m, by in table.items()}
    report["late_workflows"] = {}
    for (method, _, scale, _g, _k), r in zip(jobs, results, strict=True):
        report["late_workflows"].setdefault(method, {}).setdefault(scale, 0)
        report["late_workflows"][method][scale] += r["n_late"]
    report["latency_s_per_decision"] = {m: float(np.mean(v)) for m, v in latency.items()}
    report["training"] = {k: {"seconds": v["seconds"],
                              "cost_mean": [h["cost_mean"] for h in v["history"]]} for k, v in training.items()}
    dump()
    for m, by in report["cost"].items():
        print(f"{m:24s}", "  ".join(f"{s}: {c:8.2f}" for s, c in by.items()),
              f"  latency {1000 * report['latency_s_per_decision'][m]:.2f} ms", flush=True)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(1, 2, figsize=(11, 4))
        for label, v in training.items():
            ax[0].plot([h["cost_mean"] for h in v["history"]], label=label)
        ax[0].set(xlabel="ES generation (stage 1 then 2)", ylabel="population mean cost ($)", yscale="log",
                  title="training")
        ax[0].legend(fontsize=7)
        methods = list(report["cost"])
        x = np.arange(len(args.scales))
        for i, m in enumerate(methods):
            ax[1].bar(x + i / (len(methods) + 1), [report["cost"][m][s] for s in args.scales],
                      width=1 / (len(methods) + 1), label=m)
        ax[1].set(xticks=x + 0.4, xticklabels=list(args.scales), ylabel="mean cost ($)", yscale="log",
                  title="test cost (lower is better)")
        ax[1].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(OUT / "scheduling.png", dpi=110)
    except ImportError:
        pass




def render(path: Path = OUT / "scheduling.json") -> str:
    """The markdown tables of a finished run (pasted into docs/benchmarks/scheduling.md)."""
    r = json.loads(path.read_text())
    scales = r["args"]["scales"]
    lines = ["| method | " + " | ".join(scales) + " | late workflows | ms / decision |",
             "|---|" + "---|" * (len(scales) + 2)]
    for m, by in r["cost"].items():
        late = sum(r["late_workflows"][m].values())
        lines.append(f"| {m} | " + " | ".join(f"{by[s]:.2f}" for s in scales)
                     + f" | {late} | {1000 * r['latency_s_per_decision'][m]:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
