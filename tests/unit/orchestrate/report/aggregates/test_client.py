"""orchestrate/report/aggregates/client.py: Locust's own count of the requests and tokens, against the
records'."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrate.report.aggregates.client import crosscheck_agrees, locust_crosscheck
from orchestrate.report.aggregates.headline import Headline, summarize_records
from orchestrate.report.schema.headline import Requests, Tokens
from orchestrate.report.schema.machine import LocustCrosscheck, LocustCsv
from tests.unit.orchestrate.report.aggregates.test_headline import T0, eos_only_record, frame, study_records


@pytest.fixture
def summary() -> Headline:
    return summarize_records(frame(study_records()))


def locust_row(method: str, name: str, num_requests: int, num_failures: int, total_content_length: int,
               start_time: float, last_request_timestamp: float | None) -> dict:
    """One entry of Locust's ``--json-file`` (``StatsEntryDict``)."""
    return {"name": name, "method": method, "last_request_timestamp": last_request_timestamp,
            "start_time": start_time, "num_requests": num_requests, "num_none_requests": 0,
            "num_failures": num_failures, "total_response_time": 1234, "max_response_time": 1000,
            "min_response_time": 300, "total_content_length": total_content_length,
            "response_times": {"300": 1, "500": 1, "1000": 1}, "num_reqs_per_sec": {"1000": 2, "1001": 2},
            "num_fail_per_sec": {"1001": 1}}


def locust_rows() -> list[dict]:
    """What Locust saw of the study: cancelled requests never fire, so 4 requests, 1 failure.

    The request row's length is output tokens (11); the TTFT row's length is prompt tokens (105).
    """
    return [
        locust_row("POST", "/v1/chat/completions", 4, 1, 11, T0 - 0.5, T0 + 2.0),
        locust_row("METRIC", "TTFT", 3, 0, 105, T0 - 0.5, T0 + 1.9),
        locust_row("METRIC", "TPOT", 3, 0, 11, T0 - 0.4, None),
    ]


def write_json(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "locust_stats.json"
    path.write_text(json.dumps(rows, indent=4))
    return path


def test_locust_crosscheck(tmp_path: Path):
    check = locust_crosscheck(write_json(tmp_path, locust_rows()))
    # duration: earliest start_time (999.5) to latest last_request_timestamp (1002.0) = 2.5 s
    assert check is not None
    assert check.csv is None  # no CSV given
    assert check == LocustCrosscheck(requests=4, failures=1, no_content=0, prompt_tokens=105, output_tokens=11,
                                     duration_s=2.5, prefill_tok_s=pytest.approx(105 / 2.5),
                                     decode_tok_s=pytest.approx(11 / 2.5))


def test_crosscheck_with_a_reply_without_content(tmp_path: Path):
    # the EOS-only reply's prompt tokens ride on the NO_CONTENT row: Locust's totals equal the records'
    summary = summarize_records(frame(study_records() + [eos_only_record(5, T0 + 1.6, 223)]))
    rows = locust_rows()
    rows[0].update(num_requests=5, total_content_length=12)
    rows.append(locust_row("METRIC", "NO_CONTENT", 1, 0, 223, T0 + 1.6, T0 + 1.7))
    check = locust_crosscheck(write_json(tmp_path, rows))
    assert check is not None and check.prompt_tokens == 105 + 223 and check.no_content == 1
    assert agree(summary, check) is True
    rows.pop()  # without that row, as before the fix: 223 prompt tokens short
    assert agree(summary, locust_crosscheck(write_json(tmp_path, rows))) is False


def agree(summary: Headline, check: LocustCrosscheck | None) -> bool | None:
    return crosscheck_agrees(summary.requests, summary.tokens, check)


CSV_HEADER = "Type,Name,Request Count,Failure Count,Median Response Time\n"


@pytest.mark.parametrize("csv_requests, agrees", [(4, True), (3, False)], ids=["final", "missed-the-last"])
def test_crosscheck_reads_the_stats_csv(tmp_path: Path, summary, csv_requests: int, agrees: bool):
    csv = tmp_path / "locust_stats.csv"
    csv.write_text(CSV_HEADER + f"POST,/v1/chat/completions,{csv_requests},1,300\nMETRIC,TTFT,3,0,200\n"
                   ",Aggregated,10,1,200\n")
    check = locust_crosscheck(write_json(tmp_path, locust_rows()), csv)
    assert check is not None and check.csv == LocustCsv(requests=csv_requests, failures=1)
    assert agree(summary, check) is agrees


def test_crosscheck_agrees_with_the_records(tmp_path: Path, summary):
    check = locust_crosscheck(write_json(tmp_path, locust_rows()))
    assert agree(summary, check) is True


@pytest.mark.parametrize("field, value", [
    ("num_requests", 5),            # counted the cancelled request
    ("num_failures", 0),            # missed the error
    ("total_content_length", 12),   # one output token more than the records
])
def test_crosscheck_disagrees(tmp_path: Path, summary, field: str, value: int):
    rows = locust_rows()
    rows[0][field] = value
    assert agree(summary, locust_crosscheck(write_json(tmp_path, rows))) is False


def test_crosscheck_disagrees_on_prompt_tokens(tmp_path: Path, summary):
    rows = locust_rows()
    rows[1]["total_content_length"] = 100
    assert agree(summary, locust_crosscheck(write_json(tmp_path, rows))) is False


def test_crosscheck_without_a_chat_row(tmp_path: Path):
    check = locust_crosscheck(write_json(tmp_path, [locust_row("GET", "/health", 1, 0, 0, T0, T0)]))
    assert check == LocustCrosscheck(requests=0, failures=0, no_content=0, prompt_tokens=0, output_tokens=0,
                                     duration_s=None, prefill_tok_s=None, decode_tok_s=None)


@pytest.mark.parametrize("content", [None, "", "[{\"method\": "], ids=["missing", "empty", "torn"])
def test_crosscheck_unreadable_file_is_none(tmp_path: Path, content: str | None):
    path = tmp_path / "locust_stats.json"
    if content is not None:
        path.write_text(content)
    assert locust_crosscheck(path) is None
    assert crosscheck_agrees(Requests(), Tokens(), None) is None
