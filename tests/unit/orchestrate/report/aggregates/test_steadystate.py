"""orchestrate/report/aggregates/steadystate.py: the steady-state window of a run and its figures, from
hand-made records whose window and counts are worked out by hand (times are multiples of 1/8 s, exact in
binary, so the edges compare exactly)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from locustfiles.pacing_params import Stage
from locustfiles.records import CANCELLED, ERROR, OK
from orchestrate.report.aggregates.chunks import itl_stats
from orchestrate.report.aggregates.steadystate import (
    CLOSED_RULE,
    MIN_OPEN_LOOP_REQUESTS,
    OPEN_RULE,
    prompt_tokens_binned,
    prompt_tokens_within,
    steady_state,
    window_intervals,
)
from orchestrate.report.schema.common import Percentiles
from orchestrate.report.schema.steady import InFlight, MissedBy
from orchestrate.scenario.spec import LoadSpec

T0 = 1000.0


def rec(send: float, status: str = OK, ttft: float | None = 1000.0, e2e: float | None = 2000.0,
        tpot: float | None = 500.0, prompt: int | None = 100, offsets: list[float] | None = None,
        out: int | None = 3) -> dict[str, Any]:
    """A record sent ``send`` s after ``T0``; by default 2 s long, its 3 chunks (1 token each) at 1, 1.5, 2 s."""
    return {"send_ts": T0 + send, "status": status, "ttft_ms": ttft, "tpot_ms": tpot, "e2e_ms": e2e,
            "prompt_tokens": prompt, "output_tokens": out, "tokens_per_chunk": 1.0 if status == OK else None,
            "chunk_offsets_ms": [1000.0, 1500.0, 2000.0] if offsets is None else offsets}


def frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(records)


def four_users() -> pd.DataFrame:
    """A closed loop of 4 users spawned 0.5 s apart, each sending 3 requests of 2 s back to back.

    ====  ===============  =====
    user  sends (s)        ends
    ====  ===============  =====
    0     0, 2, 4          6
    1     0.5, 2.5, 4.5    6.5
    2     1, 3, 5          7
    3     1.5, 3.5, 5.5    7.5
    ====  ===============  =====

    All 4 are in flight from 1.5 s (user 3's first send); at 6 s user 0's last ends and in flight falls
    to 3 for good: the window is [1.5, 6), 4.5 s, and holds the 9 sends from 1.5 to 5.5 s.
    """
    return frame([rec(u * 0.5 + 2.0 * k) for u in range(4) for k in range(3)])


def test_closed_loop_window_counts_and_figures() -> None:
    block = steady_state(four_users(), LoadSpec(users=4))
    assert block is not None and block.found is True and block.rule == CLOSED_RULE
    assert (block.start_s, block.end_s, block.duration_s) == (1.5, 6.0, 4.5)
    assert block.requests == 9 and block.completed == 9
    assert block.share_of_requests == pytest.approx(9 / 12)
    # ends at send + 2 s inside [1.5, 6): the sends 0 … 3.5 s
    assert block.requests_per_s == pytest.approx(8 / 4.5)
    assert block.ttft_ms == Percentiles(p50=1000.0, p90=1000.0, p99=1000.0)
    assert block.tpot_ms == Percentiles(p50=500.0, p90=500.0, p99=500.0)
    # an end and its user's next send at one instant: the end comes first, but the dip lasts no time
    assert block.in_flight == InFlight(threshold=4, users=4, mean=4.0, below_share=0.0)
    assert block.goodput is None  # no SLO


def test_decode_counts_only_the_chunks_that_arrived_inside() -> None:
    """Chunks at send + 1, 1.5, 2 s, within [1.5, 6): the requests at the edges count in part.

    ========  ==================  ======
    send (s)  arrivals (s)        inside
    ========  ==================  ======
    0         1, 1.5, 2           2
    0.5       1.5, 2, 2.5         3
    1 … 3.5   all ≤ 5.5           6 × 3 = 18
    4         5, 5.5, 6           2 (6 is the end: out)
    4.5       5.5, 6, 6.5         1
    5, 5.5    ≥ 6                 0
    ========  ==================  ======
    """
    block = steady_state(four_users(), LoadSpec(users=4))
    assert block is not None
    assert block.decode_tok_s == pytest.approx(26 / 4.5)


def test_decode_weights_chunks_by_tokens_and_leaves_failed_requests_out() -> None:
    """A straddling request with 4 tokens a chunk counts 4 per chunk inside; an error's chunks do not count."""
    records = four_users()
    records.loc[records["send_ts"] == T0 + 4.0, "tokens_per_chunk"] = 4.0   # 2 chunks inside: 8, not 2
    block = steady_state(records, LoadSpec(users=4))
    assert block is not None and block.decode_tok_s == pytest.approx((26 - 2 + 8) / 4.5)
    records.loc[records["send_ts"] == T0 + 2.0, "status"] = ERROR            # its 3 chunks inside go
    block = steady_state(records, LoadSpec(users=4))
    assert block is not None and block.decode_tok_s == pytest.approx((26 - 2 + 8 - 3) / 4.5)
    assert block.requests == 9 and block.completed == 8


def test_prefill_spreads_prompt_tokens_over_send_to_first_token() -> None:
    """100 prompt tokens over each send → first token (1 s), within [1.5, 6).

    ==========  ==========  ======
    send (s)    prefill     inside
    ==========  ==========  ======
    0, 0.5      ≤ 1.5       0
    1           1–2         half: 50
    1.5 … 5     ≤ 6         8 × 100
    5.5         5.5–6.5     half: 50
    ==========  ==========  ======
    """
    block = steady_state(four_users(), LoadSpec(users=4))
    assert block is not None
    assert block.prefill_tok_s == pytest.approx(900 / 4.5)  # 200


def test_time_between_a_reply_and_the_next_send_is_kept_and_shown() -> None:
    """2 users: A sends 0, 1, 2, 3, 4 (1 s each); B 0.5, 1.5 (1 s), thinks 2.5 → 3, then 3 (1 s), 4 (1.5 s).
    Both in flight from 0.5 s until A's last ends at 5 s; only one during [2.5, 3)."""
    a = [rec(s, e2e=1000.0, offsets=[]) for s in (0.0, 1.0, 2.0, 3.0, 4.0)]
    b = [rec(0.5, e2e=1000.0, offsets=[]), rec(1.5, e2e=1000.0, offsets=[]), rec(3.0, e2e=1000.0, offsets=[]),
         rec(4.0, e2e=1500.0, offsets=[])]
    block = steady_state(frame(a + b), LoadSpec(users=2))
    assert block is not None and block.found
    assert (block.start_s, block.end_s) == (0.5, 5.0)
    assert block.requests == 8  # all but A's first
    assert block.in_flight.threshold == 2
    assert block.in_flight.below_share == pytest.approx(0.5 / 4.5)
    assert block.in_flight.mean == pytest.approx((2 * 4.0 + 1 * 0.5) / 4.5)


def test_a_cancelled_request_stays_in_flight_until_the_stop() -> None:
    """A: 0 → 5 s, back to back; B: 0.5, 1.5, then one sent at 2.5 s cancelled when the run stopped (no E2E).
    Were it over at its send, in flight would fall to 1 for good at 2.5 s; it is in flight until the last end."""
    a = [rec(s, e2e=1000.0, offsets=[]) for s in (0.0, 1.0, 2.0, 3.0, 4.0)]
    b = [rec(0.5, e2e=1000.0, offsets=[]), rec(1.5, e2e=1000.0, offsets=[]),
         rec(2.5, status=CANCELLED, ttft=None, e2e=None, tpot=None, out=None, offsets=[])]
    block = steady_state(frame(a + b), LoadSpec(users=2))
    assert block is not None and block.found
    assert (block.start_s, block.end_s) == (0.5, 5.0)
    assert block.requests == 7 and block.completed == 6  # the cancelled one is sent inside, not completed
    assert block.in_flight.below_share == 0.0


def test_too_few_prompts_for_a_window_says_how_many_would_do() -> None:
    """4 users, one 2 s request each, spawned 0.5 s apart: all 4 out only over [1.5, 2), one send in it.
    A window needs 8 (2 per user) after the 3 ramp sends before it: 11 prompts."""
    block = steady_state(frame([rec(u * 0.5) for u in range(4)]), LoadSpec(users=4))
    assert block is not None and block.found is False and block.rule == CLOSED_RULE
    assert "only 1 requests were sent" in block.reason
    assert "a window needs 8 (2 per user)" in block.reason
    assert block.prompts_needed == 11


def test_in_flight_never_reaching_the_threshold() -> None:
    """4 users, but sends 1 s apart of 1.5 s each: never more than 2 out (threshold ceil(0.95 × 4) = 4)."""
    block = steady_state(frame([rec(float(s), e2e=1500.0) for s in range(4)]), LoadSpec(users=4))
    assert block is not None and block.found is False
    assert block.reason.startswith("requests in flight never reached 4 of 4 users (at most 2)")
    assert block.prompts_needed is None


def test_threshold_rounds_up_95_percent() -> None:
    """20 users: the threshold is 19, so a loop that never has more than 19 out still has a window."""
    # 19 users back to back from 0 (1 s requests, 3 each); a 20th never sends
    records = frame([rec(float(k), e2e=1000.0, offsets=[]) for _ in range(19) for k in range(3)])
    block = steady_state(records, LoadSpec(users=20))
    assert block is not None and block.found and block.in_flight.threshold == 19
    assert (block.start_s, block.end_s, block.requests) == (0.0, 3.0, 57)


@pytest.mark.parametrize(("load", "ui", "search", "reason"), [
    (LoadSpec(users=4, stages=(Stage(10.0, 4, 4.0),)), False, False, "a staged ramp"),
    (LoadSpec(users=4), True, False, "a person set the users in the web UI"),
    (LoadSpec(users=4), False, True, "a capacity search"),
    (None, False, False, "the number of users is not known"),
])
def test_runs_without_a_single_window(load: LoadSpec | None, ui: bool, search: bool, reason: str) -> None:
    """Stages, the web UI and a search change the load on purpose; the window would mean nothing; a sweep's own
    summary has no single load."""
    block = steady_state(four_users(), load, ui=ui, search=search)
    assert block is not None and block.found is False
    assert block.reason.startswith(reason)


def test_nothing_sent_no_block() -> None:
    assert steady_state(pd.DataFrame(), LoadSpec(users=4)) is None


def schedule(n: int) -> list[float]:
    """An open loop's due times: one every 0.5 s from ``T0``."""
    return [T0 + 0.5 * i for i in range(n)]


def on_schedule(n: int) -> list[dict[str, Any]]:
    """``n`` requests each sent 1/8 s after it was due (1 s long, no chunks)."""
    return [rec(0.5 * i + 0.125, e2e=1000.0, offsets=[]) for i in range(n)]


def test_open_loop_on_schedule_spans_first_to_last_send() -> None:
    block = steady_state(frame(on_schedule(25)), LoadSpec(rate=2.0, users=8), None, schedule(25))
    assert block is not None and block.found is True and block.rule == OPEN_RULE
    assert (block.start_s, block.end_s, block.duration_s) == (0.0, 12.0, 12.0)
    assert block.requests == 25 and block.kept_up is True
    assert block.in_flight is None


def behind() -> list[dict[str, Any]]:
    """40 due every 0.5 s; the first 25 sent on time, then one a second from 12.625 s.

    Sent 26th at 12.625 (26 due: kept up), 27th at 13.625 (28 due: 27 ≥ 0.95 × 28), 28th at 14.625 (30 due:
    28 < 28.5, behind). The window is the first 27 sends: 0.125 → 13.625 s.
    """
    return on_schedule(25) + [rec(12.625 + k, e2e=1000.0, offsets=[]) for k in range(15)]


def test_open_loop_falling_behind_ends_the_window_before() -> None:
    block = steady_state(frame(behind()), LoadSpec(rate=2.0), None, schedule(40))
    assert block is not None and block.found
    assert (block.start_s, block.end_s) == (0.0, 13.5)
    assert block.requests == 27 and block.kept_up is False


def test_open_loop_without_its_schedule_or_enough_requests() -> None:
    load = LoadSpec(rate=2.0)
    missing = steady_state(frame(on_schedule(25)), load, None, None)
    assert missing is not None and missing.found is False and missing.reason.startswith(
        "the arrival schedule (arrivals.json) is missing")
    few = MIN_OPEN_LOOP_REQUESTS - 1
    short = steady_state(frame(on_schedule(few)), load, None, schedule(few))
    assert short is not None and short.found is False
    assert short.reason == f"only {few} requests were sent on schedule: a window needs {MIN_OPEN_LOOP_REQUESTS}"
    # the second send 5 s late: 11 due, 2 sent
    late = steady_state(frame([rec(0.125), rec(5.0)] + [rec(5.0 + 0.5 * i) for i in range(1, 30)]), load,
                        None, schedule(40))
    assert late is not None and late.found is False and late.reason.startswith("the sends fell behind")


def test_goodput_inside_the_window_judges_every_request_sent_in_it() -> None:
    """Of the window's 27 sends (see ``behind``): 2 over TTFT, 1 error; the 13 sent after it, all slow, do not
    count. ``share`` divides by all 27, the error included."""
    records = behind()
    records[3]["ttft_ms"] = records[7]["ttft_ms"] = 2000.0
    records[5]["status"] = ERROR
    for late in records[27:]:
        late["ttft_ms"] = 5000.0
    block = steady_state(frame(records), LoadSpec(rate=2.0), {"ttft_ms": 1500.0}, schedule(40))
    assert block is not None and block.found
    good = block.goodput
    assert good is not None
    assert good.requests_meeting == 24 and good.share == pytest.approx(24 / 27)
    assert good.missed_by == MissedBy(ttft_ms=2, error=1, cancelled=0)
    assert good.requests_per_s == pytest.approx(24 / 13.5)
    # latencies: the 26 completed ones sent inside (24 at 1 s, 2 at 2 s); the 13 late ones at 5 s would be the p99
    assert block.ttft_ms == Percentiles(p50=1000.0, p90=1000.0, p99=2000.0)


def test_open_loop_a_brief_lag_that_catches_up_does_not_end_the_window() -> None:
    """30 due every 0.5 s, all sent 1/8 s after due except the 2nd, sent 0.625 s late with the 3rd (at 1.125 s,
    3 due, 2 sent): from the 3rd on the sends keep up again, to the end."""
    records = on_schedule(30)
    records[1]["send_ts"] = T0 + 1.125
    block = steady_state(frame(records), LoadSpec(rate=2.0), None, schedule(30))
    assert block is not None and block.found is True
    assert block.requests == 30 and block.end_s == 14.5


@pytest.mark.parametrize("load", [LoadSpec(users=4), LoadSpec(users=4, rate=2.0)])
def test_a_run_where_no_request_completed_has_no_window(load: LoadSpec) -> None:
    failed = frame([rec(i * 0.1, status=ERROR, ttft=None, tpot=None, prompt=None, out=None) for i in range(40)])
    found = steady_state(failed, load, schedule_ts=[T0 + i * 0.1 for i in range(40)])
    assert found is not None and found.found is False
    assert found.reason == "no request completed: every one failed or was cut off"
    assert found.rule == (OPEN_RULE if load.rate else CLOSED_RULE)


def test_the_whole_run_s_intervals_hold_its_headline_figures() -> None:
    """40 requests of 2 s, one every 0.25 s, their TTFT rising 1 ms a request; 8 miss a 1,030 ms TTFT limit."""
    records = frame([rec(i * 0.25, ttft=1000.0 + i, offsets=[1000.0 + i, 1500.0, 2000.0]) for i in range(40)])
    every = np.ones(len(records), dtype=bool)
    found = window_intervals(records, every, T0, T0 + 11.75, {"ttft_ms": 1030.0}, {"decode_tok_s": 120 / 11.75},
                             whole=True, itl=itl_stats(records, every))
    assert found.batches == 10
    assert found.ttft_ms is not None and found.ttft_ms.mean is not None
    assert found.ttft_ms.mean.low < 1019.5 < found.ttft_ms.mean.high  # the mean TTFT, 1,019.5
    assert found.e2e_ms is not None and found.itl_ms is not None and found.itl_ms.p50 is not None
    assert found.goodput_share is not None and found.goodput_share.low < 31 / 40 < found.goodput_share.high
    decode = found.decode_tok_s
    assert decode is not None and decode.low < 120 / 11.75 < decode.high  # 3 tokens × 40 over the run
    steady = window_intervals(records, every, T0, T0 + 11.75, None, {})
    assert steady.e2e_ms is None and steady.itl_ms is None and steady.goodput_share is None


def test_the_page_s_prefill_bins_hold_what_each_window_holds() -> None:
    """Prefills shorter than a bin, across several bins, of no length, with no TTFT (their E2E) or no count."""
    rng = np.random.default_rng(4)
    n = 500
    ttft = rng.choice([0.0, 40.0, 900.0, 7000.0], n)
    ok = pd.DataFrame({"send_ts": T0 + rng.uniform(0, 60, n), "ttft_ms": np.where(rng.random(n) < 0.05, np.nan, ttft),
                       "e2e_ms": 8000.0, "prompt_tokens": np.where(rng.random(n) < 0.05, np.nan,
                                                                  rng.integers(1, 2000, n).astype(float))})
    width, bins = 2.5, 28
    windows = [(T0 + k * width, T0 + (k + 1) * width) for k in range(bins)]
    assert prompt_tokens_binned(ok, T0, width, bins) == pytest.approx(prompt_tokens_within(ok, windows), rel=1e-9, abs=1e-6)
    by_hand = pd.DataFrame({"send_ts": [T0 + 1.0, T0 + 4.0], "ttft_ms": [3000.0, 0.0], "e2e_ms": 1.0,
                            "prompt_tokens": [300.0, 7.0]})
    assert prompt_tokens_binned(by_hand, T0, 1.0, 6).tolist() == [0.0, 100.0, 100.0, 100.0, 7.0, 0.0]
    assert prompt_tokens_binned(by_hand.iloc[:1], T0, 1.0, 6).tolist() == [0.0, 100.0, 100.0, 100.0, 0.0, 0.0]
    assert prompt_tokens_binned(by_hand.iloc[1:], T0, 1.0, 6).tolist() == [0.0, 0.0, 0.0, 0.0, 7.0, 0.0]
