"""The portal in headless Chromium (issue 29, Done when): Debian's chromium driven by
playwright (executable_path, no browser download). Each page loads with no console error, the
graph draws the session's nodes, a recall typed into the form shows the expected hit and its
badge, "as of seq N" shows the older value. Screenshots go to LCG_TEST_ARTIFACTS (or tmp_path).
Skipped only when chromium or playwright is absent and CI is unset; failed under CI."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.portal import CITING, RULING, SCRIPT, Portal, serving

CHROMIUM = os.environ.get("LCG_TEST_CHROMIUM", "/usr/bin/chromium")

pytestmark = pytest.mark.slow


def _browser_or_skip() -> Any:
    reason = ""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "playwright is not installed (the test extra)"
    else:
        if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
            reason = f"no chromium at {CHROMIUM} (apt-get install chromium)"
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason + " (CI is set: these tests must run)")
        pytest.skip(reason)
    return sync_playwright


@pytest.fixture(scope="module")
def portal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Portal]:
    with serving(tmp_path_factory.mktemp("portal-browser")) as running:
        yield running


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("LCG_TEST_ARTIFACTS")
    path = Path(where) if where else tmp_path_factory.mktemp("portal-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def page(portal: Portal) -> Iterator[Any]:
    sync_playwright = _browser_or_skip()
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        opened = context.new_page()
        errors: list[str] = []
        opened.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        opened.on("pageerror", lambda e: errors.append(str(e)))
        opened.console_errors = errors
        yield opened
        browser.close()


def visit(page: Any, portal: Portal, path: str) -> None:
    page.console_errors.clear()
    response = page.goto(portal.base + path)
    assert response is not None, path
    assert response.status == 200, path
    page.wait_for_load_state("networkidle")
    assert page.console_errors == [], (path, page.console_errors)


def test_portal_every_page_loads_without_a_console_error(
    page: Any, portal: Portal, artifacts: Path
) -> None:
    for name, path in (
        ("overview", "/portal"),
        ("recall", "/portal/recall?query=users+table"),
        ("concept", "/portal/concept?focus=logins"),
        ("graph", "/portal/graph"),
        ("history", "/portal/history"),
        ("canon", "/portal/canon"),
    ):
        visit(page, portal, path)
        page.screenshot(path=str(artifacts / f"portal-{name}.png"), full_page=True)
    assert page.evaluate("typeof window.alertCalled") == "undefined"


def test_portal_graph_draws_the_sessions_nodes(page: Any, portal: Portal, artifacts: Path) -> None:
    visit(page, portal, "/portal/graph")
    page.wait_for_selector("#graph[data-drawn]")
    assert page.get_attribute("#graph", "data-drawn") == "4"
    labels = page.evaluate("window.lcgGraph.nodes().map(n => n.data('label'))")
    assert RULING in labels
    assert CITING in labels
    assert any(label.startswith("<script>") for label in labels)  # drawn as text
    # filter by type: hiding observations hides two nodes
    page.uncheck("#type-filters input[value=observation]")
    shown = page.evaluate("window.lcgGraph.nodes().filter(n => n.visible()).length")
    assert shown == 2
    # filter by edge kind: the contradiction's edge goes and comes back
    assert page.evaluate("window.lcgGraph.edges().length") == 2
    page.uncheck("#edge-filters input[value=contradicts]")
    assert page.evaluate("window.lcgGraph.edges().length") == 1
    page.check("#edge-filters input[value=contradicts]")
    assert page.evaluate("window.lcgGraph.edges().length") == 2
    page.screenshot(path=str(artifacts / "portal-graph-filtered.png"))


def test_portal_recall_form_shows_the_hit_and_its_badge(
    page: Any, portal: Portal, artifacts: Path
) -> None:
    visit(page, portal, "/portal/recall")
    page.fill("#query", "users table")
    page.click("#recall")
    page.wait_for_selector("#context")
    assert page.console_errors == []
    row = page.locator("tr", has_text=RULING).first
    assert row.locator(".badge-contradiction").count() == 1
    assert (
        page.locator("tr", has_text=CITING).first.locator(".badge-rests_on_contradicted").count()
        == 1
    )
    assert SCRIPT in page.inner_text("#context")  # escaped: shown as text, never run
    page.screenshot(path=str(artifacts / "portal-recall-form.png"), full_page=True)


def test_portal_as_of_seq_shows_the_older_memory(
    page: Any, portal: Portal, artifacts: Path
) -> None:
    visit(page, portal, "/portal/recall?query=users+table")
    assert page.locator(".badge-contradiction").count() == 1
    visit(page, portal, "/portal/recall?query=users+table&as_of_seq=2")
    assert "as of seq 2" in page.inner_text(".as-of")
    assert page.locator(".badge-contradiction").count() == 0
    assert CITING not in page.inner_text("#context")
    assert RULING in page.inner_text("#context")
    page.screenshot(path=str(artifacts / "portal-as-of.png"), full_page=True)


def test_portal_graph_draws_in_steps_and_pages(page: Any, portal: Portal, artifacts: Path) -> None:
    """A graph larger than its first draw (`first`, default 500) shows the first nodes at
    once, then adds the rest a batch at a time, the counter saying how many are shown; past
    the page's `limit` the previous and next links page through the session (ADR 0087)."""
    visit(page, portal, "/portal/graph?first=2")
    page.wait_for_selector("#graph[data-complete]")
    assert page.get_attribute("#graph", "data-drawn") == "2"  # the first draw
    assert page.get_attribute("#graph", "data-complete") == "4"
    assert page.inner_text("#graph-count").startswith("showing 4 of 4 nodes, 2 edges")
    # an edge is drawn once both its ends are: the same two edges as drawing at once
    assert page.evaluate("window.lcgGraph.edges().length") == 2
    assert page.is_hidden("#graph-next")
    assert page.is_hidden("#graph-previous")
    visit(page, portal, "/portal/graph?limit=3")
    page.wait_for_selector("#graph[data-complete]")
    assert "nodes 1–3 of 4" in page.inner_text("#graph-count")
    assert page.is_visible("#graph-next")
    page.click("#graph-next")
    page.wait_for_selector("#graph[data-complete]")
    assert page.console_errors == []
    assert page.get_attribute("#graph", "data-complete") == "1"
    assert "nodes 4–4 of 4" in page.inner_text("#graph-count")
    assert page.is_visible("#graph-previous")
    assert page.is_hidden("#graph-next")
    page.screenshot(path=str(artifacts / "portal-graph-paged.png"))
