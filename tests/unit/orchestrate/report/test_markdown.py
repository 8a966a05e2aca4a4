"""orchestrate/report/markdown.py: ``summary.md`` and each of its sections, from typed summaries and blocks made
from hand-written dicts or by the aggregates from hand-made records (every number comes from report/aggregates/)."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

import pandas as pd

from locustfiles.records import RequestRecord
from orchestrate.report.aggregates import pacing_figures
from orchestrate.report.aggregates.capacity import capacity_block
from orchestrate.report.aggregates.steadystate import CLOSED_RULE, steady_state
from orchestrate.report.aggregates.turns import summarize_turns
from orchestrate.report.aggregates.uisteps import Level, ui_steps
from orchestrate.report.jsontypes import from_json
from orchestrate.report.markdown import (
    capacity_section,
    goodput_section,
    pacing_section,
    steady_state_section,
    step_table,
    summary_md,
    sweep_section,
    turns_section,
    ui_steps_intro,
)
from orchestrate.report.schema import Summary
from orchestrate.report.schema.capacity import Cliff
from orchestrate.report.schema.sweep import Sweep
from orchestrate.report.schema.ui import UiSteps
from orchestrate.scenario.spec import LoadSpec
from tests.unit.orchestrate.report.aggregates import test_pacing_figures as pacing
from tests.unit.orchestrate.report.aggregates.test_capacity import users_search
from tests.unit.orchestrate.report.aggregates.test_steadystate import behind, four_users, frame, rec, schedule
from tests.unit.orchestrate.report.aggregates.test_sweep import block
from tests.unit.orchestrate.report.aggregates.test_turns import RECORDS, variant
from tests.unit.orchestrate.report.aggregates.test_uisteps import T0, record, stamped
from tests.unit.orchestrate.report.test_console import CONTEXT_ERROR, failed_to_load_summary, reference_summary, typed

# --- the page -------------------------------------------------------------------------------------


def test_markdown_has_headline_latency_table_and_error_classes():
    md = summary_md(typed(reference_summary()))
    lines = md.splitlines()
    assert lines[0] == "# gemma-mtp / fa-off"
    assert "**980/1000 done, 20 errors in 883.0 s**  " in lines
    assert "| latency | p50 | p90 | p99 | mean | max |" in lines
    assert "| TTFT | 1.3 s | 4.2 s | 9.8 s | 1.9 s | 12.0 s |" in lines
    assert "| TPOT | 105 ms | 140 ms | 190 ms | 110 ms | 250 ms |" in lines
    assert "| ITL (inter-chunk) | 98 ms | 130 ms | 400 ms | 104 ms | 30.0 s |" in lines
    assert "| E2E | 27.0 s | 40.0 s | 52.0 s | 28.0 s | 61.0 s |" in lines
    assert "| total | 185,253 | 1,024 | 244,238 | 1.00 |" in lines
    assert "| error class | count | first message |" in lines
    assert f"| {CONTEXT_ERROR} | 20 | – |" in lines  # a summary from before first messages were kept
    assert "llama.cpp timings (per slot): prefill 1,416.7 tok/s, decode 9.3 tok/s  " in lines
    assert "speculative decoding: 625/1,000 draft tokens accepted (62.5 %)  " in lines
    assert ("Locust's own stats: 1000 requests, 20 failures, 185,253 prompt / 244,238 output tokens — "
            "agrees with the records  ") in lines
    assert "| total_slots | 32 |" in lines
    assert "- prompt lengths were ESTIMATED (characters / 4)" in lines
    assert md.endswith("\n")


def test_markdown_flags_a_crosscheck_that_differs():
    summary = reference_summary()
    summary["crosscheck_agrees"] = False
    assert "**differs from the records**" in summary_md(typed(summary))


def test_markdown_without_drafter():
    summary = reference_summary()
    summary["speculative"] = None
    assert "speculative decoding: off (no draft counts in the server's timings)  " in summary_md(typed(summary)).splitlines()


def test_markdown_failed_to_load_keeps_the_log_tail():
    md = summary_md(typed(failed_to_load_summary()))
    assert "**status: failed_to_load: ggml-cuda/fattn.cu:110: fatal error**  " in md.splitlines()
    assert "| latency |" not in md
    assert "| error class |" not in md
    assert "```\nllama_init: loading drafter\nggml-cuda/fattn.cu:110: fatal error\n```" in md


def test_no_block_no_section():
    empty = Summary()
    assert steady_state_section(empty) == [] and turns_section(empty) == [] and pacing_section(empty) == []
    assert capacity_section(None) == [] and goodput_section(None) == []


# --- the steady state -----------------------------------------------------------------------------

def test_steady_state_beside_the_whole_run() -> None:
    block = steady_state(four_users(), LoadSpec(users=4), {"tpot_ms": 1000.0})
    summary = {"duration_s": 7.5, "requests": {"sent": 12},
               "throughput": {"prefill_tok_s": 160.0, "decode_tok_s": 4.8, "requests_per_s": 1.6},
               "latency_ms": {"ttft": {"p50": 1000.0, "p90": 1000.0, "p99": 1000.0}},
               "goodput": {"share": 0.5}}
    md = steady_state_section(replace(typed(summary), steady_state=block))
    assert md[:2] == ["## Steady state", ""]
    assert "| | whole run | steady state |" in md
    assert "| span | 0–7.5 s, 12 requests | 1.5–6.0 s, 9 requests (75 %) |" in md
    # in brackets the 95 % intervals: the prefill is the same in every slice of the window (no width), 9 latencies
    # bound a median on both sides and a p99 from below only
    assert "| prefill tok/s | 160.0 | 200.0 [200.0–200.0] |" in md
    assert "| decode tok/s | 4.8 | 5.8 [4.2–7.3] |" in md
    assert "| req/s | 1.60 | 1.78 [1.11–2.45] |" in md
    assert ("| TTFT p50 / p90 / p99 | 1.0 s / 1.0 s / 1.0 s | 1.0 s / 1.0 s / 1.0 s (p50 [1.0 s–1.0 s], "
            "p99 [1.0 s–?]) |") in md
    assert "| TPOT p50 / p90 / p99 | – | 500 ms / 500 ms / 500 ms (p50 [500 ms–500 ms], p99 [500 ms–?]) |" in md
    assert "| requests meeting the SLO | 50.0 % | 100.0 % |" in md
    assert any(line.startswith("The window: requests in flight >= 95 % of the users (4 of 4); in flight 4.0 on "
                               "average, below 4 for 0.0 % of its time") for line in md)


def test_steady_state_open_loop_and_no_window() -> None:
    block = steady_state(frame(behind()), LoadSpec(rate=2.0), None, schedule(40))
    md = steady_state_section(Summary(steady_state=block))
    assert ("The window: requests sent within 5 % of the arrival schedule; after it the sends fell behind the "
            "schedule.") in md
    assert not any("requests meeting the SLO" in line for line in md)  # no SLO, no row
    none = steady_state(frame([rec(u * 0.5) for u in range(4)]), LoadSpec(users=4))
    assert none is not None
    md = steady_state_section(Summary(steady_state=none))
    assert md[0] == "## Steady state"
    assert md[2].startswith(f"No steady-state window ({CLOSED_RULE}): only 1 requests were sent")
    assert md[2].endswith("users the ramp and the drain are most of the run. About 11 prompts would give one.")


# --- a capacity search ----------------------------------------------------------------------------

def test_capacity_and_a_cliff(tmp_path: Path) -> None:
    found = capacity_block(users_search(tmp_path))
    assert found is not None
    md = capacity_section(found, "capacity.png")
    assert md[:3] == ["## Capacity", "", f"**{found.sentence}.**"]
    assert md[4].startswith("Searched users over 1–16 (bisected in log space to 5 %, then the boundary probed again)")
    assert md[4].endswith(": 6 probes in 12 s; each has its folder under `steps/`.")
    assert "| probe | users | met the SLO | passed | decode tok/s | TTFT p99 | TPOT p99 | why |" in md
    assert "| 3 | 4 | 80.0 % | no | 150.0 | 300 ms | 40 ms | 80.0 % met the SLO, below 90 % |" in md
    assert "| 1 | 1 | 100.0 % | yes | 50.0 | 300 ms | 40 ms |  |" in md
    assert md[-2:] == ["![capacity](capacity.png)", ""]
    assert not any(line.startswith("Throughput fell") for line in md)
    found = replace(found, cliff=Cliff(value=4, decode_tok_s=100.0, peak_value=3, peak_decode_tok_s=142.5))
    assert ("Throughput fell while load rose: decode 100.0 tok/s at 4 against 142.5 at 3."
            in capacity_section(found))


# --- an open loop and a ramp ----------------------------------------------------------------------

def test_an_open_loop_whose_cap_fell_behind_warns() -> None:
    """10 due over 0.25 s; 4 went out, ever later; 6 never did (``test_notes``' case)."""
    info = pacing.arrivals_info(10, 40.0, end=pacing.T0 + 0.2)
    info["offsets_s"][-1] = 1.0
    records = pd.DataFrame([pacing.rec(0, pacing.T0, scheduled=pacing.T0),
                            pacing.rec(1, pacing.T0 + 0.025, scheduled=pacing.T0 + 0.025),
                            pacing.rec(2, pacing.T0 + 0.5, scheduled=pacing.T0 + 0.05),
                            pacing.rec(3, pacing.T0 + 0.52, status="cancelled", e2e=100.0, ttft=None,
                                       scheduled=pacing.T0 + 0.075)])
    arr = pacing_figures.summarize_arrivals(records, info)
    md = "\n".join(pacing_section(Summary(arrivals=arr)))
    assert "**Warning: the concurrency cap of 2 could not keep up" in md and "| 10 | 4 | 6 | 2 (> 10 ms) | 50 % |" in md


def test_the_stages_table() -> None:
    one = [pacing.rec(k, pacing.T0 + 0.5 * k) for k in range(4)]
    three = [pacing.rec(4 + 3 * k + u, pacing.T0 + 2.1 + 0.5 * k, status="error" if (k, u) == (0, 0) else "ok",
                        ttft=150.0) for k in range(4) for u in range(3)]
    stages = pacing_figures.summarize_stages(pd.DataFrame(one + three),
                                             pacing.stages_info([pacing.T0, pacing.T0 + 2.05], pacing.T0 + 4.2))
    md = "\n".join(pacing_section(Summary(stages=stages)))
    assert "| 1 | 1 | 2 s | 0.0 s | 4 | 4 | 0 | 1 |" in md and "| 3 | 2 | 2 s | not reached |" in md


# --- goodput, multi-turn --------------------------------------------------------------------------

def test_the_per_turn_table(tmp_path: Path) -> None:
    paths = variant(tmp_path, [3, 2, 2], {"cut": 1, "turns_dropped": 2,
                                          "cut_by": {"empty_turn": 0, "exceeds_slot_context": 1}})
    turns = summarize_turns(paths, pd.DataFrame(RECORDS))
    lines = turns_section(Summary(turns=turns.turns, conversations=turns.conversations))
    assert lines[0].startswith("| turn | requests | TTFT p50 | TTFT p99 | prompt tok | cached tok")
    assert lines[3] == "| 1 | 3 | 20 ms | 20 ms | 300.0 | 108.0 | 192.0 | 36.0 % |"
    text = "\n".join(lines)
    assert "1/3 completed every turn (7 turns planned); 1 cut short by the sampler (2 turns dropped: " \
           "exceeds_slot_context 1)" in text


# --- a sweep, a web UI ramp -----------------------------------------------------------------------

def test_the_sweep_lists_every_step_and_not_run_ones() -> None:
    b = block([100, 200])
    b["steps"].append({"value": 16, "label": "users-16", "status": "not_run"})
    b["values"].append(16)
    text = "\n".join(sweep_section(from_json(Sweep, b)))
    assert "| 1 | completed | 10 / 10 | 0 | 100.0 |" in text and "| 16 | not run |" in text
    assert step_table(from_json(Sweep, b)) == sweep_section(from_json(Sweep, b))[4:]


def test_the_web_ui_intro_names_the_hold() -> None:
    assert "Each user level held at least 10 s" in " ".join(ui_steps_intro(from_json(UiSteps, {"hold_s": 10.0})))


def test_a_web_ui_step_stop_cut_short_and_few_completed_are_named() -> None:
    levels = [Level(4, T0, T0 + 12)]
    cut = asdict(RequestRecord(request_id="c", prompt_index=9, worker="local", send_ts=T0 + 5, status="cancelled",
                               error_class="cancelled"))
    steps = ui_steps(pd.DataFrame([record(0, T0 + 1), record(1, T0 + 2), cut]), levels, hold_s=10.0)
    assert steps is not None
    intro = " ".join(ui_steps_intro(steps))
    assert "Fewer than 10 completed requests" in intro and "4 users (2 completed)" in intro


def test_a_web_ui_ramp_placed_by_the_count_sent_under_says_so() -> None:
    levels = [Level(0, T0, T0 + 2), Level(8, T0 + 2, T0 + 20)]  # history lags: not used when records are stamped
    records = pd.DataFrame([stamped(i, T0 + 1.3 + i / 10, 8) for i in range(8)]
                           + [stamped(8, T0 + 12.0, 16), stamped(9, T0 + 12.1, 16, status="cancelled"),
                              stamped(10, T0 + 12.5, 4)])
    steps = ui_steps(records, levels, hold_s=10.0)
    assert steps is not None
    assert "Each user count set in the form is a step" in " ".join(ui_steps_intro(steps))
