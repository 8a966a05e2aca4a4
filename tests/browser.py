"""The real browser of the tests: Debian's headless Chromium driven by Playwright, and what they read in it.

Playwright never downloads a browser here (``playwright install`` cannot work on this network): the
tests drive ``/usr/bin/chromium``, which ``make test`` installs as root (``make browser``), and skip
without it, saying so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
"""With ``headless=True`` (Playwright adds ``--headless``)."""
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHARTS_TIMEOUT_MS = 60_000


def browser_or_skip() -> Any:
    """Playwright's sync API, or a skip that says what is missing and how to get it."""
    if not CHROMIUM.exists():
        pytest.skip(f"no {CHROMIUM}: `make test` installs Debian's chromium as root "
                    "(apt-get install chromium chromium-driver)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed: pip install -e '.[dev]' (never `playwright install`)")
    return sync_playwright


def artifacts_dir() -> Path:
    """Where screenshots go for people to look at (git-ignored)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / ".gitignore").write_text("*\n")
    return ARTIFACTS


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium (Playwright's ``Browser``)."""
    with browser_or_skip()() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class ReportPage:
    """What a reader's browser showed of a ``report.html`` opened from disk with the network blocked."""

    sections: list[str]
    """The ids of the page's sections, in order."""
    charts: dict[str, int]
    """Per chart element id: the SVG layers Plotly drew in it (0: it drew nothing)."""
    cells: list[dict[str, str]] = field(default_factory=list)
    """Every figure cell of the tables: ``run``, ``metric``, ``value`` (JSON), ``text``."""
    figures: dict[str, Any] = field(default_factory=dict)
    """Per chart title: the traces Plotly holds (``data`` as drawn)."""
    network: list[str] = field(default_factory=list)
    """Every request the page made other than for its own file (each was blocked)."""
    errors: list[str] = field(default_factory=list)
    """The page's script errors and console errors."""
    scrolls: list[str] = field(default_factory=list)
    """The tables wider than the page at 1,400 px (they scroll sideways)."""
    covered: list[str] = field(default_factory=list)
    """The charts whose title Plotly's mode bar sits over."""


def open_report(path: Path, screenshot: Path | None = None) -> ReportPage:
    """Open ``report.html`` as a reader would (a file, no network: every other request is aborted and
    listed) and read back its sections, charts, tables and figures once Plotly has drawn them all."""
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 900}, offline=True)
        network: list[str] = []
        errors: list[str] = []

        def block(route: Any) -> None:
            if route.request.url != path.resolve().as_uri():
                network.append(route.request.url)
                route.abort()
            else:
                route.continue_()

        context.route("**/*", block)
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(path.resolve().as_uri())
        page.wait_for_selector("body[data-charts]", timeout=CHARTS_TIMEOUT_MS)
        sections = page.eval_on_selector_all("main > section", "els => els.map(e => e.id)")
        charts = page.eval_on_selector_all(".chart", "els => Object.fromEntries(els.map(e => "
                                                      "[e.id, e.querySelectorAll('svg.main-svg').length]))")
        cells = page.eval_on_selector_all("td[data-metric]", "els => els.map(e => ({run: e.parentElement.dataset.run, "
                                                             "table: e.closest('table').dataset.table, "
                                                             "metric: e.dataset.metric, value: e.dataset.value, "
                                                             "text: e.innerText}))")
        figures = page.eval_on_selector_all(".chart", "els => Object.fromEntries(els.map(e => [e.layout.title.text, "
                                                       "JSON.parse(JSON.stringify(e.data))]))")
        scrolls = page.eval_on_selector_all(".scroll", "els => els.filter(e => e.scrollWidth > e.clientWidth + 1)"
                                                       ".map(e => e.querySelector('table').dataset.table)")
        covered = page.eval_on_selector_all(".chart", COVERED_JS)
        if screenshot is not None:
            page.screenshot(path=str(screenshot), full_page=True)
        context.close()
    return ReportPage(sections, charts, cells, figures, network, errors, scrolls, covered)


COVERED_JS = """els => els.filter(e => {
  const bar = e.querySelector('.modebar'), title = e.querySelector('.gtitle');
  if (!bar || !title) return false;
  const a = bar.getBoundingClientRect(), b = title.getBoundingClientRect();
  return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
}).map(e => e.id)"""
"""The charts whose mode bar (shown on hover) overlaps their title."""


def page_figures(path: Path) -> dict[str, Any]:
    """The chart data a ``report.html`` carries (its ``figures`` script), read without a browser."""
    text = path.read_text(encoding="utf-8")
    start = text.index('<script type="application/json" id="figures">') + len('<script type="application/json" id="figures">')
    return json.loads(text[start:text.index("</script>", start)])


def at_path(data: Any, path: str) -> Any:
    """The value at a dotted path of parsed JSON (``latency_ms.ttft.p50``), None where any part is missing."""
    for part in path.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


def assert_shows_the_summaries(page: ReportPage, run: Path) -> None:
    """Every figure cell of ``report.html`` holds its run's ``summary.json`` value at its path, written as the
    page's figure formats it; every run's headline is there."""
    from orchestrate.report.htmlreport import GLANCE, STEADY
    from orchestrate.report.intervallines import interval_text
    from orchestrate.report.schema.intervals import Interval
    figures = {f.path: f for f in GLANCE + STEADY}
    summaries = {label: json.loads((run / label / "summary.json").read_text())
                 for label in {c["run"] for c in page.cells}}
    assert {c["run"] for c in page.cells if c["table"] == "headline"} == set(summaries)
    for cell in page.cells:
        figure, summary = figures[cell["metric"]], summaries[cell["run"]]
        expected = at_path(summary, cell["metric"])
        assert json.loads(cell["value"]) == expected, cell
        interval = at_path(summary, figure.interval) if figure.interval and expected is not None else None
        beside = interval_text(expected, Interval(**interval), figure.fmt) if interval else ""
        shown = "–" if expected is None else figure.fmt(expected)
        assert cell["text"] == (f"{shown}\n{beside}" if beside else shown), cell
