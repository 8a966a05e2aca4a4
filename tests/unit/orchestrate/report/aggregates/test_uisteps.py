"""orchestrate/report/aggregates/uisteps.py: a web UI ramp's user levels and steps, from a hand-written
Locust history and hand-built records."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pandas as pd

from locustfiles.records import OK, RequestRecord
from orchestrate.report.aggregates.uisteps import Level, ui_steps, user_levels, users_over_time
from orchestrate.report.schema.ui import UserLevel, UsersOverTime

T0 = 1_700_000_000.0
HEADER = "Timestamp,User Count,Type,Name,Requests/s\n"


def write_history(path: Path, users_each_second: list[int]) -> Path:
    """One ``Aggregated`` row a second (and a per-request row Locust also writes, which is not read)."""
    rows = [f"{int(T0) + i},{users},,Aggregated,1.0\n{int(T0) + i},{users},POST,/v1/chat/completions,1.0\n"
            for i, users in enumerate(users_each_second)]
    path.write_text(HEADER + "".join(rows))
    return path


def test_levels_are_runs_of_one_user_count(tmp_path: Path) -> None:
    # 0 users for 2 s, 4 for 3 s, 16 for 2 s: a level ends where the next begins, the last one a second
    # after its last row
    levels = user_levels(write_history(tmp_path / "h.csv", [0, 0, 4, 4, 4, 16, 16]))
    assert levels == [Level(0, T0, T0 + 2), Level(4, T0 + 2, T0 + 5), Level(16, T0 + 5, T0 + 7)]
    assert users_over_time(levels) == UsersOverTime(max=16, levels=(UserLevel(users=4, start=T0 + 2, held_s=3.0),
                                                                    UserLevel(users=16, start=T0 + 5, held_s=2.0)))


def test_no_history_no_levels(tmp_path: Path) -> None:
    assert user_levels(tmp_path / "missing.csv") == [] and users_over_time([]) is None
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    assert user_levels(tmp_path / "other.csv") == []


def record(i: int, send: float) -> dict:
    return asdict(RequestRecord(request_id=f"r{i}", prompt_index=i, worker="local", send_ts=send, status=OK,
                                ttft_ms=100.0 + i, e2e_ms=500.0, output_tokens=10, prompt_tokens=20))


def test_a_request_belongs_to_the_level_it_was_sent_under() -> None:
    # levels: 4 users held 12 s, 8 users held 5 s (too short to be a step), 16 users held 10 s
    levels = [Level(4, T0, T0 + 12), Level(8, T0 + 12, T0 + 17), Level(16, T0 + 17, T0 + 27)]
    records = pd.DataFrame([record(0, T0 + 1), record(1, T0 + 11.9), record(2, T0 + 13), record(3, T0 + 17),
                            record(4, T0 + 20)])
    block = ui_steps(records, levels, hold_s=10.0)
    assert block is not None and block.key == "users" and block.values == (4, 16) and block.hold_s == 10.0
    first, second = block.steps
    assert (first.label, first.held_s, first.sent, first.completed) == ("users-4-1", 12.0, 2, 2)
    assert (second.label, second.held_s, second.sent) == ("users-16-2", 10.0, 2)
    assert first.ttft_p50_ms == 100.0 and second.ttft_p50_ms == 103.0  # nearest rank of (103, 104)


def test_no_step_without_a_level_held_or_without_records() -> None:
    assert ui_steps(pd.DataFrame([record(0, T0)]), [Level(4, T0, T0 + 3)], hold_s=10.0) is None
    assert ui_steps(pd.DataFrame(), [Level(4, T0, T0 + 30)]) is None


def test_the_first_step_holds_the_first_requests_sent_before_its_history_row() -> None:
    """Locust's history stamps whole seconds: the 8 users' first row is at +2 s, their first requests left at
    +1.3 s. They are the first step's, not a 0-users level's."""
    levels = [Level(0, T0, T0 + 2), Level(8, T0 + 2, T0 + 14), Level(16, T0 + 14, T0 + 26)]
    records = pd.DataFrame([record(i, T0 + 1.3) for i in range(8)] + [record(8 + i, T0 + 15) for i in range(12)])
    block = ui_steps(records, levels, hold_s=10.0)
    assert block is not None
    first, second = block.steps
    assert (first.sent, first.completed, first.held_s) == (8, 8, 12.7)
    assert first.ttft_p50_ms == 103.0  # the first requests' own TTFTs (100 … 107)
    assert sum(s.sent for s in block.steps) == len(records)  # every request in exactly one step
    assert (first.few, second.few) == (True, False)


def test_a_step_stop_cut_short_says_so_and_few_completed_are_flagged() -> None:
    levels = [Level(4, T0, T0 + 12)]
    cut = asdict(RequestRecord(request_id="c", prompt_index=9, worker="local", send_ts=T0 + 5, status="cancelled",
                               error_class="cancelled"))
    block = ui_steps(pd.DataFrame([record(0, T0 + 1), record(1, T0 + 2), cut]), levels, hold_s=10.0)
    assert block is not None
    (step,) = block.steps
    assert (step.status, step.cancelled, step.completed, step.few) == ("stopped", 1, 2, True)


def stamped(i: int, send: float, users: int, status: str = OK) -> dict:
    row = record(i, send)
    row["target_users"], row["status"] = users, status
    return row


def test_stamped_records_are_placed_by_the_count_they_were_sent_under() -> None:
    """Each record says the count the form had set when it left: the ramp to 8 (sent before any history row
    shows 8) is the 8 step's, a request sent a moment after Edit is the 16 step's, a short level is a step too."""
    levels = [Level(0, T0, T0 + 2), Level(8, T0 + 2, T0 + 20)]  # history lags: not used when records are stamped
    records = pd.DataFrame([stamped(i, T0 + 1.3 + i / 10, 8) for i in range(8)]
                           + [stamped(8, T0 + 12.0, 16), stamped(9, T0 + 12.1, 16, status="cancelled"),
                              stamped(10, T0 + 12.5, 4)])
    block = ui_steps(records, levels, hold_s=10.0)
    assert block is not None and block.placed_by == "send" and block.values == (8, 16, 4)
    eight, sixteen, four = block.steps
    assert [s.sent for s in block.steps] == [8, 2, 1]  # every request in exactly one step
    assert eight.ttft_p50_ms == 103.0  # the first requests' own TTFTs (100 … 107)
    assert (eight.held_s, sixteen.held_s, four.held_s) == (10.7, 0.5, 0.5)  # the last: to its end
    assert (eight.status, sixteen.status, sixteen.cancelled) == ("completed", "stopped", 1)
    assert (eight.few, sixteen.few) == (True, True)


def test_records_without_the_count_fall_back_to_the_history() -> None:
    """Records of an older version carry no count: the whole-second history places them."""
    levels = [Level(4, T0, T0 + 12)]
    records = pd.DataFrame([record(0, T0 + 1)] + [stamped(1, T0 + 2, 4)])
    block = ui_steps(records, levels, hold_s=10.0)
    assert block is not None and block.placed_by == "history" and block.steps[0].sent == 2
