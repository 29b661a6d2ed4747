"""Does online GRPO make the bundled INT4 model write better heuristics? (CALM, issue 3 part 5)

Runs the CALM-style evolution agent on online bin packing with the bundled SmolLM2-135M-Instruct
(NF4) twice per seed, at an equal LLM-call budget (same rounds, G samples each):

* ``none``: the frozen model (verbal guidance only);
* ``grpo``: the same, plus a :class:`~optiforge.agents.evolution.grpo.GRPOLearner` update on the
  last ``--rl-every`` rounds' (prompt, responses, CALM rewards) -- numerical guidance. The
  adapter is trained in place, so the next round samples from the updated policy.

Programs are evaluated in the platform's sandbox (``LocalExecutor``); duplicates and
unparsable responses are not re-run. Reported per round (mean over seeds): mean CALM reward of
the G responses and the valid-program rate; per run: the best train gap and that program's
gap on the held-out test split. Figures: a markdown table on stdout, raw results as JSON, and
a PNG of reward / valid rate vs round.

Usage::

    python benchmarks/calm_reward.py --seeds 3 --rounds 8 --rl-every 1 --max-new-tokens 160
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROOT = Path(__file__).resolve().parents[1]


def _evaluate(executor, task: str, programs, cache: dict) -> list:
    """Evaluations for one round's programs: parse failures invalid, known hashes reused."""
    from optiforge.types import Evaluation

    todo = {p.hash: p.code for p in programs if p.code is not None and p.hash not in cache}
    if todo:
        for h, ev in zip(todo, executor.evaluate(task, list(todo.values()), "train"), strict=True):
            cache[h] = ev
    out = []
    for p in programs:
        if p.code is None:
            out.append(Evaluation.invalid(p.error or "no program in the response"))
        else:
            out.append(cache[p.hash])
    return out


def run_one(arm: str, seed: int, args, llm, executor, partial: Path | None = None) -> dict:
    """One campaign of ``args.rounds`` rounds; returns per-round and final figures.

    With ``partial``, the rounds so far are rewritten there after every round (long CPU runs
    can be inspected, or cut short, without losing them).
    """
    from optiforge.agents.evolution import EvolutionAgent, EvolutionConfig, Proposal
    from optiforge.heuristics import get_task

    task = get_task(args.task)
    cfg = EvolutionConfig(samples_per_prompt=args.G, max_new_tokens=args.max_new_tokens,
                          temperature=args.temperature)
    agent = EvolutionAgent(task, llm, cfg, seed=seed)
    learner = None
    if arm == "grpo":
        from optiforge.agents.evolution.grpo import GRPOLearner

        learner = GRPOLearner(llm, seed=seed, lr=args.lr, beta=args.beta, temperature=args.temperature)
    cache: dict = {}
    seeds = agent.initial_programs()
    agent.observe(Proposal(round=0, operator="seed", prompt="", parents=[], completions=[],
                           programs=seeds), _evaluate(executor, task.name, seeds, cache))
    rounds, updates, pending = [], [], []
    for r in range(args.rounds):
        t0 = time.perf_counter()
        proposal = agent.propose()
        t_gen = time.perf_counter() - t0
        evals = _evaluate(executor, task.name, proposal.programs, cache)
        rewards = agent.observe(proposal, evals)
        rounds.append({
            "round": r, "operator": proposal.operator, "mean_reward": statistics.fmean(rewards),
            "valid_rate": sum(e.valid for e in evals) / len(evals),
            "best_train": agent.best.score if agent.best else None, "gen_s": t_gen,
        })
        if learner is not None:
            pending.append((llm.format_prompt(proposal.prompt, cfg.system),
                            list(proposal.completions), list(rewards)))
            if (r + 1) % args.rl_every == 0:
                t0 = time.perf_counter()
                stats = learner.step(pending)
                stats["time_s"] = time.perf_counter() - t0
                stats["after_round"] = r
                updates.append(stats)
                pending = []
        print(f"  [{arm} seed={seed}] round {r}: {proposal.operator:<14} reward "
              f"{rounds[-1]['mean_reward']:+.3f} valid {rounds[-1]['valid_rate']:.2f} "
              f"best {rounds[-1]['best_train']} gen {t_gen:.0f}s"
              + (f" | RL step {updates[-1]['step']} kl {updates[-1]['kl']:.4f} "
                 f"{updates[-1]['time_s']:.0f}s" if learner is not None and updates
                 and updates[-1]["after_round"] == r else ""), flush=True)
        if partial is not None:
            partial.write_text(json.dumps({"arm": arm, "seed": seed, "rounds": rounds,
                                           "updates": updates}, indent=1))
    best = agent.best
    test_gap = None
    if best is not None:
        test_gap = executor.evaluate(task.name, [best.code], "test")[0].score
    return {"arm": arm, "seed": seed, "rounds": rounds, "updates": updates,
            "best_train": best.score if best else None, "best_test": test_gap,
            "best_operator": best.operator if best else None}


