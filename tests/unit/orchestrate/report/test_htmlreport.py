"""orchestrate/report/htmlreport.py: report.html's sections, tables and safety, from result files alone
(the browser's view of a real run is tests/integration/test_report_html.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from orchestrate.report import htmlreport
from orchestrate.report.aggregates.headline import summarize_records
from orchestrate.report.jsontypes import to_json
from orchestrate.results import VariantPaths
from tests.browser import page_figures
from tests.unit.orchestrate.report.aggregates.test_headline import frame, study_records


def variant(run: Path, name: str, summary: dict[str, Any]) -> VariantPaths:
    paths = VariantPaths.create(run, name)
    paths.summary_json.write_text(json.dumps({"scenario": "demo", "variant": name, **summary}))
    paths.server_json.write_text("{}")
    paths.records.write_text("".join(r.to_json() + "\n" for r in study_records()))
    return paths


HEADLINE = {**to_json(summarize_records(frame(study_records())).blocks()), "status": "completed",
            "notes": ["a server's log said <script>alert(1)</script>"]}
"""study_records' summary: 3 completed, 1 error, 1 cancelled."""


def test_the_tables_hold_each_figure_at_its_summary_path_and_leave_out_what_no_run_has(tmp_path: Path) -> None:
    run = tmp_path / "run"
    variant(run, "a", HEADLINE)
    failed = {k: v for k, v in HEADLINE.items() if k not in ("throughput", "latency_ms", "duration_s")}
    variant(run, "b", {**failed, "status": "failed_to_load"})
    runs = htmlreport._runs(run, [VariantPaths(run / "a"), VariantPaths(run / "b")])
    table = htmlreport.table(runs, htmlreport.GLANCE)
    assert table is not None
    assert "E2E p50" in table["columns"] and "capacity" not in table["columns"] and "GPU memory" not in table["columns"]
    a, b = table["rows"]
    decode = next(c for c in a["cells"] if c["metric"] == "throughput.decode_tok_s")
    assert decode == {"metric": "throughput.decode_tok_s", "value": repr(HEADLINE["throughput"]["decode_tok_s"]),
                      "text": f"{HEADLINE['throughput']['decode_tok_s']:,.1f}", "interval": ""}
    ttft = next(c for c in a["cells"] if c["metric"] == "latency_ms.ttft.p50")
    assert ttft["text"] == "200 ms"  # TTFTs 100, 200, 400 ms
    assert next(c for c in b["cells"] if c["metric"] == "throughput.decode_tok_s") == \
        {"metric": "throughput.decode_tok_s", "value": "null", "text": "–", "interval": ""}
    assert htmlreport.table(runs, htmlreport.STEADY, lambda r: False) is None


def test_a_figure_with_an_interval_shows_it_beside_the_value(tmp_path: Path) -> None:
    run = tmp_path / "run"
    decode = HEADLINE["throughput"]["decode_tok_s"]
    variant(run, "a", {**HEADLINE, "intervals": {"batches": 10, "decode_tok_s": {"low": decode - 2, "high": decode + 2},
                                                 "ttft_ms": {"p50": {"low": 100.0, "high": 400.0}}}})
    table = htmlreport.table(htmlreport._runs(run, [VariantPaths(run / "a")]), htmlreport.GLANCE)
    assert table is not None
    cells = {c["metric"]: (c["text"], c["interval"]) for c in table["rows"][0]["cells"]}
    assert cells["throughput.decode_tok_s"] == (f"{decode:,.1f}", "± 2.0")
    assert cells["latency_ms.ttft.p50"] == ("200 ms", "[100 ms–400 ms]") and cells["latency_ms.ttft.p99"] == ("400 ms", "")


def test_the_page_carries_its_charts_and_script_and_asks_the_network_for_nothing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    variant(run, "a", HEADLINE)
    page = htmlreport.write_html_report(run)
    assert page == run / "report.html" and not (run / "report.tmp").exists()
    html = page.read_text()
    assert "<script src" not in html and "<link" not in html and "Plotly.newPlot" in html
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    figures = page_figures(page)
    titles = {f["layout"]["title"]["text"] for f in figures.values()}
    assert {"TTFT: time to first token", "requests in flight", "errors by cause"} <= titles
    assert re.findall(r'<section id="([^"]+)"', html) == ["glance", "latency", "timelines", "requests", "errors",
                                                          "runs", "definitions"]
    (timeline,) = [f for f in figures.values() if f["layout"]["title"]["text"].startswith("a: each request")]
    lines = {t["name"]: t for t in timeline["data"]}
    assert set(lines) == {"ok", "error", "cancelled", "first token"}  # study_records: 3 completed, 1 error, 1 cancelled
    assert len(lines["ok"]["x"]) == 3 * 3 and len(lines["first token"]["x"]) == 5  # each streamed a first token


