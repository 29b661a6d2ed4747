"""Child process for the durability tests: records rounds, acknowledging each on stdout.

Usage: python writer_proc.py URL CAMPAIGN_ID N_ROUNDS CANDIDATES_PER_ROUND MODE
MODE "suicide": SIGKILL itself right after the last record_round returned.
MODE "loop":    keep writing until killed from outside.
"""

from __future__ import annotations

import os
import signal
import sys

from optiforge.platform.store import CandidateIn, LLMCallIn, Store


def round_payload(r: int, n: int) -> tuple[list[CandidateIn], list[LLMCallIn], dict]:
    # Big enough that a round spans many pages: a kill lands mid-transaction often.
    body = "x = 1\n" * 300
    calls = [LLMCallIn(f"prompt {r}.{i}", f"response {r}.{i} " + body, 100, 200, "m", "e1", 0.5)
             for i in range(n)]
    cands = [CandidateIn(f"{r}-{i}", "e1", body + f"# {r}.{i}", idea="i", parents=["p"],
                         valid=True, score=float(r * 1000 + i), metrics={"r": r, "i": i},
                         runtime_s=0.1, reward=1.0, llm_call_index=i)
             for i in range(n)]
    return cands, calls, {"round": r, "pool": [f"{r}-{i}" for i in range(n)]}


def main() -> None:
    url, cid, n_rounds, per_round, mode = sys.argv[1:6]
    store = Store(url)
    r = store.rounds_done(cid)
    while True:
        cands, calls, state = round_payload(r, int(per_round))
        store.record_round(cid, r, cands, calls, state)
        print(r, flush=True)
        r += 1
        if mode == "suicide" and r >= int(n_rounds):
            os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main()
