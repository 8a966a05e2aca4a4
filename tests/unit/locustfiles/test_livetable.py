"""locustfiles/livetable.py: the LLM tab's rows and the figures CSV, as text, from ``LiveStats`` fed by hand."""

from __future__ import annotations

import json

from locustfiles.livestats import MIN_RATE_S, LiveStats
from locustfiles.livetable import figures_csv_rows, table_rows
from locustfiles.records import OK, RequestRecord
from tests.unit.locustfiles.test_livestats import Clock, add_at, four_requests, ok, under

__all__ = ["four_requests"]  # the fixture, shared with test_livestats


def test_table_rows_read_as_text(four_requests: tuple[LiveStats, Clock]) -> None:
    stats, clock = four_requests
    clock.t = 112.0
    rows = {r["figure"]: r for r in table_rows(stats.snapshot(), "http://127.0.0.1:8089/tokenswarm/charts")}
    assert (rows["Decode tok/s"]["now"], rows["Decode tok/s"]["run"]) == ("2.0", "2.5")
    assert rows["TTFT p50 / p90 / p99 (ms)"]["run"] == "30.0 / 50.0 / 50.0"
    assert rows["TPOT p50 / p90 / p99 (ms)"]["run"] == "2.00 / 5.00 / 5.00"
    assert rows["Output tokens per request (mean / p50)"]["run"] == "15.0 / 10"
    assert rows["TTFO p50 / p90 / p99 (ms)"]["run"] == "—" and "first token of the answer" in rows[
        "TTFO p50 / p90 / p99 (ms)"]["how"]
    assert rows["Reasoning share of output"]["run"] == "0.0%"
    assert rows["Draft acceptance"]["run"] == "—" and "no draft model" in rows["Draft acceptance"]["how"]
    assert rows["Requests in flight"]["run"] == "3"
    assert (rows["Errors"]["now"], rows["Errors"]["run"]) == ("1", "1")
    assert rows["    http_400:exceed_context_size_error"]["run"] == "1"
    assert rows["Cancelled"]["run"] == "1"
    assert rows["Live charts"]["run"] == "http://127.0.0.1:8089/tokenswarm/charts"
    assert "Download Data" in rows["Live charts"]["how"] and "Prompt budget" not in rows
    assert all(set(r) == {"figure", "now", "level", "run", "how"} for r in rows.values())
    assert rows["Decode tok/s"]["level"] == "—" and "User level" not in rows  # no level seen by the sampler yet
    budget = {r["figure"]: r for r in table_rows(stats.snapshot(), "", (48, 27, 11))}["Prompt budget"]
    assert budget["run"] == "27 sent, 11 ended, 37 left of 48" and "the run ends when" in budget["how"]


def test_a_reasoning_reply_shows_its_ttfo_and_thinking_share() -> None:
    clock = Clock()
    stats = LiveStats(clock=clock, window_s=10.0, in_flight=lambda: 0)
    thinking = ok(100.0, prompt=10, output=20, ttft=40.0, gap=2.0)
    thinking.ttfo_ms, thinking.reasoning_tokens = 70.0, 15
    add_at(stats, clock, 101.0, thinking)
    rows = {r["figure"]: r for r in table_rows(stats.snapshot(), "")}
    assert rows["TTFO p50 / p90 / p99 (ms)"]["run"] == "70.0 / 70.0 / 70.0"
    assert rows["TTFT p50 / p90 / p99 (ms)"]["run"] == "40.0 / 40.0 / 40.0"
    assert rows["Reasoning share of output"]["run"] == "75.0%"


def test_embeddings_show_inputs_per_second_and_e2e_and_a_checked_run_its_valid_share() -> None:
    clock = Clock(100.0)
    stats = LiveStats(clock=clock, window_s=10.0, in_flight=lambda: 0)
    for t, e2e in ((101.0, 300.0), (102.0, 500.0)):
        embedded = RequestRecord(request_id=f"e{t}", prompt_index=0, worker="local", send_ts=100.0, status=OK,
                                 e2e_ms=e2e, prompt_tokens=40, output_tokens=0, endpoint="embeddings", inputs=4)
        add_at(stats, clock, t, embedded)
    clock.t = 104.0
    rows = {r["figure"]: r for r in table_rows(stats.snapshot(), "")}
    assert rows["Inputs/s"]["run"] == "2.0" and rows["E2E p50 / p90 / p99 (ms)"]["run"] == "300.0 / 500.0 / 500.0"
    assert "Valid replies" not in rows
    checked = Clock(100.0)
    judged = LiveStats(clock=checked, window_s=10.0, in_flight=lambda: 0)
    for i, valid in enumerate((True, True, False, True)):
        reply = ok(100.0, prompt=10, output=5, ttft=40.0, gap=2.0)
        reply.valid = valid
        add_at(judged, checked, 101.0 + i, reply)
    rows = {r["figure"]: r for r in table_rows(judged.snapshot(), "")}
    assert rows["Valid replies"]["run"] == "75.0%" and "Inputs/s" not in rows


