"""`tokenswarm run --ui` in a real browser: Debian's headless Chromium driven by Playwright, against the
real parts (the embedded llama.cpp serving Gemma 3 270M Q4_K_M, real ShareGPT V3 prompts).

A person's session, step by step: open the web UI, start 8 users from the form, watch the LLM tab
until decode tok/s is non-zero and TTFT p50 is filled in, click the chart page's link, ramp down to 4
users with Edit, press Stop, look at the stopped test (the UI stays up), then Ctrl-C in the terminal:
the run is post-processed as a headless one, each user count set a step.
Screenshots of the LLM tab and the chart page are kept under ``tests/artifacts/`` (git-ignored).

The browser is ``tests/browser.py``'s.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from orchestrate.server.launchers.base import free_port
from tests.browser import CHROMIUM, CHROMIUM_FLAGS, artifacts_dir, browser_or_skip, page_figures
from tests.helpers import assert_report_rebuilds_every_key, read_jsonl, write_scenario

pytestmark = pytest.mark.integration

USERS = 8
HOLD_S = 14.0
"""Each user level is held this long: long enough for requests to complete in each."""
STARTUP_TIMEOUT_S = 120.0
FIGURES_TIMEOUT_S = 60.0
EXIT_TIMEOUT_S = 120.0


class OutputWatcher:
    """Collects the orchestrator's stdout in a thread; ``wait_for(regex)`` returns the first match."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.lines.append(line)

    def text(self) -> str:
        return "".join(self.lines)

    def wait_for(self, pattern: str, timeout_s: float, alive: Callable[[], bool]) -> re.Match[str]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if match := re.search(pattern, line):
                    return match
            if not alive():
                break
            time.sleep(0.2)
        pytest.fail(f"no line matching {pattern!r} from tokenswarm run:\n{self.text()}")


def number(text: str) -> float | None:
    """``"2,061.2"`` → 2061.2; ``"—"`` (nothing yet) → None."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


NOW, LEVEL, RUN = 0, 1, 2
"""The LLM tab's columns after the figure's name: last 10 s, this user level, since start (then the definition)."""


def llm_rows(page: Any) -> dict[str, list[str]]:
    """The LLM tab's table: figure → [last 10 s, this user level, since start, definition]."""
    rows: dict[str, list[str]] = {}
    for row in page.locator("table tbody tr").all():
        cells = [c.strip() for c in row.locator("td").all_inner_texts()]
        if cells:
            rows[cells[0]] = cells[1:]
    return rows


def wait_until(check: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}")


