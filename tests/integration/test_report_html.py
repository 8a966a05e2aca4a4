"""``report.html`` of the demo (the embedded llama.cpp serving Gemma 3 270M, real ShareGPT V3), opened as a
reader opens it: from disk in headless Chromium with the network blocked; then rebuilt by ``tokenswarm
report`` from the files alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser import artifacts_dir, assert_shows_the_summaries, open_report
from tests.helpers import read_jsonl, tokenswarm_run

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PROMPTS = 8


def test_the_demos_report_opens_offline_draws_every_chart_and_shows_the_summarys_numbers(tmp_path: Path) -> None:
    proc, run = tokenswarm_run(tmp_path, ROOT / "scenarios" / "demo.yaml", "--num-prompts", str(PROMPTS),
                               "--max-tokens", "16")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"report: {run / 'report.html'}" in proc.stdout
    page = open_report(run / "report.html", artifacts_dir() / "report-demo.png")
    assert page.network == [] and page.errors == []
    assert page.scrolls == [] and page.covered == []  # at 1,400 px: no table scrolls, no title under the mode bar
    assert (run / "report.html").stat().st_size < 2.5e6  # Plotly's bundle rides gzipped
    assert page.sections == ["glance", "latency", "timelines", "requests", "runs", "definitions"]
    assert len(page.charts) >= 6 and all(layers > 0 for layers in page.charts.values()), page.charts
    assert_shows_the_summaries(page, run)
    summary = json.loads((run / "base" / "summary.json").read_text())
    assert {c["metric"] for c in page.cells} >= {"throughput.decode_tok_s", "latency_ms.ttft.p50", "requests.completed"}

    # the curves come from the records: the TTFT distribution passes through the summary's median (nearest rank),
    # decode tokens counted as they arrived add up to the output tokens, prefill's to the prompt tokens
    ttft = page.figures["TTFT: time to first token"][0]
    median = ttft["x"][ttft["y"].index(50)]
    assert median == pytest.approx(summary["latency_ms"]["ttft"]["p50"], rel=1e-4)
    for title, total in (("decode tokens/s", summary["tokens"]["output"]), ("prefill tokens/s", summary["tokens"]["prompt"])):
        (curve,) = [f[0] for t, f in page.figures.items() if t.startswith(title)]
        assert sum(curve["y"]) * (curve["x"][1] - curve["x"][0]) == pytest.approx(total, rel=1e-3), title
    records = read_jsonl(run / "base" / "requests.jsonl")
    spans = [(r["send_ts"], r["send_ts"] + r["e2e_ms"] / 1000) for r in records]
    peak = max(sum(s <= t < e for s, e in spans) for t, _ in spans)
    assert max(page.figures["requests in flight"][0]["y"]) == peak

    # `tokenswarm report` rebuilds the page from the files alone, with the same numbers
    (run / "report.html").unlink()
    rebuilt = subprocess.run([sys.executable, "-m", "orchestrate.cli", "report", str(run)],
                             capture_output=True, text=True, timeout=120)
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    again = open_report(run / "report.html")
    assert again.cells == page.cells and again.sections == page.sections and again.errors == []