def summarise(results: list[dict], args) -> str:
    lines = []
    arms = ("none", "grpo")
    by_arm = {a: [r for r in results if r["arm"] == a] for a in arms}
    lines.append("| round (runs) | " + " | ".join(f"reward {a}" for a in arms) + " | "
                 + " | ".join(f"valid {a}" for a in arms) + " |")
    lines.append("|---" * (1 + 2 * len(arms)) + "|")
    def at(a: str, r: int, key: str) -> list[float]:
        # Cut-short runs (partial files) contribute to the rounds they reached.
        return [x["rounds"][r][key] for x in by_arm[a] if len(x["rounds"]) > r]

    for r in range(args.rounds):
        rew = [statistics.fmean(at(a, r, "mean_reward")) for a in arms]
        val = [statistics.fmean(at(a, r, "valid_rate")) for a in arms]
        ns = "/".join(str(len(at(a, r, "valid_rate"))) for a in arms)
        lines.append(f"| {r} ({ns}) | " + " | ".join(f"{v:+.3f}" for v in rew) + " | "
                     + " | ".join(f"{v:.2f}" for v in val) + " |")
    half = args.rounds // 2
    lines.append("")
    lines.append("| arm | reward 1st half | reward 2nd half | valid 1st half | valid 2nd half | "
                 "best train gap % | best test gap % | gen s/round | RL s/update | final KL |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for a in arms:
        xs = by_arm[a]

        def seg(key: str, lo: int, hi: int, xs=xs) -> float:
            return statistics.fmean(x["rounds"][i][key] for x in xs
                                    for i in range(lo, min(hi, len(x["rounds"]))))

        def ms(vals: list) -> str:
            vals = [v for v in vals if v is not None]
            if not vals:
                return "n/a"
            sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
            return f"{statistics.fmean(vals):.3f} ± {sd:.3f}"

        gen = statistics.fmean(r["gen_s"] for x in xs for r in x["rounds"])
        n_runs = f"{len(xs)} ({sum(len(x['rounds']) for x in xs)} rounds)"
        upd = [u for x in xs for u in x["updates"]]
        rl_s = f"{statistics.fmean(u['time_s'] for u in upd):.1f}" if upd else "-"
        kl = ms([x["updates"][-1]["kl"] for x in xs if x["updates"]]) if upd else "-"
        lines.append(
            f"| {a}, {n_runs} | {seg('mean_reward', 0, half):+.3f} | {seg('mean_reward', half, args.rounds):+.3f} | "
            f"{seg('valid_rate', 0, half):.2f} | {seg('valid_rate', half, args.rounds):.2f} | "
            f"{ms([x.get('best_train') for x in xs])} | {ms([x.get('best_test') for x in xs])} | "
            f"{gen:.1f} | {rl_s} | {kl} |"
        )
    return "\n".join(lines)


def plot(results: list[dict], args, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for arm, color in (("none", "tab:gray"), ("grpo", "tab:blue")):
        xs = [r for r in results if r["arm"] == arm]
        if not xs:
            continue
        for ax, key in zip(axes, ("mean_reward", "valid_rate"), strict=True):
            m = np.array([[x["rounds"][i][key] if i < len(x["rounds"]) else np.nan
                           for i in range(args.rounds)] for x in xs])
            mean, sd = np.nanmean(m, 0), np.nanstd(m, 0)
            rounds = np.arange(args.rounds)
            ax.plot(rounds, mean, "-o", color=color, label=f"{arm} (mean of {len(xs)} seeds)")
            ax.fill_between(rounds, mean - sd, mean + sd, color=color, alpha=0.15)
    axes[0].set(xlabel="round", ylabel="mean CALM reward of the G responses", title="reward vs round")
    axes[1].set(xlabel="round", ylabel="valid-program rate", title="valid programs vs round",
                ylim=(-0.05, 1.05))
    axes[0].legend(fontsize=8)
    fig.suptitle(f"CALM on {args.task}, SmolLM2-135M ({args.quantization}), G={args.G}, RL every {args.rl_every} round(s)",
                 fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="binpacking")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds run: first-seed .. first-seed+seeds-1")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--G", type=int, default=4)
    ap.add_argument("--rl-every", type=int, default=1)
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--beta", type=float, default=0.04)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--max-new-tokens", type=int, default=160)
    ap.add_argument("--arms", default="none,grpo")
    ap.add_argument("--quantization", default="int4", choices=("int4", "int8", "none"))
    ap.add_argument("--threads", type=int, default=0,
                    help="torch threads (0: torch's default); 1 is fastest on oversubscribed cores")
    ap.add_argument("--json", type=Path, default=ROOT / "docs" / "benchmarks" / "calm_reward.json")
    ap.add_argument("--png", type=Path, default=ROOT / "docs" / "img" / "calm_reward.png")
    ap.add_argument("--merge", type=Path, nargs="+", default=None,
                    help="only summarise and plot these JSON result files (e.g. one per arm)")
    args = ap.parse_args(argv)
    if args.merge:
        results = []
        for f in args.merge:
            data = json.loads(f.read_text())
            # A ".partial-<arm>-<seed>.json" file holds one (possibly unfinished) run.
            results.extend(data["results"] if "results" in data else [data])
        args.rounds = max(len(r["rounds"]) for r in results)
        print(summarise(results, args))
        plot(results, args, args.png)
        print(f"\nplot {args.png}")
        return 0
    for name in ("seeds", "rounds", "G", "rl_every", "max_new_tokens"):
        if getattr(args, name) < 1:
            print(f"error: --{name.replace('_', '-')} must be >= 1", file=sys.stderr)
            return 2
    arms = args.arms.split(",")
    if not set(arms) <= {"none", "grpo"}:
        print("error: --arms takes none,grpo", file=sys.stderr)
        return 2

    if args.threads > 0:
        import torch

        torch.set_num_threads(args.threads)
    from optiforge.platform.executors import make_executor
    from optiforge.platform.llm.transformers_backend import TransformersLLM
    from optiforge.platform.sandbox.limits import SandboxLimits

    results: list[dict] = []
    started = time.perf_counter()
    # Bin-packing heuristics run in well under a second; a 10 s limit bounds runaway loops.
    with make_executor("local", workers=2, limits=SandboxLimits(timeout_s=10.0)) as executor:
        frozen = TransformersLLM("smollm2", quantization=args.quantization, device="cpu") if "none" in arms else None
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for arm in arms:
                # The RL arm trains its model in place: every RL run starts from a fresh copy.
                llm = frozen if arm == "none" else TransformersLLM("smollm2", quantization=args.quantization,
                                                                  device="cpu")
                partial = args.json.with_name(f"{args.json.stem}.partial-{arm}-{seed}.json")
                results.append(run_one(arm, seed, args, llm, executor, partial))
                args.json.parent.mkdir(parents=True, exist_ok=True)
                args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()},
                                                 "results": results}, indent=1))
    elapsed = time.perf_counter() - started
    if {r["arm"] for r in results} == {"none", "grpo"}:
        print(summarise(results, args))
        plot(results, args, args.png)
    print(f"\nwall time {elapsed / 60:.1f} min; raw results {args.json}; plot {args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
