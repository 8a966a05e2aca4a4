"""orchestrate/report/notes.py: the plain-language caveats beside the numbers, from typed summaries and blocks:
the run's own (sampling, a retry, a late client, a server gone, output control, counts that disagree), a busy
host's (``busy_reasons``, ``host_note``, from hand-written readings) and an open loop's or a ramp's
(``pacing_notes``, ``cap_warning``, from records through ``aggregates/pacing_figures.py``, and the blocks
reaching summary.md; their lines: ``test_markdown.py``)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from orchestrate.report.aggregates import pacing_figures
from orchestrate.report.aggregates.headline import summarize_records
from orchestrate.report.aggregates.host import summarize_host
from orchestrate.report.markdown import summary_md
from orchestrate.report.notes import TOKEN_COUNTERS, host_note, notes, pacing_notes
from orchestrate.report.schema.headline import Reasoning, Requests
from orchestrate.report.schema.machine import Client, Host, LoopLag
from orchestrate.report.schema.runfacts import FirstAttempt, Sampling
from orchestrate.report.schema.server import ServerMetrics
from orchestrate.report.schema.summary import Summary
from orchestrate.results import VariantPaths, read_json
from orchestrate.scenario.host_limits import HostLimits
from orchestrate.scenario.spec import LoadSpec
from tests.unit.orchestrate.report.aggregates.test_host import readings
from tests.unit.orchestrate.report.aggregates.test_pacing_figures import T0, arrivals_info, rec, stages_info


def base(**blocks: Any) -> Summary:
    return Summary(**{"status": "completed", "requests": Requests(sent=10, completed=10, unsent=0), **blocks})


def test_a_clean_run_has_no_notes() -> None:
    assert notes(base()) == []
    assert notes(base(sampling=Sampling(token_counter="server_tokenize"))) == []


@pytest.mark.parametrize("counter", sorted(set(TOKEN_COUNTERS) - {"server_tokenize"}))
def test_every_inexact_token_counter_is_named(counter: str) -> None:
    note, = notes(base(sampling=Sampling(token_counter=counter)))
    assert note.startswith(f"prompt lengths: {TOKEN_COUNTERS[counter]}")
    assert note.endswith("sampling limits are approximate") == (counter != "server_tokenize_local_template")


def test_output_control_notes() -> None:
    """ignore_eos asked and every reply short: the server ignored it; some short: named apart; off: the model's
    own lengths, no note. Inexact random prompts and reasoning counted from the stream are said."""
    def with_(short: int, ignore_eos: bool, **more: Any) -> list[str]:
        return notes(base(requests=Requests(sent=10, completed=10, unsent=0, short_replies=short),
                          load=LoadSpec(ignore_eos=ignore_eos), **more))
    ignored, = with_(10, True)
    assert ignored.startswith("the server ignored ignore_eos: every one of the 10 completed replies ended before")
    some, = with_(2, True)
    assert some.startswith("2 of 10 completed replies ended before their max_tokens despite ignore_eos")
    assert with_(10, False) == [] and with_(0, True) == []
    inexact, chunks = with_(0, False, sampling=Sampling(token_counter="server_tokenize", inexact=3),
                            reasoning=Reasoning(tokens_source=("chunks",)))
    assert inexact.startswith("3 random prompts could not be cut to their exact length")
    assert chunks.startswith("reasoning tokens are counted one per reasoning event")
    short = replace(base(requests=Requests(sent=10, completed=10, short_replies=10)), load=None)
    assert notes(short) == [], "no single load (a sweep's own summary): no ignore_eos to judge"


def test_sampling_notes() -> None:
    truncated, short = notes(base(sampling=Sampling(truncated=True, complete_conversations=12345, shortfall=3,
                                                    dropped={"too_long": 7})))
    assert "12,345 complete conversations" in truncated
    assert short == "the dataset yielded 3 fewer prompts than asked for (dropped by rule: {'too_long': 7})"


def test_a_truncated_dataset_is_noted_in_the_summary() -> None:
    sampling = Sampling(dataset="/d/cut.json", token_counter="server_tokenize", examined=10, dropped={}, shortfall=0,
                        truncated=True, complete_conversations=17671)
    assert ("the dataset file is truncated (allow_truncated): prompts were sampled from its 17,671 complete "
            "conversations only") in notes(Summary(sampling=sampling))
    assert not [n for n in notes(Summary(sampling=replace(sampling, truncated=False))) if "truncated" in n]


def test_a_retry_names_the_settings_it_changed() -> None:
    summary = base(settings={"server.flags.flash-attn": "off", "load.users": 4},
                   first_attempt=FirstAttempt(cause="fattn abort", log="server.first-attempt.log",
                                              settings={"server.flags.flash-attn": "on", "load.users": 4}))
    assert notes(summary) == ["the first attempt failed to load (fattn abort); this result is the retry with "
                              "server.flags.flash-attn=off (log: server.first-attempt.log)"]


def test_a_late_client_says_whether_to_add_workers_or_free_cores() -> None:
    lag = LoopLag(p99=40.0, max=90.0, own_p99=5.0)
    saturated, = notes(base(client=Client(saturated=True, host_busy=False, loop_lag_ms=lag, cpu_pct=99.0)))
    assert "saturated" in saturated and "add workers (--workers N)" in saturated
    busy, = notes(base(client=Client(saturated=False, host_busy=True, loop_lag_ms=lag, cpu_pct=10.0)))
    assert "waited for a CPU" in busy and "at most 5.0 ms its own work" in busy and "add workers" not in busy
    assert notes(base(client=Client(saturated=False, host_busy=False, loop_lag_ms=lag))) == []


@pytest.mark.parametrize("change, expected", [
    ({"stopped_by": "ui_stop"}, "the test was stopped in the web UI"),
    ({"stopped_by": "time_cap"}, "the time cap (max_seconds) ended the run"),
    ({"requests": Requests(completed=9, no_content=2)}, "2 of 9 completed replies carried no content"),
    ({"output_tokens_source": ("usage", "chunks")}, "some output token counts are chunk counts"),
    ({"crosscheck_agrees": False}, "Locust's own counts differ"),
    ({"server_metrics": ServerMetrics(unavailable_reason="http_404")},
     "the server gave no llama.cpp /metrics (http_404)"),
    ({"server_metrics": ServerMetrics(unavailable_reason="not_llamacpp")}, "the server gave no llama.cpp /metrics"),
    ({"server_metrics": ServerMetrics(within_tolerance=False)}, "the server's /metrics token counts differ"),
    ({"status": "server_lost", "requests": Requests(unsent=1234)}, "the server stopped answering during the load"),
    ({"status": "crashed", "requests": Requests(unsent=1234)}, "the server died during the load"),
])
def test_each_caveat_has_its_note(change: dict[str, Any], expected: str) -> None:
    out = notes(replace(base(), **change))
    assert len(out) == 1 and out[0].startswith(expected), out


def test_no_note_for_what_is_fine() -> None:
    fine = base(stopped_by="num_prompts", crosscheck_agrees=True, output_tokens_source=("usage",),
                server_metrics=ServerMetrics(unavailable_reason="server_died", within_tolerance=True))
    assert notes(fine) == []


# --- a busy host ---------------------------------------------------------------------------------------

def host_of(foreign: list[float], steal: list[float], gpu: list[str] | None = None,
            limits: HostLimits = HostLimits()) -> Host:
    host = summarize_host(readings(foreign, steal, gpu), limits)
    assert host is not None
    return host


@pytest.mark.parametrize("foreign, steal, gpu, said", [
    ([50.0, 60.0, 70.0], [0.0] * 3, None, "other processes used 60 % of a core (p50, max 70 %)"),
    ([0.0] * 3, [8.0, 9.0, 30.0], None, "the hypervisor took 9 % of the CPU time (steal p50, max 30 %)"),
    ([0.0] * 3, [0.0] * 3, ["977 python3"], "other GPU processes ran: 977 python3"),
], ids=["foreign-cpu", "steal", "gpu"])
def test_a_busy_host_is_said(foreign: list[float], steal: list[float], gpu: list[str] | None, said: str) -> None:
    host = host_of(foreign, steal, gpu)
    assert host.busy is True
    assert said in (host_note(host) or "")
    assert said in (notes(base(host=host))[0])


def test_the_limits_are_the_users() -> None:
    """The same readings are quiet under the default limits and busy under stricter ones."""
    quiet = [3.0, 4.0, 4.0], [2.0] * 3
    assert host_of(*quiet).busy is False
    strict = host_of(*quiet, limits=HostLimits(foreign_cpu_pct=3.0, steal_pct=1.0))
    note = host_note(strict) or ""
    assert strict.busy is True and "4 % of a core" in note and "steal p50" in note


def test_no_readings_no_block() -> None:
    assert summarize_host([{"t": 0}]) is None and host_note(None) is None


# --- an open loop and a ramp -----------------------------------------------------------------------------

def test_an_open_loop_that_kept_up() -> None:
    records = pd.DataFrame([rec(k, T0 + k / 4 + 0.002, scheduled=T0 + k / 4) for k in range(9)])
    arr = pacing_figures.summarize_arrivals(records, arrivals_info(9, 4.0, end=T0 + 3))
    assert (arr.scheduled, arr.sent, arr.unsent, arr.late) == (9, 9, 0, 0)
    assert arr.rate_scheduled == pytest.approx(4.0) and arr.rate_achieved == pytest.approx(4.0)
    assert arr.send_delay_ms is not None and arr.latency_from_schedule_ms.ttft is not None
    assert arr.send_delay_ms.max == pytest.approx(2.0, abs=1e-3) and not arr.cap_fell_behind
    assert arr.latency_from_schedule_ms.ttft.p50 == pytest.approx(102.0, abs=1e-3)
    assert pacing_notes(Summary(arrivals=arr)) == []


def test_an_open_loop_whose_cap_fell_behind_counts_late_and_unsent() -> None:
    """10 due over 0.25 s; 4 went out, ever later; 6 never did, 5 of them already due at the end."""
    info = arrivals_info(10, 40.0, end=T0 + 0.2)
    info["offsets_s"][-1] = 1.0  # the last one was not yet due when the run ended
    records = pd.DataFrame([rec(0, T0, scheduled=T0), rec(1, T0 + 0.025, scheduled=T0 + 0.025),
                            rec(2, T0 + 0.5, scheduled=T0 + 0.05), rec(3, T0 + 0.52, status="cancelled",
                                                                       e2e=100.0, ttft=None, scheduled=T0 + 0.075)])
    arr = pacing_figures.summarize_arrivals(records, info)
    assert (arr.sent, arr.unsent, arr.unsent_overdue, arr.unsent_not_due) == (4, 6, 5, 1)
    assert arr.sent + arr.unsent == arr.scheduled
    assert arr.late == 2 and arr.late_share == 0.5 and arr.cap_fell_behind
    assert arr.send_delay_ms is not None and arr.latency_from_schedule_ms.e2e is not None
    assert arr.send_delay_ms.max == pytest.approx(450.0)
    assert arr.latency_from_schedule_ms.e2e.max == pytest.approx(950.0)  # completed ones only
    note = pacing_notes(Summary(arrivals=arr))[0]
    assert note.startswith("the concurrency cap of 2 could not keep up with 40.0 req/s: 2 late (> 10 ms), "
                           "6 unsent (5 of them already due)")
    assert note in notes(Summary(arrivals=arr))


def test_a_time_cap_that_cut_the_schedule_is_not_the_caps_fault() -> None:
    records = pd.DataFrame([rec(k, T0 + k / 2, scheduled=T0 + k / 2) for k in range(3)])
    arr = pacing_figures.summarize_arrivals(records, arrivals_info(10, 2.0, end=T0 + 1.2))
    assert (arr.unsent, arr.unsent_overdue, arr.unsent_not_due, arr.cap_fell_behind) == (7, 0, 7, False)
    assert pacing_notes(Summary(arrivals=arr)) == ["the run ended with 7 scheduled request(s) not yet due; they "
                                                   "were never sent (the time cap cut the schedule short)"]


def test_records_go_to_the_stage_active_at_their_send_time() -> None:
    one = [rec(k, T0 + 0.5 * k) for k in range(4)]  # stage 1 (one user): back to back
    three = [rec(4 + 3 * k + u, T0 + 2.1 + 0.5 * k, status="error" if (k, u) == (0, 0) else "ok", ttft=150.0)
             for k in range(4) for u in range(3)]  # stage 2: three at a time
    records = pd.DataFrame(one + three)
    stages = pacing_figures.summarize_stages(records, stages_info([T0, T0 + 2.05], T0 + 4.2))
    first, second, third = stages
    assert (first.requests, first.completed, first.peak_in_flight, first.started_s) == (4, 4, 1, 0.0)
    assert (second.requests, second.completed, second.errors, second.peak_in_flight) == (12, 11, 1, 3)
    assert second.started_s == pytest.approx(2.05) and second.active_s == pytest.approx(4.1 - 2.05)
    assert first.ttft_p50_ms == 100.0 and second.ttft_p50_ms == 150.0 and second.tpot_p50_ms == 20.0
    # stage 1: chunks of its 4 requests at 0.1..0.5 s after each send, all before 2.05 s: 20 tokens over 2.05 s
    assert first.decode_tok_s == pytest.approx(20 / 2.05)
    assert not third.reached and third.requests == 0
    assert pacing_notes(Summary(stages=stages)) == ["stage(s) 3 never began (the run ended first)"]
    assert pacing_notes(Summary(stopped_by="stages_end"))[0].startswith("the last stage ended before every prompt")


def test_the_blocks_come_from_the_files_and_reach_summary_md(tmp_path: Path) -> None:
    paths = VariantPaths(tmp_path)
    assert pacing_figures.load_mode_summary(paths, pd.DataFrame(), {}) == pacing_figures.Pacing()  # a plain run: none
    paths.stages_json.write_text(json.dumps(stages_info([T0], None)))
    paths.arrivals_json.write_text(json.dumps(arrivals_info(2, 1.0, end=T0 + 5)))
    records = pd.DataFrame([rec(0, T0, scheduled=T0), rec(1, T0 + 1.2, scheduled=T0 + 1)])
    blocks = pacing_figures.load_mode_summary(paths, records, read_json(paths.arrivals_json))
    assert blocks.arrivals is not None and blocks.arrivals.late == 1 and blocks.stages[0].requests == 2
    md = summary_md(Summary(scenario="s", variant="v", **summarize_records(records).blocks(), arrivals=blocks.arrivals,
                            stages=blocks.stages))
    assert "Open loop: 1.00 req/s asked (constant)" in md and "| stage | users | duration |" in md
