"""Local generation throughput of the bundled SmolLM2-135M-Instruct on this machine.

Measures completion tokens per second through the public ``LLM.generate`` API for a
campaign's workload: one prompt, G = 1, 4, 8 samples (``generate([prompt], n=G)``, temperature
0.8, a fixed seed), for NF4 (bitsandbytes ``Linear4bit``), unquantised fp32, and the in-process
llama.cpp engine (``llamacpp:smollm2``, the bundled Q4_1 GGUF, all G samples in one decode
batch), plus load time and memory footprint, and the time of a LoRA hand-over to llama.cpp
(a rank-16 all-linear adapter, the GRPO learner's default, exported from the transformers twin
and attached). With ``--llama-server`` it also measures :class:`OpenAILLM` against llama.cpp's
server (G concurrent requests).

Writes docs/benchmarks/llm.md and docs/img/llm_throughput.png.

On a CPU shared with other jobs, ``--threads 1`` avoids OpenMP threads spinning against each
other (measured here: a 2-thread fp32 decode step took ~5x longer than a 1-thread one while
the load average was ~10 on 2 cores).

Usage: python benchmarks/llm_throughput.py [--tokens 48] [--repeats 2] [--threads N]
       [--engines nf4,fp32,llamacpp] [--llamacpp-models smollm2,gemma3] [--llama-server]
       [--no-plot] [--no-report]
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing the package
THREADS = [os.cpu_count() or 1]  # set from --threads before torch is imported
PROMPTS = [
    "Write a Python function that returns the n-th Fibonacci number.",
    "Explain what a hash table is in two sentences.",
    "Write a Python function that checks whether a string is a palindrome.",
    "List three uses of linear programming.",
    "Write a Python function that sorts a list of tuples by their second element.",
    "What is the difference between a list and a tuple in Python?",
    "Write a bin-packing heuristic in Python that scores bins by remaining capacity.",
    "Describe the travelling salesman problem briefly.",
]


GROUPS = (1, 4, 8)
CAMPAIGN_PROMPT = PROMPTS[6]


def measure(llm, batch: int, tokens: int, repeats: int) -> tuple[float, int]:
    """Best-of-``repeats`` completion tokens/s for ``batch`` samples of one prompt; returns (tok/s, tokens)."""
    best, count = 0.0, 0
    llm.generate(PROMPTS[:1], max_new_tokens=4, seed=0)  # warm-up (weight packing, allocator)
    for r in range(repeats):
        t0 = time.perf_counter()
        out = llm.generate([CAMPAIGN_PROMPT], n=batch, max_new_tokens=tokens, temperature=0.8, seed=r)
        dt = time.perf_counter() - t0
        n = sum(c.completion_tokens for row in out for c in row)
        if n / dt > best:
            best, count = n / dt, n
    return best, count


def local_rows(tokens: int, repeats: int, engines: list[str]) -> list[dict]:
    from optiforge.platform.llm import TransformersLLM, bundled_checkpoint_dir

    rows = []
    quants = [q for q, e in (("int4", "nf4"), ("none", "fp32")) if e in engines]
    if quants:
        bundled_checkpoint_dir()  # one-off GGUF conversion is not part of the load time
    for quant in quants:
        import torch

        torch.set_num_threads(THREADS[0])
        t0 = time.perf_counter()
        llm = TransformersLLM("smollm2", quantization=quant)
        load = time.perf_counter() - t0
        mb = llm.model.get_memory_footprint() / 1e6
        for batch in GROUPS:
            tps, n = measure(llm, batch, tokens, repeats)
            rows.append({"backend": f"transformers {'NF4' if quant == 'int4' else 'fp32'}", "batch": batch,
                         "tok_s": tps, "tokens": n, "load_s": load, "mem_mb": mb})
            print(rows[-1], flush=True)
        del llm
    return rows


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def llamacpp_rows(tokens: int, repeats: int, model: str = "smollm2") -> tuple[list[dict], list[float]]:
    """The in-process engine's throughput on a bundled model, and (for a model with a training
    twin) hand-over times of a GRPO-sized LoRA."""
    from optiforge.platform.llm.bundled import BUNDLED_MODELS
    from optiforge.platform.llm.llamacpp_backend import LlamaCppLLM

    bundled = BUNDLED_MODELS[model]
    rss0 = _rss_mb()
    t0 = time.perf_counter()
    llm = LlamaCppLLM(model, n_ctx=2048, max_batch_size=max(GROUPS), n_threads=THREADS[0])
    load = time.perf_counter() - t0
    llm.generate([CAMPAIGN_PROMPT], n=max(GROUPS), max_new_tokens=4)  # KV cache and compute buffers in use
    mb = _rss_mb() - rss0  # the GGUF file is mmapped: its pages count once touched
    rows = []
    for batch in GROUPS:
        tps, n = measure(llm, batch, tokens, repeats)
        rows.append({"backend": f"llama.cpp in process {bundled.quantization} (llamacpp:{model})", "batch": batch,
                     "tok_s": tps, "tokens": n, "load_s": load, "mem_mb": mb})
        print(rows[-1], flush=True)
    if not bundled.trainable:  # sampling only: no twin, nothing to hand over
        llm.close()
        return rows, []
    import torch
    from peft import LoraConfig, get_peft_model

    twin = llm._trainer()  # the NF4 twin the GRPO learner trains
    peft_model = get_peft_model(twin.model, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear",
                                                       task_type="CAUSAL_LM"))
    handovers = []
    for k in range(3):
        with torch.no_grad():
            for name, p in peft_model.named_parameters():
                if "lora_B" in name:
                    p.normal_(0, 0.01 * (k + 1))  # a new version each time
        llm.sync_adapter()
        handovers.append(llm.last_handover_s)
    print({"handover_s": handovers}, flush=True)
    llm.close()
    return rows, handovers


def server_rows(tokens: int, repeats: int) -> list[dict]:
    import httpx

    from optiforge.platform.llm import OpenAILLM, bundled_gguf_path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(bundled_gguf_path()),
                             "--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port),
                             "--n_ctx", "2048", "--n_threads", str(THREADS[0]), "--verbose", "false"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        while True:
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.5)
        load = time.perf_counter() - t0
        llm = OpenAILLM(base, "smollm2")
        rows = []
        for batch in GROUPS:
            tps, n = measure(llm, batch, tokens, repeats)
            rows.append({"backend": "llama.cpp server Q4_1 (OpenAILLM)", "batch": batch, "tok_s": tps,
                         "tokens": n, "load_s": load, "mem_mb": bundled_gguf_path().stat().st_size / 1e6})
            print(rows[-1], flush=True)
        return rows
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def machine() -> str:
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{os.cpu_count()} CPU cores ({cpu}), {mem:.0f} GiB RAM, no GPU; torch {torch.__version__}, "
            f"{torch.get_num_threads()} threads")


def notes(rows: list[dict]) -> list[str]:
    """Observations computed from this run's numbers (nothing asserted in advance)."""
    by = {(r["backend"], r["batch"]): r for r in rows}
    out = []
    nf4, fp = by.get(("transformers NF4", 1)), by.get(("transformers fp32", 1))
    if nf4 and fp:
        out.append(f"- NF4 holds the model in {nf4['mem_mb']:.0f} MB vs {fp['mem_mb']:.0f} MB in fp32 "
                   f"({fp['mem_mb'] / nf4['mem_mb']:.1f}x less; embeddings and norms stay fp32).")
        for b in GROUPS:
            q, f = by.get(("transformers NF4", b)), by.get(("transformers fp32", b))
            if q and f:
                out.append(f"- batch {b}: NF4 runs at {q['tok_s'] / f['tok_s']:.2f}x the fp32 speed "
                           "(bitsandbytes' CPU 4-bit kernel vs MKL fp32 GEMM).")
    for backend in dict.fromkeys(r["backend"] for r in rows):
        one, eight = by.get((backend, 1)), by.get((backend, 8))
        if one and eight:
            out.append(f"- {backend}: G = 8 gives {eight['tok_s'] / one['tok_s']:.1f}x the tokens/s of G = 1.")
    cpp = "llama.cpp in process Q4_1 (llamacpp:smollm2)"
    for b in GROUPS:
        c, q = by.get((cpp, b)), by.get(("transformers NF4", b))
        if c and q:
            out.append(f"- G = {b}: the in-process llama.cpp engine runs at {c['tok_s'] / q['tok_s']:.2f}x "
                       "the NF4 transformers speed.")
    if any(r["backend"].startswith("llama.cpp server") for r in rows):
        out.append("- llama-cpp-python's server decodes one request at a time, so G concurrent requests "
                   "do not batch there; the in-process engine puts all G sequences in one decode batch.")
    return out