def test_web_ui_llm_tab_chart_page_and_stop(tmp_path: Path) -> None:
    sync_playwright = browser_or_skip()
    started = time.monotonic()
    scenario = write_scenario(tmp_path, server={"model": "gemma-3-270m",
                                                "flags": {"parallel": USERS, "threads": 2, "ctx-size": 8192}},
                              load={"dataset": "sharegpt-v3", "allow_truncated": True, "users": 4, "num_prompts": 300,
                                    "max_tokens": 32, "sampling": {"max_prompt_tokens": 128}})
    results, port = tmp_path / "results", free_port()
    proc = subprocess.Popen([sys.executable, "-m", "orchestrate.cli", "run", str(scenario), "--results-dir",
                             str(results), "--ui", "--web-port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = OutputWatcher(proc)
    shots = artifacts_dir()
    try:
        url = out.wait_for(r"web UI: (http://\S+)", STARTUP_TIMEOUT_S, lambda: proc.poll() is None).group(1)
        assert url == f"http://127.0.0.1:{port}"
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                str(tmp_path / "chromium-profile"), executable_path=str(CHROMIUM), headless=True,
                args=CHROMIUM_FLAGS, viewport={"width": 1400, "height": 900})
            elsewhere: list[str] = []
            context.on("request", lambda r: elsewhere.append(r.url)
                       if urlsplit(r.url).netloc != urlsplit(url).netloc and not r.url.startswith("data:") else None)
            page = context.new_page()
            page.goto(url)
            # The scenario's 4 users prefill the form; a person types 8 and starts.
            assert page.input_value("input[name=userCount]") == "4"
            page.fill("input[name=userCount]", str(USERS))
            page.fill("input[name=spawnRate]", str(USERS))
            page.get_by_role("button", name="Start").click()
            ramp_started = time.monotonic()
            page.get_by_role("tab", name="LLM").click()

            def figures_in() -> dict[str, list[str]] | None:
                rows = llm_rows(page)
                decode = number(rows.get("Decode tok/s", ["—"])[0])
                ttft = rows.get("TTFT p50 / p90 / p99 (ms)", ["—"])[0]
                return rows if decode and decode > 0 and number(ttft.split(" / ")[0]) else None

            rows = wait_until(figures_in, FIGURES_TIMEOUT_S, "decode tok/s > 0 and TTFT p50 in the LLM tab")
            assert number(rows["Requests completed"][RUN]) and number(rows["Prefill tok/s"][RUN])
            assert rows["Errors"][RUN] == "0"
            assert rows["User level"][LEVEL].startswith(f"{USERS} users, set ")  # the form's count, seen live
            assert re.fullmatch(r"\d+ sent, \d+ ended, \d+ left of 300", rows["Prompt budget"][RUN])
            assert number(rows["Requests completed"][LEVEL])
            assert rows["Live charts"][RUN] == f"{url}/tokenswarm/charts"
            link = page.locator("td[role=link]")  # Locust's table shows text: tokenswarm's script makes it a link
            assert link.inner_text() == f"{url}/tokenswarm/charts"
            assert rows["Draft acceptance"][NOW] == "—"  # no drafter in this scenario
            page.screenshot(path=str(shots / "webui-llm-tab.png"))

            with context.expect_page() as opened:
                link.click()
            charts = opened.value
            charts.wait_for_load_state()
            assert charts.url == f"{url}/tokenswarm/charts"
            wait_until(lambda: charts.evaluate("points.length") >= 6, 30, "six points on the chart page")
            first = charts.evaluate("points[0]")  # drawn from the first second: users and in flight, no request ended
            assert first["t"] < 2.0 and first["users"] > 0 and first["in_flight"] > 0, first
            assert first["ttft_p50_ms"] is None and first["decode_tok_s"] == 0, first
            first_figure = charts.locator("#figs .fig b").first.inner_text()
            assert number(first_figure), f"decode tok/s on the chart page: {first_figure!r}"
            charts.screenshot(path=str(shots / "webui-charts.png"), full_page=True)
            csv = context.request.get(f"{url}/tokenswarm/llm.csv")
            assert csv.ok and csv.text().startswith("figure,last_10s,this_level,since_start\n")
            assert elsewhere == [], f"the pages fetched from elsewhere: {elsewhere}"

            page.bring_to_front()
            # hold 8 users a while, then ramp down to 4 through the running test's Edit form, hold again
            wait_until(lambda: time.monotonic() - ramp_started >= HOLD_S, HOLD_S + 5, "the first level held")
            page.get_by_role("button", name="Edit").click()  # Locust's "Edit running load test" form
            page.locator("input[name=userCount]").fill(str(USERS // 2))
            page.locator("input[name=spawnRate]").fill(str(USERS))
            page.get_by_role("button", name="Update").click()
            time.sleep(HOLD_S)
            page.get_by_role("tab", name="LLM").click()
            level = wait_until(lambda: llm_rows(page), 20, "the LLM tab after Edit")
            assert level["User level"][LEVEL].startswith(f"{USERS // 2} users, set ")  # the Edit's count
            page.get_by_role("button", name="Stop").click()
            # the UI stays up for a look at the stopped test; Ctrl-C in the terminal writes the results
            out.wait_for(r"the test stopped; the web UI stays up", 30, lambda: proc.poll() is None)
            page.reload()
            page.get_by_role("tab", name="LLM").click()
            assert number(wait_until(lambda: llm_rows(page), 20, "the LLM tab after Stop")["Requests completed"][RUN])
            proc.send_signal(signal.SIGINT)
            proc.wait(EXIT_TIMEOUT_S)
            context.close()
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)
    print(f"\nscreenshots: {shots / 'webui-llm-tab.png'}, {shots / 'webui-charts.png'}; "
          f"test took {time.monotonic() - started:.1f} s")
    assert proc.returncode == 0, out.text()
    summary_path, = results.glob("*/v/summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["status"] == "completed", out.text()
    assert summary["requests"]["completed"] > 0 and summary["requests"]["errors"] == 0
    assert summary["stopped_by"] == "ui_stop"  # Stop came before the 300 prompts were all sent
    assert summary["requests"]["sent"] == len(read_jsonl(summary_path.parent / "requests.jsonl"))
    assert summary["crosscheck_agrees"] is True
    assert "stopped in the web UI" in " ".join(summary["notes"])
    assert "== t / v: completed" in out.text()
    # what the person did is what was recorded: the users over time, and each level held as a step
    assert summary["users_over_time"]["max"] == USERS and summary["settings"]["load.users"] == USERS
    assert summary["settings"]["load.spawn_rate"] == USERS  # the form's spawn rate, not the scenario's
    assert [x["users"] for x in summary["users_over_time"]["levels"]][:2] == [USERS, USERS // 2]
    steps = summary["ui_steps"]["steps"]
    assert summary["ui_steps"]["placed_by"] == "send"  # each record says the count it was sent under
    assert [s["value"] for s in steps] == [USERS, USERS // 2], steps
    assert all(s["completed"] > 0 and s["decode_tok_s"] > 0 and s["ttft_p50_ms"] > 0 for s in steps), steps
    assert sum(s["sent"] for s in steps) == summary["requests"]["sent"]  # every request in exactly one step
    records = sorted(read_jsonl(summary_path.parent / "requests.jsonl"), key=lambda r: r["send_ts"])
    assert [r["target_users"] for r in records[:USERS]] == [USERS] * USERS  # the first requests: the first step's
    ttfts = sorted(r["ttft_ms"] for r in records if r["target_users"] == USERS and r["status"] == "ok"
                   and r["ttft_ms"] is not None)
    assert steps[0]["ttft_p50_ms"] == ttfts[(len(ttfts) + 1) // 2 - 1]  # its TTFT p50 (nearest rank) over them
    md = (summary_path.parent / "summary.md").read_text()
    assert "## Steps of the web UI ramp" in md and "users set in the web UI: 8 → 4" in md
    assert (summary_path.parent / "ui_steps.png").stat().st_size > 10_000
    assert_report_rebuilds_every_key(summary_path.parents[1], tmp_path / "rebuilt")  # ui, its levels and steps kept
    steps_drawn = [f for f in page_figures(summary_path.parents[1] / "report.html").values()
                   if f["layout"]["title"]["text"] == "decode tok/s against users"]
    assert [t["x"] for f in steps_drawn for t in f["data"]] == [[USERS, USERS // 2]]  # report.html's web UI steps
    history = (summary_path.parent / "llm_history.csv").read_text().splitlines()  # the live charts, kept
    assert history[0].startswith("t,users,") and len(history) > 2 * HOLD_S
    bench = json.loads((summary_path.parent / "vllm_bench.json").read_text())
    assert bench["max_concurrency"] == USERS
    assert out.text().count("waiting for START in the web UI") <= 1 and "] 0/300 answered" not in out.text()
    shown = [re.sub(r", \d+ s$", "", line) for line in out.lines if " answered, " in line]
    assert shown and all(a != b for a, b in zip(shown, shown[1:])), shown  # a stopped UI waits in silence