def test_figures_csv_rows(four_requests: tuple[LiveStats, Clock]) -> None:
    stats, clock = four_requests
    clock.t = 112.0
    rows = figures_csv_rows(stats.snapshot())
    assert rows[0] == ["figure", "last_10s", "this_level", "since_start"]
    by_name = {r[0]: r[1:] for r in rows[1:]}
    assert by_name["decode_tok_s"] == [2.0, "", 2.5]  # no user level seen by the sampler: empty
    assert by_name["ttft_ms_p90"] == [30.0, "", 50.0]
    assert by_name["acceptance"] == ["", "", ""]  # none: no drafter
    assert by_name["in_flight"] == ["", "", 3]
    assert by_name["seconds"] == [10.0, "", 12.0]
    assert by_name["errors:http_400:exceed_context_size_error"] == [1, "", 1]


def test_the_user_level_column_and_row() -> None:
    clock = Clock(100.0)
    stats = LiveStats(clock=clock, window_s=10.0, in_flight=lambda: 0)
    stats.sample(users=8, target=8)
    add_at(stats, clock, 102.0, under(8, ok(100.5, prompt=100, output=10, ttft=50.0, gap=5.0, tpot=5.0)))
    rows = {r["figure"]: r for r in table_rows(stats.snapshot(), "")}
    assert rows["User level"]["level"] == "8 users, set 2 s ago" and rows["Requests completed"]["level"] == "1"
    by_name = {r[0]: r[1:] for r in figures_csv_rows(stats.snapshot())}
    assert by_name["users"] == ["", 8, ""] and by_name["completed"] == [1, 1, 1]
    assert by_name["seconds"][1] == 1.5 and by_name["decode_tok_s"][1] == 10 / 1.5  # since the level's first send
    assert rows["TTFT p50 / p90 / p99 (ms)"]["level"] == "50.0 / 50.0 / 50.0"


def twenty_requests(stats: LiveStats, clock: Clock) -> None:
    """A level of 8 users from t=100: TTFT 10, 20 … 200 ms, one request counted a second from t=101 (20 tokens)."""
    stats.sample(users=8, target=8)
    for i in range(20):
        add_at(stats, clock, 101.0 + i, under(8, ok(100.5 + i, prompt=100, output=20, ttft=10.0 * (i + 1), gap=5.0)))


def test_the_level_column_shows_the_report_s_percentile_intervals() -> None:
    """20 values 10 … 200: the median's 95 % interval is [x₆, x₁₅] = [60, 150] (the textbook's ranks for n = 20);
    a p90 or p99 of 20 values has no upper bound (``?``). The row carries them as JSON for programs."""
    clock = Clock(100.0)
    stats = LiveStats(clock=clock, window_s=10.0, in_flight=lambda: 0)
    twenty_requests(stats, clock)
    rows = {r["figure"]: r for r in table_rows(stats.snapshot(), "")}
    ttft = rows["TTFT p50 / p90 / p99 (ms)"]
    assert ttft["level"] == "100.0 [60.0–150.0] / 180.0 [150.0–?] / 200.0 [190.0–?]"
    assert ttft["run"] == "100.0 / 180.0 / 200.0" and ttft["now"] == "150.0 / 190.0 / 200.0"  # no intervals there
    assert ttft["interval"] == {"p50": {"low": 60.0, "high": 150.0}, "p90": {"low": 150.0, "high": None},
                                "p99": {"low": 190.0, "high": None}}
    assert json.loads(json.dumps(ttft))["interval"]["p90"]["high"] is None  # what /stats/requests sends
    assert "interval" not in rows["TTFO p50 / p90 / p99 (ms)"] and "interval" not in rows["Errors"]
    assert "95 % interval" in rows["User level"]["how"]


def test_the_level_column_shows_a_rate_interval_once_the_level_is_held_long_enough() -> None:
    clock = Clock(100.0)
    stats = LiveStats(clock=clock, window_s=10.0, in_flight=lambda: 0)
    twenty_requests(stats, clock)  # the last counted at 120 s, the first sent at 100.5
    clock.t = 100.5 + MIN_RATE_S - 1
    rows = {r["figure"]: r for r in table_rows(stats.snapshot(), "")}
    assert "[" not in rows["Decode tok/s"]["level"] and "interval" not in rows["Decode tok/s"]
    clock.t = 120.5  # 20 s held: 20 requests of 20 tokens, one a second, in 10 slices of 2 s
    snap = stats.snapshot()
    rows = {r["figure"]: r for r in table_rows(snap, "")}
    decode, expected = rows["Decode tok/s"], snap["level"]["intervals"]["decode_tok_s"]
    assert snap["level"]["decode_tok_s"] == 20.0 and expected["low"] <= 20.0 <= expected["high"]
    assert decode["level"] == f"20.0 [{expected['low']:,.1f}–{expected['high']:,.1f}]"
    assert decode["interval"] == expected and decode["run"] == f"{400 / 20:,.1f}"  # since start: no interval
    assert rows["Completed requests/s"]["level"].startswith("1.00 [")


def test_a_level_of_one_request_shows_no_bracket_and_no_interval() -> None:
    clock = Clock(100.0)
    stats = LiveStats(clock=clock, window_s=10.0, in_flight=lambda: 0)
    stats.sample(users=8, target=8)
    add_at(stats, clock, 102.0, under(8, ok(100.5, prompt=100, output=10, ttft=50.0, gap=5.0, tpot=5.0)))
    rows = table_rows(stats.snapshot(), "")
    assert all("[" not in r["level"] and "interval" not in r for r in rows if r["figure"] != "User level")