def write_report(rows: list[dict], tokens: int, repeats: int, load_avg: tuple[float, float],
                 handovers: list[float]) -> Path:
    cmd = "python benchmarks/llm_throughput.py " + " ".join(sys.argv[1:])
    lines = [
        "## LLM backends: local generation throughput (bundled SmolLM2-135M-Instruct)",
        "",
        f"Machine: {machine()}. `{cmd.strip()}` — one prompt, G samples, up to {tokens} new tokens per "
        f"sample, temperature 0.8, best of {repeats}; tokens/s counts completion tokens actually produced "
        f"(sequences that hit EOS early stop counting). Load average during the run: "
        f"{load_avg[0]:.1f} → {load_avg[1]:.1f}"
        + (" (the cores were shared with other jobs, so absolute numbers are pessimistic; ratios are the point)."
           if max(load_avg) > 1.5 else " (otherwise idle)."),
        "",
        "| backend | G | tokens/s | tokens | load s | memory MB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['backend']} | {r['batch']} | {r['tok_s']:.1f} | {r['tokens']} | "
                     f"{r['load_s']:.1f} | {r['mem_mb']:.0f} |")
    if handovers:
        lines += ["", f"LoRA hand-over to llama.cpp (rank 16, all linear layers, {len(handovers)} versions): "
                  + ", ".join(f"{1e3 * h:.0f}" for h in handovers) + " ms (export the twin's LoRA as a "
                  "GGUF LoRA in fp32, load it, attach it to the context)."]
    lines += ["", *notes(rows), "",
        "![throughput](../img/llm_throughput.png)",
        "",
    ]
    out = ROOT / "docs" / "benchmarks" / "llm.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    # Hand-written sections after the generated one (### headings) are kept.
    old = out.read_text(encoding="utf-8") if out.exists() else ""
    kept = old[old.index("\n### "):] if "\n### " in old else ""
    out.write_text("\n".join(lines) + kept, encoding="utf-8")
    return out