def test_a_sweep_web_ui_steps_and_a_comparison_each_get_their_section(tmp_path: Path) -> None:
    run = tmp_path / "run"
    steps = {"key": "users", "values": [1, 2], "warmup_prompts": 0, "settle_s": 0.0, "hold_s": 10.0,
             "steps": [{"value": v, "status": "completed", "decode_tok_s": d} for v, d in ((1, 5.0), (2, 9.0))]}
    variant(run, "swept", {**HEADLINE, "sweep": steps})
    variant(run, "person", {**HEADLINE, "ui": True, "ui_steps": steps})
    variant(run, "searched", HEADLINE)
    (run / "compare.json").write_text(json.dumps({
        "runs": [str(run)], "sweeps": [], "variants": [], "varying_settings": [], "factors": {}, "n_repeats": 1,
        "noise_floor": {}, "confounded": [], "repeats": [], "excluded": [], "basis": "whole", "baseline": "swept",
        "effects": [{"factor": "load.users", "from": 1, "to": 2, "with": {}, "ratios": {"decode_tok_s": 1.8},
                     "confounded_by": [], "pair": ["swept", "person"]},
                    {"factor": "x", "from": 1, "to": 2, "with": {}, "ratios": {"decode_tok_s": 3.0},
                     "confounded_by": ["host_load"], "pair": ["swept", "searched"], "decode_tok_s": [1.0, 3.0]}]}))
    html = htmlreport.write_html_report(run).read_text()  # type: ignore[union-attr]
    ids = re.findall(r'<section id="([^"]+)"', html)
    assert ids[:2] == ["glance", "comparison"] and {"sweep", "ui-steps", "latency", "timelines"} <= set(ids)
    effects = [f for f in page_figures(run / "report.html").values() if f["layout"]["title"]["text"].startswith("effect")]
    assert [t["x"] for f in effects for t in f["data"]] == [[1.8]]  # the confounded effect is not drawn


def test_no_page_before_a_variant_has_a_summary(tmp_path: Path) -> None:
    VariantPaths.create(tmp_path, "a").server_json.write_text("{}")
    assert htmlreport.write_html_report(tmp_path) is None and not (tmp_path / "report.html").exists()


def test_markdown_inside_the_page_loses_its_title_and_steps_its_headings_down() -> None:
    assert htmlreport.prose("# Comparison\n\n## Effects\n\ntext") == "<h4>Effects</h4>\n<p>text</p>\n"
    assert htmlreport._script_json({"a": "</script>"}) == '{"a":"<\\/script>"}'


def test_a_run_that_sent_nothing_shows_its_status_and_no_empty_charts(tmp_path: Path) -> None:
    run = tmp_path / "run"
    paths = VariantPaths.create(run, "a")
    paths.server_json.write_text("{}")
    paths.summary_json.write_text(json.dumps({"scenario": "demo", "variant": "a", "status": "failed_to_load",
                                              "server": {"cause": "model loading failed"},
                                              "requests": {"sent": 0, "errors": 0, "completed": 0}}))
    html = htmlreport.write_html_report(run).read_text()  # type: ignore[union-attr]
    assert re.findall(r'<section id="([^"]+)"', html) == ["glance", "runs", "definitions"]
    assert 'data-metric="status" data-value="&#34;failed_to_load&#34;">failed_to_load<' in html
    assert "model loading failed" in html and page_figures(run / "report.html") == {}


def test_a_page_rewritten_after_each_variant_reads_each_records_file_once_until_it_changes(
        tmp_path: Path, monkeypatch: Any) -> None:
    """A matrix rewrites report.html after every variant: a finished variant's records are not read again."""
    read: list[Path] = []
    real = htmlreport.records_of
    monkeypatch.setattr(htmlreport, "records_of", lambda path: read.append(path) or real(path))
    run = tmp_path / "run"
    a = variant(run, "a", HEADLINE)
    htmlreport.write_html_report(run)
    b = variant(run, "b", HEADLINE)
    htmlreport.write_html_report(run)
    assert read == [a.records, b.records]
    with a.records.open("a") as f:  # a rebuilt or resumed variant's records: read again
        f.write(study_records()[0].to_json() + "\n")
    htmlreport.write_html_report(run)
    assert read == [a.records, b.records, a.records]


def test_the_summary_s_records_are_drawn_without_a_second_read(tmp_path: Path, monkeypatch: Any) -> None:
    """``records_of`` keeps the last frame for the page: one parse of a million records, not two; the page lets
    it go once written."""
    from orchestrate.report.aggregates import recordsfile
    parsed: list[Path] = []
    real = recordsfile.read_records
    monkeypatch.setattr(recordsfile, "read_records", lambda path: parsed.append(path) or real(path))
    run = tmp_path / "run"
    paths = variant(run, "a", HEADLINE)
    first = recordsfile.records_of(paths.records)
    assert recordsfile.records_of(paths.records) is first and parsed == [paths.records]
    htmlreport.write_html_report(run)
    assert parsed == [paths.records] and not recordsfile._KEPT
