"""Dashboard page-load benchmark: a campaign of 2,000 candidates and a study of 5,000 trials.

Fills a fresh SQLite store (a program campaign recorded round by round, as a campaign writes
it, with ~2 KB programs, prompts, errors on a third of them and the agent's state; a 2-D study
with its trials), starts ``optiforge serve`` on loopback, and loads each page in headless
Chromium (Debian's, through Playwright). For each page it reports the median over ``--repeats``
fresh browser contexts (nothing cached) of: time to the first byte, first contentful paint
(the goal: < 1 s), DOMContentLoaded, and the time until the page's plots are drawn. It also
reports the server's resident memory (idle, and its peak after every load) and the machine's
load average.

Usage: python benchmarks/dashboard_load.py [--candidates 2000] [--trials 5000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from optiforge.blackbox import get_blackbox_task
from optiforge.platform.store import CandidateIn, LLMCallIn, Store

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "security"))
from service_helpers import start_server  # noqa: E402  (the tests' real-server launcher)

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
CODE = "def priority(item, bins):\n" + "    x = bins - item  # one line of a heuristic\n" * 45
PROMPT = "You write bin-packing heuristics. Here are two parents:\n" + CODE * 2


def fill(store: Store, n_candidates: int, n_trials: int) -> tuple[str, str]:
    """A program campaign and a 2-D study of the requested sizes (rounds of 4, like G = 4)."""
    rng = np.random.default_rng(0)
    cid = store.create_campaign(task="binpacking", agent="evolution", llm="bench", budget=n_candidates,
                                seed=0, executor="local", owner="bench", name="2,000 candidates")
    store.record_round(cid, 0, [CandidateIn(hash="seed0", operator="seed", code=CODE, valid=True, score=5.0)])
    best, hashes = 5.0, ["seed0"]
    for r in range(1, n_candidates // 4 + 1):
        calls = [LLMCallIn(prompt=PROMPT, response="{idea}\n```python\n" + CODE + "```", prompt_tokens=900,
                           completion_tokens=400, model="bench", operator="e1") for _ in range(4)]
        cands = []
        for i in range(4):
            ok = rng.random() > 0.33
            score = float(best + rng.normal(0.3, 0.3)) if ok else None
            h = f"h{r}-{i}"
            cands.append(CandidateIn(hash=h, operator="e1", code=CODE + f"# {h}\n", idea=f"idea {h}",
                                     parents=[hashes[-1]], valid=ok, score=score,
                                     error=None if ok else "ValueError: bad shape\n" * 5,
                                     runtime_s=0.01, llm_call_index=i))
            if ok:
                best, hashes = min(best, score), hashes + [h]
        pool = [{"hash": h, "code": CODE, "idea": "an idea", "score": 4.0, "operator": "e1",
                 "parents": [], "round": r} for h in hashes[-8:]]
        store.record_round(cid, r, cands, calls, agent_state={"agent": {"collapse_rounds": [],
                                                                         "population": {"entries": pool}}})
    store.set_campaign_status(cid, "finished")
    task = get_blackbox_task("branin")
    sid = store.create_study("bench", task.space.to_dict(), name="5,000 trials")
    points = [task.space.decode(u) for u in rng.random((n_trials, 2))]
    for start in range(0, n_trials, 500):
        trials = store.create_trials(sid, points[start:start + 500])
        for t in trials:
            store.finish_trial(sid, t.number, float(task(t.params)))
    return cid, sid


def _median(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return statistics.median(got) if got else None


def rss(pid: int) -> dict[str, float]:
    """Resident memory of a process (MiB): now and its peak."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out


def load_page(browser, url: str, token: str, wait_for: str | None) -> dict[str, float]:
    context = browser.new_context()  # nothing cached: plotly.min.js is fetched every time
    context.add_cookies([{"name": "optiforge_token", "value": token, "url": url}])
    page = context.new_page()
    t0 = time.perf_counter()
    page.goto(url, wait_until="domcontentloaded")
    if wait_for:
        page.wait_for_selector(wait_for, timeout=120_000)
    plots = (time.perf_counter() - t0) * 1e3
    page.wait_for_load_state("load")
    # The paint entry may be recorded after "load" on a small page: wait for it (buffered).
    nav = page.evaluate("""() => new Promise(resolve => {
        const n = performance.getEntriesByType('navigation')[0];
        const done = fcp => resolve({ttfb: n.responseStart, dcl: n.domContentLoadedEventEnd, fcp: fcp,
                                     bytes: n.transferSize});
        new PerformanceObserver(list => {
            const p = list.getEntriesByName('first-contentful-paint')[0];
            if (p) { done(p.startTime); }
        }).observe({type: 'paint', buffered: true});
        setTimeout(() => done(null), 10000);
    })""")
    context.close()
    return {**nav, "plots": plots if wait_for else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--candidates", type=int, default=2000)
    ap.add_argument("--trials", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", type=Path, help="Also write the figures here.")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{tmp}/bench.db"
        store = Store(db, artifacts_root=Path(tmp) / "artifacts")
        t0 = time.perf_counter()
        cid, sid = fill(store, args.candidates, args.trials)
        fill_s = time.perf_counter() - t0
        token = store.create_token("bench")
        store.close()
        server = start_server(db, tmp=Path(tmp))
        try:
            time.sleep(2)
            idle = rss(server.proc.pid)
            pages = [
                ("overview", "/", None),
                ("campaign (2,000 candidates)", f"/campaigns/{cid}", "#curve[data-rendered=true]"),
                ("campaign, sorted by score, rows 1,001-1,050", f"/campaigns/{cid}?order=score&offset=1000",
                 "#curve[data-rendered=true]"),
                ("candidate (code, diff, LLM call)", f"/campaigns/{cid}/candidates/1500", None),
                ("study (5,000 trials)", f"/studies/{sid}", "#partition[data-rendered=true]"),
                ("study, sorted by value, rows 4,001-4,050", f"/studies/{sid}?order=value&offset=4000",
                 "#partition[data-rendered=true]"),
            ]
            rows = []
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                load_page(browser, server.url + "/", token, None)  # warm the server's imports
                for name, path, wait_for in pages:
                    runs = [load_page(browser, server.url + path, token, wait_for) for _ in range(args.repeats)]
                    med = {k: _median([r[k] for r in runs]) for k in runs[0]}
                    rows.append({"page": name, **med})
                browser.close()
            after = rss(server.proc.pid)
        finally:
            server.stop()
    load_after = os.getloadavg()
    fmt = lambda v: "-" if v is None else f"{v:.0f}"  # noqa: E731
    print(f"machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}; load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after")
    print(f"store filled in {fill_s:.1f} s: {args.candidates} candidates, {args.trials} trials; "
          f"median of {args.repeats} cold loads per page (fresh browser context)\n")
    print("| page | first byte (ms) | first contentful paint (ms) | DOMContentLoaded (ms) | plots drawn (ms) | HTML (kB) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['page']} | {fmt(r['ttfb'])} | {fmt(r['fcp'])} | {fmt(r['dcl'])} | {fmt(r['plots'])} | "
              f"{fmt(r['bytes'] / 1024 if r['bytes'] else None)} |")
    print(f"\nserver memory: {idle['VmRSS']:.0f} MiB resident idle; {after['VmRSS']:.0f} MiB after the loads "
          f"(peak {after['VmHWM']:.0f} MiB)")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "idle_mib": idle, "after_mib": after,
                                         "load": [load_before, load_after]}, indent=2))


if __name__ == "__main__":
    main()