def plot(rows: list[dict]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    backends = list(dict.fromkeys(r["backend"] for r in rows))
    fig, ax = plt.subplots(figsize=(7, 3.5))
    width = 0.8 / len(GROUPS)
    for k, batch in enumerate(GROUPS):
        vals = [next((r["tok_s"] for r in rows if r["backend"] == b and r["batch"] == batch), 0) for b in backends]
        ax.bar([i + (k - (len(GROUPS) - 1) / 2) * width for i in range(len(backends))], vals, width,
               label=f"G = {batch}")
    ax.set_xticks(range(len(backends)), backends, fontsize=8)
    ax.set_ylabel("completion tokens / s")
    ax.set_title("SmolLM2-135M generation on 2 CPU cores")
    ax.legend()
    fig.tight_layout()
    out = ROOT / "docs" / "img" / "llm_throughput.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (default: torch's default)")
    ap.add_argument("--engines", default="nf4,fp32,llamacpp", help="comma list of nf4, fp32, llamacpp")
    ap.add_argument("--llama-server", action="store_true", help="also measure llama.cpp via OpenAILLM")
    ap.add_argument("--llamacpp-models", default="smollm2",
                    help="comma list of bundled models for the llamacpp engine (smollm2, gemma3)")
    ap.add_argument("--no-report", action="store_true",
                    help="print the rows only (docs/benchmarks/llm.md and the plot are left alone)")
    ap.add_argument("--no-plot", action="store_true")
    args = ap.parse_args()
    if args.tokens < 1 or args.repeats < 1:
        print("error: --tokens and --repeats must be >= 1", file=sys.stderr)
        sys.exit(2)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if not engines or set(engines) - {"nf4", "fp32", "llamacpp"}:
        print(f"error: --engines: expected a comma list of nf4, fp32, llamacpp, got {args.engines!r}",
              file=sys.stderr)
        sys.exit(2)
    from optiforge.platform.llm.bundled import BUNDLED_MODELS

    cpp_models = [m.strip() for m in args.llamacpp_models.split(",") if m.strip()]
    if not cpp_models or set(cpp_models) - set(BUNDLED_MODELS):
        print(f"error: --llamacpp-models: expected a comma list of {', '.join(BUNDLED_MODELS)}, "
              f"got {args.llamacpp_models!r}", file=sys.stderr)
        sys.exit(2)
    if args.threads < 0:
        print("error: --threads must be >= 0", file=sys.stderr)
        sys.exit(2)
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before torch/bitsandbytes load OpenMP
        THREADS[0] = args.threads
    else:
        import torch

        THREADS[0] = torch.get_num_threads()
    start_load = os.getloadavg()[0]
    rows = local_rows(args.tokens, args.repeats, engines)
    handovers: list[float] = []
    if "llamacpp" in engines:
        for model in cpp_models:
            cpp_rows, model_handovers = llamacpp_rows(args.tokens, args.repeats, model)
            rows += cpp_rows
            handovers += model_handovers
    if args.llama_server:
        rows += server_rows(args.tokens, args.repeats)
    if args.no_report:
        print(f"load average {start_load:.1f} -> {os.getloadavg()[0]:.1f}")
        return
    report = write_report(rows, args.tokens, args.repeats, (start_load, os.getloadavg()[0]), handovers)
    print(f"wrote {report}")
    if not args.no_plot:
        print(f"wrote {plot(rows)}")


if __name__ == "__main__":
    main()
