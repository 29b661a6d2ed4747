"""The dashboard in a real headless Chromium (Playwright), against a real ``optiforge serve``.

One store, built once for the module: a real evolution campaign (replayed LLM responses, real
sandbox) and a real HOLLM campaign on a 2-D function (its study), owned by alice, and bob's
campaign. Screenshots land in the module's temporary folder (and in
``$OPTIFORGE_DASHBOARD_SCREENSHOTS`` when set).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator

import httpx
import pytest
from dashboard_helpers import (
    CHROMIUM,
    XSS_ERROR,
    XSS_IDEA,
    Site,
    browser_args,
    build_site,
    need_browser,
)

from optiforge.platform.campaigns import create_campaign, run_campaign
from optiforge.platform.store import Store

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    need_browser()
    s = build_site(tmp_path_factory.mktemp("dashboard"))
    yield s
    s.server.stop()


@pytest.fixture(scope="module")
def browser(site: Site) -> Iterator:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=browser_args())
        yield b
        b.close()


def _page(browser, site: Site, owner: str | None = "alice", javascript: bool = True):
    """A fresh browser context (its own cookies), logged in as ``owner`` through the form."""
    context = browser.new_context(java_script_enabled=javascript, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors  # type: ignore[attr-defined]
    if owner is not None:
        page.goto(site.url("/"))
        assert page.url.startswith(site.url("/login"))  # no cookie yet: the login page
        page.fill("#token", site.tokens[owner])
        page.click("form.login button[type=submit]")
        page.wait_for_url(site.url("/"))
    return page


def test_log_in_open_a_campaign_and_see_its_curve(browser, site: Site) -> None:
    page = _page(browser, site)
    assert page.locator("h1").inner_text() == "Campaigns and studies of alice"
    rows = page.locator("table.data").first.locator("tbody tr")
    assert rows.count() == 2  # alice's two campaigns; bob's is not listed
    assert site.other not in page.content()
    page.get_by_role("link", name="bins <i>one</i>").click()  # the name is text, not markup
    page.wait_for_selector("#curve[data-rendered=true]")
    assert page.locator("#curve .scatterlayer .trace path.js-line").count() == 1
    assert page.locator("#status").inner_text() == "finished"
    assert page.locator("#progress-text").inner_text() == "8 / 8"
    assert page.locator("#test-h").count() == 1 and "baseline: best_fit" in page.locator("table.data").first.inner_text()
    site.screenshot(page, "campaign")
    assert page.errors == []  # type: ignore[attr-defined]


def test_open_a_failing_candidate_and_read_its_error(browser, site: Site) -> None:
    page = _page(browser, site)
    page.goto(site.url(f"/campaigns/{site.program}"))
    page.get_by_role("link", name="Failing", exact=True).click()
    failing = page.locator("#candidates tbody tr")
    texts = [failing.nth(i).inner_text() for i in range(failing.count())]
    assert texts and all("\tno\t" in t for t in texts)
    page.locator("#candidates tbody tr", has_text="ValueError").get_by_role("link").click()
    error = page.locator("#error").inner_text()
    assert "ValueError" in error and XSS_ERROR in error  # the untrusted text, shown as text
    assert page.locator("#valid").inner_text() == "no"
    assert "raise ValueError" in page.locator("#code").inner_text()
    assert page.locator("#response").inner_text().startswith("{The idea of the algorithm is to fail")
    assert page.locator("#diff").count() == 1 or "No parents" in page.content()
    site.screenshot(page, "candidate")
    assert page.evaluate("window.__xss") is None and page.errors == []  # type: ignore[attr-defined]


def test_untrusted_text_never_runs(browser, site: Site) -> None:
    """Ideas, programs, errors and LLM text with script tags are shown, never executed."""
    page = _page(browser, site)
    page.on("dialog", lambda d: pytest.fail(f"a dialog opened: {d.message}"))
    store = Store(site.server.db)
    try:
        numbers = {c.number for c in store.candidates(site.program) if not c.valid or "<script>" in (c.idea or "")}
    finally:
        store.close()
    assert numbers
    for n in sorted(numbers):
        page.goto(site.url(f"/campaigns/{site.program}/candidates/{n}"))
        assert page.evaluate("window.__xss") is None
    page.goto(site.url(f"/campaigns/{site.program}/candidates/{min(numbers)}"))
    page.goto(site.url(f"/campaigns/{site.program}"))
    assert XSS_IDEA[:30] in page.locator("body").inner_text()
    assert page.evaluate("window.__xss") is None


def test_another_owners_campaign_and_study_are_404(browser, site: Site) -> None:
    page = _page(browser, site)
    missing = page.goto(site.url("/campaigns/000000000000"))
    missing_text = page.locator("main").inner_text()
    theirs = page.goto(site.url(f"/campaigns/{site.other}"))
    assert theirs.status == missing.status == 404
    assert page.locator("main").inner_text() == missing_text  # nothing tells them apart
    assert "There is no such campaign" in missing_text
    for path in (f"/studies/{site.other_study}", f"/studies/{site.other_study}/plots.json",
                 f"/campaigns/{site.other}/live.json", f"/campaigns/{site.other}/candidates/0"):
        assert page.goto(site.url(path)).status == 404, path
    # ... while bob sees his own, and not alice's
    bob = _page(browser, site, "bob")
    assert bob.goto(site.url(f"/campaigns/{site.other}")).status == 200
    assert bob.goto(site.url(f"/campaigns/{site.program}")).status == 404
    for path in (f"/campaigns/{site.program}/candidates/0", f"/campaigns/{site.program}/live.json",
                 f"/studies/{site.study}", f"/studies/{site.study}/plots.json"):  # alice's, all there
        assert bob.goto(site.url(path)).status == 404, path


def test_bad_or_revoked_tokens_get_the_login_page_with_a_message(browser, site: Site) -> None:
    page = _page(browser, site, owner=None)
    response = page.goto(site.url(f"/campaigns/{site.program}"))
    assert response.status == 200 and page.url == site.url(f"/login?next=/campaigns/{site.program}")
    page.fill("#token", "oft_not-a-token")
    page.click("form.login button[type=submit]")
    assert page.locator("[role=alert]").inner_text().startswith("That token is not valid")
    assert "Traceback" not in page.content()
    # A token that worked, then was revoked: the next page is the login page, saying so.
    store = Store(site.server.db)
    token = store.create_token("alice")
    page.fill("#token", token)
    page.click("form.login button[type=submit]")
    page.wait_for_url(site.url(f"/campaigns/{site.program}"))  # back where it was going
    store.revoke_token(token)
    store.close()
    response = page.goto(site.url("/"))
    assert response.status == 401 and page.url == site.url("/login?error=expired")
    assert "revoked" in page.locator("[role=alert]").inner_text()
    assert not [c for c in page.context.cookies() if c["name"] == "optiforge_token"]
    # A cookie that was never a token is the same.
    page.context.add_cookies([{"name": "optiforge_token", "value": "<script>", "url": site.url("/")}])
    page.goto(site.url("/"))
    assert page.url == site.url("/login?error=expired")


def test_login_by_keyboard_alone(browser, site: Site) -> None:
    page = _page(browser, site, owner=None)
    page.goto(site.url("/login"))
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "token"
    page.keyboard.type(site.tokens["alice"])
    page.keyboard.press("Enter")
    page.wait_for_url(site.url("/"))
    labels = page.evaluate("[...document.querySelectorAll('progress')].map(p => p.getAttribute('aria-label'))")
    assert labels and all(labels)


def test_study_page_plots_and_partition(browser, site: Site) -> None:
    page = _page(browser, site)
    page.goto(site.url(f"/campaigns/{site.blackbox}"))
    page.get_by_role("link", name=f"open study {site.study}").click()
    for plot in ("convergence", "parallel", "partition"):
        page.wait_for_selector(f"#{plot}[data-rendered=true]")
    legend = page.locator("#partition .legend").text_content()
    assert re.search(r"\d+ regions \(leaf size \d+\)", legend)
    assert page.locator("#parallel .scatterlayer .trace").count() >= 2
    site.screenshot(page, "study", focus=page.locator("figure", has=page.locator("#partition")))
    assert page.errors == []  # type: ignore[attr-defined]


def test_trials_table_pages_and_sorts_without_javascript(browser, site: Site) -> None:
    page = _page(browser, site, javascript=False)
    page.goto(site.url(f"/studies/{site.study}"))
    assert page.locator("#trials tbody tr").count() == 50
    assert page.locator(".pager span").inner_text() == "1–50 of 64"
    page.get_by_role("link", name="Next 50").click()
    assert page.locator("#trials tbody tr").count() == 14
    page.locator("#trials thead th", has_text="Value").get_by_role("link").click()
    first = float(page.locator("#trials tbody tr").first.locator("td").nth(2).inner_text())
    store = Store(site.server.db)
    best = min(t.value for t in store.trials(site.study, ["complete"]))
    store.close()
    assert first == pytest.approx(best, rel=1e-5)
    assert page.locator("#trials thead th[aria-sort=ascending]").count() == 1


def test_a_running_campaign_updates_live(browser, site: Site) -> None:
    store = Store(site.server.db)
    cid = create_campaign(store, task="branin", agent="random", budget=12, seed=5, owner="alice")
    page = _page(browser, site)
    page.goto(site.url(f"/campaigns/{cid}"))
    assert page.locator("#progress-text").inner_text() == "0 / 12"
    from playwright.sync_api import expect

    runner = threading.Thread(target=run_campaign, args=(store, cid))
    runner.start()
    runner.join(timeout=300)
    # The page asks every few seconds; nothing reloads it (expect polls the DOM without eval,
    # which the pages' Content-Security-Policy forbids).
    expect(page.locator("#progress-text")).to_have_text("12 / 12", timeout=60_000)
    expect(page.locator("#status")).to_have_text("finished", timeout=60_000)
    assert page.locator("#curve[data-rendered=true]").count() == 1
    store.close()


def test_pages_answer_through_the_api_guard(site: Site) -> None:
    """Same tokens, same owner rule, and the API stays intact beside the dashboard."""
    api = httpx.get(site.url("/v1/studies"), headers=site.server.headers(site.tokens["alice"]))
    assert api.status_code == 200 and site.study in {s["id"] for s in api.json()["studies"]}
    assert httpx.get(site.url(f"/v1/studies/{site.other_study}"),
                     headers=site.server.headers(site.tokens["alice"])).status_code == 404
    assert "/campaigns/{campaign_id}" not in httpx.get(site.url("/openapi.json")).json()["paths"]
    js = httpx.get(site.url("/static/plotly.min.js"))
    assert js.status_code == 200 and len(js.content) > 1_000_000  # the package's own copy


def test_rl_reward_and_kl_by_adapter_version(browser, site: Site, tmp_path, replay_file) -> None:
    """Adapter versions stored as an RL campaign stores them (the learner's step statistics)."""
    store = Store(site.server.db, artifacts_root=tmp_path / "artifacts")
    cid = create_campaign(store, task="binpacking", budget=4, llm=f"replay:{replay_file}", owner="alice",
                          name="with adapters")
    stats = [{"mean_reward": 0.25, "kl": 0.001, "loss": 0.5}, {"mean_reward": 0.5, "kl": 0.004, "loss": 0.25}]
    for version, meta in enumerate(stats, start=1):
        store.add_artifact(cid, "adapter", f"adapter-{version:04d}", b"weights", meta=meta)
    store.close()
    page = _page(browser, site)
    page.goto(site.url(f"/campaigns/{cid}"))
    page.wait_for_selector("#rl-plot[data-rendered=true]")
    rows = page.locator("#rl-h ~ table tbody tr")
    assert [rows.nth(i).inner_text().split("\t") for i in range(rows.count())] == [
        ["1", "adapter-0001", "0.25", "0.001", "0.5"], ["2", "adapter-0002", "0.5", "0.004", "0.25"]]
    assert page.locator("#rl-plot .scatterlayer .trace").count() == 2  # reward and KL
