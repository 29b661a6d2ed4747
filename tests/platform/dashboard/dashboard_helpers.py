"""A real site for the dashboard tests: a store with real campaigns and studies, a real server.

(A unique module name: the test folders share one ``sys.path``.)
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from optiforge.platform.campaigns import create_campaign, run_campaign
from optiforge.platform.store import Store

# The server helpers of the security tests (a real `optiforge serve` subprocess, raw sockets).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "security"))
from service_helpers import Server, raw_request, start_server, status_of  # noqa: E402

__all__ = ["CHROMIUM", "Site", "Server", "build_site", "browser_args", "raw_request",
           "start_server", "status_of"]

CHROMIUM = os.environ.get("OPTIFORGE_TEST_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS_ENV = "OPTIFORGE_DASHBOARD_SCREENSHOTS"
"""Set to a folder (e.g. docs/img) to copy the tests' screenshots there too."""

XSS_IDEA = "<script>window.__xss = 'idea'</script> tight bins"
XSS_ERROR = "<img src=x onerror=\"window.__xss='error'\">"
XSS_CODE = "# </code></pre><script>window.__xss = 'code'</script>"
# What a small instruct model might answer, replayed in order: valid programs, a refusal, a
# syntax error, and untrusted text that must stay text on every page (idea, error, code).
RESPONSES = [
    "{The idea of the algorithm is to prefer the tightest bin.}\n```python\nimport numpy as np\n"
    "def priority(item, bins):\n    return -(bins - item)\n```",
    "{" + XSS_IDEA + "}\n```python\ndef priority(item, bins):\n    " + XSS_CODE + "\n"
    "    r = bins - item\n    return -r + 0.5 * (r < item) * (r > 0)\n```",
    "I cannot help with that.",
    "{The idea of the algorithm is to fail loudly.}\n```python\ndef priority(item, bins):\n"
    f"    raise ValueError({XSS_ERROR!r})\n```",
    "{The idea of the algorithm is to square the slack.}\n```python\n"
    "def priority(item, bins):\n    return -(bins - item) ** 2 +\n```",
    "{The idea of the algorithm is to prefer nearly full bins but avoid tiny gaps.}\n```python\n"
    "import numpy as np\ndef priority(item, bins):\n    r = bins - item\n"
    "    return -r - 3.0 * ((r > 0) & (r < 3))\n```",
]


@dataclass
class Site:
    """The ids of what the tests look at, and the running server."""

    server: Server
    program: str          # alice's evolution campaign (replayed LLM, real sandbox)
    blackbox: str         # alice's HOLLM campaign on a 2-D function (a study)
    study: str            # its study
    other: str            # bob's campaign
    other_study: str      # bob's campaign's study
    tokens: dict[str, str] = field(default_factory=dict)
    shots: Path = Path(".")

    def url(self, path: str) -> str:
        return self.server.url + path

    def screenshot(self, page, name: str, focus=None) -> Path:
        """Save a full-page screenshot as a test artifact (and where SCREENSHOTS_ENV says: the
        first screenful, or the ``focus`` locator's element, for the README)."""
        path = self.shots / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        extra = os.environ.get(SCREENSHOTS_ENV)
        if extra:
            target = str(Path(extra) / f"dashboard_{name}.png")
            (focus or page).screenshot(path=target)
        return path


def build_site(tmp: Path, db: str | None = None) -> Site:
    """Run the campaigns into a fresh store, then start ``optiforge serve`` on it."""
    db = db or f"sqlite:///{tmp / 'store.db'}"
    replay = tmp / "responses.jsonl"
    replay.write_text("".join(json.dumps({"text": t, "prompt_tokens": 120, "completion_tokens": 40}) + "\n"
                              for t in RESPONSES))
    store = Store(db, artifacts_root=tmp / "artifacts")
    try:
        program = create_campaign(store, task="binpacking", budget=8, llm=f"replay:{replay}", seed=0,
                                  owner="alice", name="bins <i>one</i>", workers=1,
                                  config={"agent_options": {"samples_per_prompt": 4}})
        run_campaign(store, program)
        blackbox = create_campaign(store, task="branin", agent="hollm", budget=64, seed=1, owner="alice",
                                   config={"agent_options": {"proposer": "sobol", "b": 8}})
        run_campaign(store, blackbox)
        other = create_campaign(store, task="branin", agent="random", budget=4, seed=2, owner="bob")
        run_campaign(store, other)
        site = Site(server=None, program=program, blackbox=blackbox,  # type: ignore[arg-type]
                    study=store.get_campaign(blackbox).config["study_id"], other=other,
                    other_study=store.get_campaign(other).config["study_id"])
        site.tokens = {owner: store.create_token(owner) for owner in ("alice", "bob")}
    finally:
        store.close()
    site.server = start_server(db, tmp=tmp)
    site.shots = tmp / "screenshots"
    site.shots.mkdir()
    return site


def browser_args() -> list[str]:
    """Debian's chromium, headless and quiet (no network beyond the test's loopback server)."""
    return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"]


def need_browser() -> None:
    """Skip (with the reason) where the browser tests cannot run."""
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the dev extra)")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)")
