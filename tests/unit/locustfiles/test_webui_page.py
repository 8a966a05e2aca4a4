"""locustfiles/webui_page.py: the live chart page's script, run in a real (headless) Chromium.

The page is served from a made-up origin through Playwright's routing, and so is ``live``: the test
hands the page the answers Locust's ``/tokenswarm/live`` would give and reads back what the page
asked for, what it kept and what it shows. Timers run on Playwright's clock, so the page polls only
when the test says. Playwright never downloads a browser here: it drives ``/usr/bin/chromium``
(``make browser``), and the test skips without it, as tests/integration/test_webui_browser.py does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from locustfiles.webui_page import CHARTS_HTML
from tests.browser import chromium

ORIGIN = "http://tokenswarm.invalid"
PAGE = f"{ORIGIN}/tokenswarm/charts"


def live(test: int, points: list[dict[str, Any]], completed: int = 3) -> dict[str, Any]:
    """One answer of ``/tokenswarm/live`` (the shape webui.py sends)."""
    summary = {"p50": 41.5}
    return {"test": test, "state": "running", "users": 4, "points": points,
            "snapshot": {"window_s": 10, "in_flight": 2,
                         "now": {"decode_tok_s": 1234.56, "prefill_tok_s": 88.0, "ttft_ms": summary,
                                 "tpot_ms": {"p50": 3.456}},
                         "run": {"decode_tok_s": 1000.0, "completed": completed, "errors": 1}}}


def point(t: float, decode: float | None = 100.0) -> dict[str, Any]:
    return {"t": t, "users": 4, "in_flight": 2, "decode_tok_s": decode, "prefill_tok_s": 10.0,
            "ttft_p50_ms": 40.0, "ttft_p99_ms": 90.0, "tpot_p50_ms": 3.0}


class Page:
    """The chart page in Chromium; ``answers`` are handed to its ``live`` requests in turn."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.answers: list[dict[str, Any] | None] = []
        self.asked: list[str] = []

    def route(self, route: Any) -> None:
        url = route.request.url
        if url == PAGE:
            route.fulfill(status=200, content_type="text/html", body=CHARTS_HTML)
        elif url.startswith(f"{ORIGIN}/tokenswarm/live"):
            self.asked.append(url[len(f"{ORIGIN}/tokenswarm/"):])
            answer = self.answers.pop(0)
            if answer is None:
                route.fulfill(status=500, content_type="text/html", body="<h1>gone</h1>")
            else:
                route.fulfill(status=200, content_type="application/json", body=json.dumps(answer))
        else:
            route.abort()  # nothing else may be fetched, from anywhere

    def poll(self) -> None:
        self.page.evaluate("poll()")

    def js(self, expression: str) -> Any:
        return self.page.evaluate(expression)

    def text(self, selector: str) -> str:
        return str(self.page.locator(selector).inner_text())


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def charts(browser: Any) -> Iterator[Page]:
    context = browser.new_context(locale="en-US")
    page = context.new_page()
    charts = Page(page)
    charts.answers.append(live(1, [point(1.0), point(2.0)]))
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.route("**/*", charts.route)
    page.clock.install()  # setInterval waits for the test: only the first poll runs by itself
    page.goto(PAGE)
    page.wait_for_function("points.length === 2")
    yield charts
    context.close()
    assert errors == []  # no script error while drawing


def test_the_first_poll_fills_the_figures_and_the_chart_points(charts: Page) -> None:
    assert charts.asked == ["live"]  # the first asks for everything
    figures = charts.page.locator("#figs .fig").all_inner_texts()
    assert figures[0].split("\n") == ["1,234.6", "decode tok/s (10 s)"]
    assert [f.split("\n")[0] for f in figures] == ["1,234.6", "88.0", "1,000.0", "41.5", "3.46", "3", "2", "1", "4"]
    assert charts.text("#win") == "10" and charts.text("#status").startswith("test running, updated")


def test_later_polls_ask_for_newer_points_and_a_new_test_starts_the_charts_again(charts: Page) -> None:
    charts.answers.append(live(1, [point(3.0, decode=None)]))  # a gap in one series: nothing drawn for it
    charts.poll()
    assert charts.asked[-1] == "live?since=2&test=1"
    assert charts.js("points.map(p => p.t)") == [1.0, 2.0, 3.0]
    charts.answers.append(live(2, [point(0.5)], completed=0))
    charts.poll()
    assert charts.asked[-1] == "live?since=3&test=1"
    assert charts.js("points.map(p => p.t)") == [0.5]  # test 2: test 1's points are dropped
    charts.answers.append(live(2, []))
    charts.poll()
    assert charts.asked[-1] == "live?since=0.5&test=2"


def test_the_page_keeps_at_most_an_hour_of_points(charts: Page) -> None:
    charts.answers.append(live(1, [point(3.0 + i) for i in range(3700)]))
    charts.poll()
    assert charts.js("points.length") == 3600 and charts.js("points[points.length - 1].t") == 3702.0


def test_a_failed_poll_says_so_and_keeps_the_points(charts: Page) -> None:
    charts.answers.append(None)
    charts.poll()
    assert charts.text("#status").startswith("no answer from Locust (the run may have ended)")
    assert charts.js("points.length") == 2


AXES = [
    (0.0, 0.2, 0.2, 1),  # an empty chart still has a scale
    (87.0, 100.0, 20.0, 0),  # 10 % headroom, a round step, about five gridlines
    (1234.0, 1500.0, 500.0, 0),
    (95.0, 150.0, 50.0, 0),  # 100 would leave the peak 5 % below the top
    (0.034, 0.04, 0.01, 2)]


def test_the_axis_is_round_with_room_above_the_peak(charts: Page) -> None:
    for peak, top, step, digits in AXES:
        ax = charts.js(f"axis({peak})")
        assert (ax["top"], ax["step"], ax["digits"]) == (pytest.approx(top), pytest.approx(step), digits), peak
        assert ax["top"] >= peak * 1.1 - 1e-12 and ax["top"] / ax["step"] <= 11


def test_a_missing_figure_shows_as_a_dash_in_the_browser(charts: Page) -> None:
    """No request ended in the window yet: an em dash (the page's ``\\u2014`` escape survived Python's string)."""
    assert charts.js("fmt(null, 1)") == "\u2014" and charts.js("fmt(undefined, 0)") == "\u2014"
    assert charts.js("fmt(0, 2)") == "0.00"
