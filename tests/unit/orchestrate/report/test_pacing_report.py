"""orchestrate/report/pacing_report.py: the notes of the ``arrivals`` and ``stages`` blocks, from records through
``aggregates/pacing_figures.py``, and the blocks reaching summary.md (their lines: ``test_markdown.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from orchestrate.report import pacing_report
from orchestrate.report.aggregates import pacing_figures
from orchestrate.report.aggregates.headline import summarize_records
from orchestrate.report.markdown import summary_md
from orchestrate.results import VariantPaths
from tests.unit.orchestrate.report.aggregates.test_pacing_figures import T0, arrivals_info, rec, stages_info
from tests.unit.orchestrate.report.test_console import typed


def test_an_open_loop_that_kept_up() -> None:
    records = pd.DataFrame([rec(k, T0 + k / 4 + 0.002, scheduled=T0 + k / 4) for k in range(9)])
    arr = pacing_figures.summarize_arrivals(records, arrivals_info(9, 4.0, end=T0 + 3))
    assert (arr["scheduled"], arr["sent"], arr["unsent"], arr["late"]) == (9, 9, 0, 0)
    assert arr["rate_scheduled"] == pytest.approx(4.0) and arr["rate_achieved"] == pytest.approx(4.0)
    assert arr["send_delay_ms"]["max"] == pytest.approx(2.0, abs=1e-3) and not arr["cap_fell_behind"]
    assert arr["latency_from_schedule_ms"]["ttft"]["p50"] == pytest.approx(102.0, abs=1e-3)
    assert pacing_report.notes({"arrivals": arr}) == []


def test_an_open_loop_whose_cap_fell_behind_counts_late_and_unsent() -> None:
    """10 due over 0.25 s; 4 went out, ever later; 6 never did, 5 of them already due at the end."""
    info = arrivals_info(10, 40.0, end=T0 + 0.2)
    info["offsets_s"][-1] = 1.0  # the last one was not yet due when the run ended
    records = pd.DataFrame([rec(0, T0, scheduled=T0), rec(1, T0 + 0.025, scheduled=T0 + 0.025),
                            rec(2, T0 + 0.5, scheduled=T0 + 0.05), rec(3, T0 + 0.52, status="cancelled",
                                                                       e2e=100.0, ttft=None, scheduled=T0 + 0.075)])
    arr = pacing_figures.summarize_arrivals(records, info)
    assert (arr["sent"], arr["unsent"], arr["unsent_overdue"], arr["unsent_not_due"]) == (4, 6, 5, 1)
    assert arr["sent"] + arr["unsent"] == arr["scheduled"]
    assert arr["late"] == 2 and arr["late_share"] == 0.5 and arr["cap_fell_behind"]
    assert arr["send_delay_ms"]["max"] == pytest.approx(450.0)
    assert arr["latency_from_schedule_ms"]["e2e"]["max"] == pytest.approx(950.0)  # completed ones only
    note = pacing_report.notes({"arrivals": arr})[0]
    assert note.startswith("the concurrency cap of 2 could not keep up with 40.0 req/s: 2 late (> 10 ms), "
                           "6 unsent (5 of them already due)")


def test_a_time_cap_that_cut_the_schedule_is_not_the_caps_fault() -> None:
    records = pd.DataFrame([rec(k, T0 + k / 2, scheduled=T0 + k / 2) for k in range(3)])
    arr = pacing_figures.summarize_arrivals(records, arrivals_info(10, 2.0, end=T0 + 1.2))
    assert (arr["unsent"], arr["unsent_overdue"], arr["unsent_not_due"], arr["cap_fell_behind"]) == (7, 0, 7, False)
    assert pacing_report.notes({"arrivals": arr}) == ["the run ended with 7 scheduled request(s) not yet due; they "
                                                   "were never sent (the time cap cut the schedule short)"]


def test_records_go_to_the_stage_active_at_their_send_time() -> None:
    one = [rec(k, T0 + 0.5 * k) for k in range(4)]  # stage 1 (one user): back to back
    three = [rec(4 + 3 * k + u, T0 + 2.1 + 0.5 * k, status="error" if (k, u) == (0, 0) else "ok", ttft=150.0)
             for k in range(4) for u in range(3)]  # stage 2: three at a time
    records = pd.DataFrame(one + three)
    stages = pacing_figures.summarize_stages(records, stages_info([T0, T0 + 2.05], T0 + 4.2))
    first, second, third = stages
    assert (first["requests"], first["completed"], first["peak_in_flight"], first["started_s"]) == (4, 4, 1, 0.0)
    assert (second["requests"], second["completed"], second["errors"], second["peak_in_flight"]) == (12, 11, 1, 3)
    assert second["started_s"] == pytest.approx(2.05) and second["active_s"] == pytest.approx(4.1 - 2.05)
    assert first["ttft_p50_ms"] == 100.0 and second["ttft_p50_ms"] == 150.0 and second["tpot_p50_ms"] == 20.0
    # stage 1: chunks of its 4 requests at 0.1..0.5 s after each send, all before 2.05 s: 20 tokens over 2.05 s
    assert first["decode_tok_s"] == pytest.approx(20 / 2.05)
    assert not third["reached"] and third["requests"] == 0
    assert pacing_report.notes({"stages": stages}) == ["stage(s) 3 never began (the run ended first)"]


def test_the_blocks_come_from_the_files_and_reach_summary_md(tmp_path: Path) -> None:
    paths = VariantPaths(tmp_path)
    assert pacing_figures.load_mode_summary(paths, pd.DataFrame()) == {}  # a plain run: no new keys
    paths.stages_json.write_text(json.dumps(stages_info([T0], None)))
    paths.arrivals_json.write_text(json.dumps(arrivals_info(2, 1.0, end=T0 + 5)))
    records = pd.DataFrame([rec(0, T0, scheduled=T0), rec(1, T0 + 1.2, scheduled=T0 + 1)])
    blocks = pacing_figures.load_mode_summary(paths, records)
    assert blocks["arrivals"]["late"] == 1 and blocks["stages"][0]["requests"] == 2
    md = summary_md(typed({"scenario": "s", "variant": "v", **summarize_records(records), **blocks}))
    assert "Open loop: 1.00 req/s asked (constant)" in md and "| stage | users | duration |" in md


