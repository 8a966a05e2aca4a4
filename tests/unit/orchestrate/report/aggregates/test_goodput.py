"""orchestrate/report/aggregates/goodput.py: requests within the SLO, from a fixed hand-written record set,
counted by hand."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pytest

from locustfiles.records import CANCELLED, ERROR, OK, RequestRecord
from orchestrate.report.aggregates.goodput import goodput
from orchestrate.report.aggregates.headline import summarize_records
from orchestrate.report.jsontypes import to_json
from orchestrate.report.schema.steady import MissedBy
from orchestrate.report.schema.summary import RunFacts
from orchestrate.report.summary import build_summary
from orchestrate.results import VariantPaths

T0 = 1000.0
SLO = {"ttft_ms": 200.0, "tpot_ms": 50.0, "e2e_ms": 1000.0}


def record(i: int, send: float, status: str, ttft: float | None, e2e: float | None, out: int | None,
           tpot: float | None) -> RequestRecord:
    """``tpot`` is written by hand: (e2e − ttft) / (out − 1), None for one output token."""
    return RequestRecord(request_id=f"local-{i}", prompt_index=i, worker="local", send_ts=T0 + send, status=status,
                         error_class=None if status == OK else status, ttft_ms=ttft, e2e_ms=e2e, tpot_ms=tpot,
                         output_tokens=out, prompt_tokens=10)


def study() -> list[RequestRecord]:
    """Nine requests against SLO TTFT ≤ 200, TPOT ≤ 50, E2E ≤ 1000 ms.

    ==========  =====  ======  ====  ===  ==============  ==========================
    request     send   status  TTFT  E2E  out, TPOT       verdict
    ==========  =====  ======  ====  ===  ==============  ==========================
    at_limit    +0.0   ok      100   500   9, 400/8 = 50  good (50 ≤ 50: a limit is met at it)
    fast        +0.1   ok      150   350  11, 200/10 = 20 good
    one_token   +0.2   ok      180   190   1, none        good (no TPOT: meets the TPOT limit)
    slow_ttft   +0.3   ok      300   500   5, 200/4 = 50  misses TTFT only
    slow_tpot   +0.4   ok      100   300   3, 200/2 = 100 misses TPOT only
    slow_e2e    +0.5   ok      100  1100  21, 1000/20 = 50 misses E2E only
    slow_all    +0.6   ok      400  1200   2, 800/1 = 800 misses all three
    error       +0.7   error    50    60   2, 10          never good, though fast
    cancelled   +0.8   cancel  100     –   –              never good
    ==========  =====  ======  ====  ===  ==============  ==========================
    """
    return [
        record(0, 0.0, OK, 100.0, 500.0, 9, 50.0),
        record(1, 0.1, OK, 150.0, 350.0, 11, 20.0),
        record(2, 0.2, OK, 180.0, 190.0, 1, None),
        record(3, 0.3, OK, 300.0, 500.0, 5, 50.0),
        record(4, 0.4, OK, 100.0, 300.0, 3, 100.0),
        record(5, 0.5, OK, 100.0, 1100.0, 21, 50.0),
        record(6, 0.6, OK, 400.0, 1200.0, 2, 800.0),
        record(7, 0.7, ERROR, 50.0, 60.0, 2, 10.0),
        record(8, 0.8, CANCELLED, 100.0, None, None, None),
    ]


def frame(records: list[RequestRecord]) -> pd.DataFrame:
    return pd.DataFrame([asdict(r) for r in records])


def test_goodput_by_hand() -> None:
    df = frame(study())
    duration = summarize_records(df).duration_s
    # the summary's window: first send (+0.0) → last end (slow_all: +0.6 + 1.2 s) = 1.8 s
    assert duration == pytest.approx(1.8)
    block = goodput(df, SLO, duration)
    assert block is not None
    assert block.slo == SLO
    assert block.requests_meeting == 3                              # at_limit, fast, one_token
    assert block.share == pytest.approx(3 / 9)                      # of ALL 9 sent, error and cancelled included
    assert block.requests_per_s == pytest.approx(3 / 1.8)           # 1.667
    assert block.output_tokens_per_s == pytest.approx(21 / 1.8)     # (9 + 11 + 1) tokens / 1.8 s = 11.667
    # slow_all counts under each limit it is over: ttft 2, tpot 2, e2e 2
    assert block.missed_by == MissedBy(ttft_ms=2, tpot_ms=2, e2e_ms=2, error=1, cancelled=1)


def test_a_subset_of_limits_judges_only_those() -> None:
    df = frame(study())
    block = goodput(df, {"tpot_ms": 50.0}, 1.8)
    assert block is not None
    # over TPOT 50: slow_tpot (100), slow_all (800); the 5 other completed ones are good
    assert block.requests_meeting == 5 and block.share == pytest.approx(5 / 9)
    assert block.missed_by == MissedBy(tpot_ms=2, error=1, cancelled=1)
    # good tokens 9 + 11 + 1 + 5 + 21 = 47
    assert block.output_tokens_per_s == pytest.approx(47 / 1.8)


def test_a_completed_request_without_ttft_misses_a_ttft_limit() -> None:
    # it completed without any content chunk: nothing reached the user
    df = frame([record(0, 0.0, OK, None, 100.0, 0, None), record(1, 0.1, OK, 50.0, 100.0, 1, None)])
    block = goodput(df, {"ttft_ms": 200.0, "tpot_ms": 10.0}, 0.2)
    assert block is not None
    assert block.requests_meeting == 1 and block.missed_by.ttft_ms == 1 and block.missed_by.tpot_ms == 0


def test_no_slo_no_block_and_no_records() -> None:
    assert goodput(frame(study()), None, 1.8) is None
    assert goodput(frame(study()), {}, 1.8) is None
    empty = goodput(pd.DataFrame(), SLO, 0.0)
    assert empty is not None
    assert (empty.requests_meeting, empty.share, empty.requests_per_s) == (0, None, None)


def test_summary_md_and_report_rebuild_keep_goodput(tmp_path: Path) -> None:
    """``build_summary`` (also ``tokenswarm report``) judges goodput from the ``slo`` kept in ``extra``."""
    paths = VariantPaths.create(tmp_path, "v")
    paths.records.write_text("".join(r.to_json() + "\n" for r in study()))
    summary = to_json(build_summary(paths, "s", "v", RunFacts("completed", slo=SLO)))
    assert summary["goodput"]["requests_meeting"] == 3
    assert summary["goodput"]["requests_per_s"] == pytest.approx(3 / summary["duration_s"])
    written = json.loads(paths.summary_json.read_text())
    assert written["slo"] == SLO and written["goodput"] == summary["goodput"]
    md = paths.summary_md.read_text()
    assert "## Goodput" in md
    assert ("**3 requests met the SLO (TTFT ≤ 200 ms, TPOT ≤ 50 ms, E2E ≤ 1.0 s): 33.3 % of all sent; "
            "1.67 req/s, 11.7 output tok/s**") in md
    assert "missed by: TTFT 2, TPOT 2, E2E 2, errors 1, cancelled 1" in md
    bench = json.loads(paths.vllm_bench_json.read_text())
    assert bench["request_goodput"] == pytest.approx(3 / 1.8)
    without = build_summary(paths, "s", "v", RunFacts("completed"))
    assert without.goodput is None and "## Goodput" not in paths.summary_md.read_text()
