"""orchestrate/report/formats.py: how numbers are written for a person (durations, rates, sizes), and the flat
figures variants and sweep steps are compared by."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrate.report.formats import GIB, MIB, fmt_bytes, fmt_ms, fmt_num, summary_numbers
from orchestrate.report.jsontypes import from_json
from orchestrate.report.schema.summary import Summary


@pytest.mark.parametrize("ms, text", [
    pytest.param(None, "–", id="none"),
    pytest.param(0.0, "0.00 ms", id="zero"),
    pytest.param(0.5, "0.50 ms", id="sub_ms"),
    pytest.param(9.994, "9.99 ms", id="under_10"),
    pytest.param(10.0, "10 ms", id="ten"),
    pytest.param(105.0, "105 ms", id="tpot_median"),
    pytest.param(999.4, "999 ms", id="under_a_second"),
    pytest.param(999.6, "1.0 s", id="rounds_to_a_second"),
    pytest.param(1000.0, "1.0 s", id="one_second"),
    pytest.param(1300.0, "1.3 s", id="ttft_median"),
    pytest.param(61000.0, "61.0 s", id="a_minute"),
])
def test_fmt_ms(ms: float | None, text: str) -> None:
    assert fmt_ms(ms) == text


@pytest.mark.parametrize("x, digits, text", [
    (None, 1, "–"), (209.8, 1, "209.8"), (1416.66, 1, "1,416.7"), (1.1098, 2, "1.11"), (0.0, 2, "0.00"),
])
def test_fmt_num(x: float | None, digits: int, text: str) -> None:
    assert fmt_num(x, digits) == text


@pytest.mark.parametrize("n, text", [(None, "–"), (0, "0.0 MiB"), (412.25 * MIB, "412.2 MiB"),
                                     (GIB - 1, "1,024.0 MiB"), (GIB, "1.00 GiB"), (1536 * GIB, "1,536.00 GiB")])
def test_fmt_bytes(n: float | None, text: str) -> None:
    assert fmt_bytes(n) == text


def test_summary_numbers_flatten_a_summary() -> None:
    summary: dict[str, Any] = {
        "requests": {"completed": 9, "errors": 1, "sent": 10},
        "throughput": {"prefill_tok_s": 500.0, "decode_tok_s": 120.5},
        "latency_ms": {"ttft": {"p50": 80.0, "p99": 400.0}, "tpot": {"p50": 9.0}},
        "speculative": {"acceptance_rate": 0.7}, "memory": {"peak_bytes": 123, "source": "container"},
        "goodput": {"slo": {"ttft_ms": 500}, "requests_meeting": 8, "share": 0.8, "requests_per_s": 1.5,
                    "output_tokens_per_s": 60.0},
        "energy": {"joules_per_output_token": 2.5, "steady_state": {"output_tokens_per_joule": 0.5}}}
    assert summary_numbers(from_json(Summary, summary)) == {
        "completed": 9, "errors": 1, "sent": 10, "prefill_tok_s": 500.0, "decode_tok_s": 120.5, "acceptance": 0.7,
        "peak_memory_bytes": 123, "memory_source": "container", "ttft_p50_ms": 80.0, "ttft_p99_ms": 400.0,
        "tpot_p50_ms": 9.0, "tpot_p99_ms": None, "goodput_slo": {"ttft_ms": 500}, "goodput_requests": 8,
        "goodput_share": 0.8, "goodput_rps": 1.5, "goodput_tok_s": 60.0, "joules_per_output_token": 2.5}
    steady = {**summary, "steady_state": {"found": True, "decode_tok_s": 100.0}}
    assert summary_numbers(from_json(Summary, steady))["steady_joules_per_output_token"] == 2.0  # 1 / 0.5 tokens per joule


def test_a_summary_of_a_failed_variant_has_every_figure_as_none() -> None:
    """Sections a failed load never wrote (or wrote as null) are no figures, not an error; the request counts are
    ``requests``' own (0 when it is missing: its type's defaults, what ``summarize_records`` writes for no records)."""
    numbers = summary_numbers(from_json(Summary, {"status": "failed_to_load", "speculative": None, "goodput": None,
                                                  "latency_ms": {"ttft": None}}))
    counts = {"completed": 0, "errors": 0, "sent": 0}
    assert {k: numbers[k] for k in counts} == counts
    figures = {k: v for k, v in numbers.items() if k not in counts}
    assert set(figures.values()) == {None} and "decode_tok_s" in numbers and "goodput_rps" in numbers
