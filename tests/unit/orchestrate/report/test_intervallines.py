"""orchestrate/report/intervallines.py: figure ± half width in summary.md, and the ``until`` line."""

from __future__ import annotations

from orchestrate.report.formats import fmt_ms, fmt_num
from orchestrate.report.intervallines import fmt_pm, intervals_section, until_line
from orchestrate.report.schema import Summary
from orchestrate.report.schema.common import Stats
from orchestrate.report.schema.headline import LatencyMs, Throughput
from orchestrate.report.schema.intervals import Interval, Intervals, PercentileIntervals
from orchestrate.report.schema.until import Until, UntilTarget


def test_a_symmetric_interval_is_a_half_width_an_asymmetric_one_its_ends() -> None:
    assert fmt_pm(94.3, Interval(91.2, 97.4), fmt_num) == "94.3 ± 3.1"
    assert fmt_pm(2.0, Interval(0.0, 5.0), fmt_num) == "2.0 [0.0–5.0]"
    assert fmt_pm(412.0, Interval(398.0, None), fmt_ms) == "412 ms [398 ms–?]"
    assert fmt_pm(412.0, None, fmt_ms) == "412 ms" and fmt_pm(None, None, fmt_ms) == "–"


def test_the_section_lists_each_figure_with_its_interval() -> None:
    summary = Summary(throughput=Throughput(decode_tok_s=100.0), latency_ms=LatencyMs(
        ttft=Stats(p50=400.0, p99=900.0, mean=420.0)), intervals=Intervals(
        batches=10, decode_tok_s=Interval(96.0, 104.0), ttft_ms=PercentileIntervals(
            p50=Interval(390.0, 415.0), p99=Interval(850.0, None), mean=Interval(410.0, 430.0))))
    lines = intervals_section(summary)
    assert lines[0] == "## 95 % intervals (whole run)"
    assert "| decode tok/s | 100.0 ± 4.0 |" in lines and "| TTFT p99 | 900 ms [850 ms–?] |" in lines
    assert "| TTFT mean | 420 ms ± 10 ms |" in lines and not any(line.startswith("| TPOT") for line in lines)
    assert intervals_section(Summary()) == []


def test_the_until_line_says_whether_the_run_stopped_at_its_precision() -> None:
    held = UntilTarget("ttft_ms.p99", 0.05, reached=0.041, value=412.0, held=True, held_at_s=12.34)
    short = UntilTarget("decode_tok_s", 0.02, reached=None)
    assert until_line(Until(held=True, stopped=True, checks=4, targets=(held,))) == (
        "until: stopped at the precision asked (4 checks): ttft_ms.p99 ±4.1 % (asked ±5 %, held at 12.3 s)")
    assert until_line(Until(targets=(held, short), reason="the run ended (num_prompts) before every target held")) == (
        "until: the run ended (num_prompts) before every target held: ttft_ms.p99 ±4.1 % (asked ±5 %, held at "
        "12.3 s), decode_tok_s no bounded interval (asked ±2 %)")
    assert until_line(Until(held=False, stopped=True, checks=5, targets=(short,))) == (
        "until: stopped when every target held at a check; the final window, to the stop, differs a little (5 checks): "
        "decode_tok_s no bounded interval (asked ±2 %)")
    assert until_line(None) is None
