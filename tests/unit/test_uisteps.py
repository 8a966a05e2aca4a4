"""orchestrate/report/uisteps.py: a web UI ramp read from Locust's history — the user levels a person set,
and each level held long enough as a step with the figures of the requests sent under it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from locustfiles.records import RequestRecord

from orchestrate.report.summarize import load_records
from orchestrate.report.uisteps import HOLD_S, Level, markdown_intro, ui_steps, user_levels, users_over_time

T0 = 1_700_000_000


def history(tmp_path: Path, users_by_second: list[int], other_rows: bool = True) -> Path:
    """Locust's ``_stats_history.csv``: an ``Aggregated`` row a second (and a per-request row beside it)."""
    rows = ["Timestamp,User Count,Type,Name,Requests/s"]
    for s, users in enumerate(users_by_second):
        rows.append(f"{T0 + s},{users},,Aggregated,1.0")
        if other_rows:
            rows.append(f"{T0 + s},999,POST,/v1/chat/completions,1.0")
    path = tmp_path / "locust_stats_history.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_levels_are_runs_of_one_user_count(tmp_path: Path) -> None:
    """Only the Aggregated rows count; the last level covers its last row's second."""
    levels = user_levels(history(tmp_path, [0, 4, 4, 4, 16, 16, 4]))
    assert levels == [Level(0, T0, T0 + 1), Level(4, T0 + 1, T0 + 4), Level(16, T0 + 4, T0 + 6),
                      Level(4, T0 + 6, T0 + 7)]
    assert [level.held_s for level in levels] == [1, 3, 2, 1]


def test_no_history_no_levels(tmp_path: Path) -> None:
    assert user_levels(tmp_path / "missing.csv") == []
    (tmp_path / "empty.csv").write_text("")
    assert user_levels(tmp_path / "empty.csv") == []
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    assert user_levels(tmp_path / "other.csv") == []


def test_users_over_time_leave_out_the_idle_levels() -> None:
    levels = [Level(0, 0, 5), Level(4, 5, 20.04), Level(16, 20.04, 40)]
    assert users_over_time(levels) == {"max": 16, "levels": [{"users": 4, "from": 5, "held_s": 15.0},
                                                             {"users": 16, "from": 20.04, "held_s": 20.0}]}
    assert users_over_time([]) is None


def records(send_ts: list[float], folder: Path) -> pd.DataFrame:
    """Records as ``requests.jsonl`` holds them, read the way the report reads them."""
    path = folder / "requests.jsonl"
    path.write_text("".join(RequestRecord(f"r{i}", i, "w", ts, ttft_ms=50.0, e2e_ms=100.0, output_tokens=4)
                            .to_json() + "\n" for i, ts in enumerate(send_ts)))
    return load_records(path)


def test_a_level_held_long_enough_is_a_step_with_the_requests_sent_under_it(tmp_path: Path) -> None:
    levels = [Level(4, 0, 20), Level(8, 20, 25), Level(16, 25, 40), Level(0, 40, 60)]
    sent = records([1, 2, 19.9, 20, 21, 30, 39.99, 40, 50], tmp_path)
    block = ui_steps(sent, levels)
    assert block is not None and block["key"] == "users" and block["hold_s"] == HOLD_S
    assert block["values"] == [4, 16], "8 users held 5 s: not a step; 0 users: not a step"
    assert [s["label"] for s in block["steps"]] == ["users-4-1", "users-16-2"]
    assert [s["sent"] for s in block["steps"]] == [3, 2], "a request belongs to the level it was sent under"
    assert [s["held_s"] for s in block["steps"]] == [20, 15] and {s["status"] for s in block["steps"]} == {"completed"}
    assert ui_steps(sent, levels, hold_s=1)["values"] == [4, 8, 16]  # type: ignore[index]


def test_no_steps_without_levels_or_records(tmp_path: Path) -> None:
    assert ui_steps(records([1.0], tmp_path), []) is None
    assert ui_steps(records([1.0], tmp_path), [Level(4, 0, 5)]) is None, "held less than HOLD_S"
    assert ui_steps(records([], tmp_path), [Level(4, 0, 60)]) is None


def test_the_intro_names_the_hold() -> None:
    assert "Each user level held at least 10 s" in " ".join(markdown_intro({"hold_s": 10.0}))
