"""A web UI ramp as steps: each user level a person held for a while, with its own figures.

Stage: report. Users ramp by hand (4 → 16 → 32, then Stop) to find where the server saturates, so one
pooled set of percentiles would describe no load that ever ran. A request belongs to the level it was
sent under. Each record says which: ``target_users``, the count the form had set when it was sent
(Locust's ``target_user_count``; a worker's: the form's total, handed on by the master), so every request
is in exactly one step, the ramp to a level included, with no clock to round. For records without the
stamp the levels come from Locust's history (``locust_stats_history.csv``: the user count each whole
second) and a level held at least ``HOLD_S`` is a step. The step block has the shape of a
sweep's (``report/markdown.py`` tabulates it, ``report/plots.py`` draws it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from orchestrate.report.aggregates.concurrency import request_ends
from orchestrate.report.aggregates.headline import summarize_records
from orchestrate.report.aggregates.stats import numeric_column
from orchestrate.report.formats import summary_numbers
from orchestrate.report.jsontypes import from_json
from orchestrate.report.schema.summary import Summary
from orchestrate.report.schema.ui import UiStep, UiSteps, UserLevel, UsersOverTime

HOLD_S = 10.0
"""A user level held at least this long (seconds of Locust's history) is a step."""
FEW_COMPLETED = 10
"""A step whose figures rest on fewer completed requests than this is flagged ``few``: its percentiles are
a handful of values."""


@dataclass(frozen=True)
class Level:
    """A user count as it held, from one history row to the first row with another count."""

    users: int
    start: float
    end: float

    @property
    def held_s(self) -> float:
        return self.end - self.start


def user_levels(history_csv: Path) -> list[Level]:
    """The user count over time, as runs of one count (the ``Aggregated`` rows of Locust's history)."""
    try:
        history = pd.read_csv(history_csv)
    except (OSError, ValueError, pd.errors.EmptyDataError):
        return []
    if not {"Timestamp", "User Count", "Name"} <= set(history.columns):
        return []
    rows = history[history["Name"] == "Aggregated"].sort_values("Timestamp")
    levels: list[Level] = []
    for ts, users in zip(rows["Timestamp"].astype(float), rows["User Count"].astype(int)):
        if levels and levels[-1].users == users:
            continue
        if levels:
            levels[-1] = Level(levels[-1].users, levels[-1].start, ts)
        levels.append(Level(users, ts, ts))
    if levels and len(rows):
        last = float(rows["Timestamp"].max()) + 1.0  # the last row covers its own second
        levels[-1] = Level(levels[-1].users, levels[-1].start, last)
    return levels


def form_spawn_rate(llm_history_csv: Path) -> float | None:
    """The spawn rate the web UI's form ran last (``llm_history.csv``, one row a second), None without one."""
    try:
        rates = pd.read_csv(llm_history_csv, usecols=["spawn_rate"])["spawn_rate"].dropna()
    except (OSError, ValueError, pd.errors.EmptyDataError):
        return None
    return float(rates.iloc[-1]) if not rates.empty else None


def users_over_time(levels: list[Level]) -> UsersOverTime | None:
    """``summary.json``'s record of what the users really were (not the scenario's number)."""
    if not levels:
        return None
    return UsersOverTime(max=max(level.users for level in levels),
                         levels=tuple(UserLevel(level.users, level.start, round(level.held_s, 1))
                                      for level in levels if level.users > 0))


def ui_steps(records: pd.DataFrame, levels: list[Level], hold_s: float = HOLD_S) -> UiSteps | None:
    """The steps block (a sweep's shape, ``aggregates/sweep.py``, key ``users``); None without a level to show.

    ``placed_by``: ``send`` when every record carries the user count it was sent under (each level a step),
    ``history`` when the levels come from Locust's whole-second history (each held ``hold_s`` a step)."""
    if records.empty:
        return None
    sent = numeric_column(records, "send_ts")
    stamped = numeric_column(records, "target_users")  # all NaN in records written before it existed
    if stamped.notna().all() and (stamped > 0).all():
        groups = _levels_as_sent(records, sent, stamped)
        placed_by = "send"
    else:
        levels = first_level_from_the_first_send(levels, float(sent.min()))
        groups = [(level, records[(sent >= level.start) & (sent < level.end)])
                  for level in levels if level.users > 0 and level.held_s >= hold_s]
        placed_by = "history"
    if not groups:
        return None
    steps = []
    for i, (level, mine) in enumerate(groups):
        headline = summarize_records(mine)  # the level's headline blocks: its figures as a sweep step's
        figures = summary_numbers(Summary(**headline.blocks()))
        cancelled = headline.requests.cancelled
        steps.append(from_json(UiStep, {
            "value": level.users, "label": f"users-{level.users}-{i + 1}",
            "status": "stopped" if cancelled else "completed", "cancelled": cancelled,
            "few": headline.requests.completed < FEW_COMPLETED, "held_s": round(level.held_s, 1), **figures}))
    return UiSteps(key="users", values=tuple(level.users for level, _ in groups), hold_s=hold_s, placed_by=placed_by,
                   steps=tuple(steps))


def _levels_as_sent(records: pd.DataFrame, sent: pd.Series, users: pd.Series) -> list[tuple[Level, pd.DataFrame]]:
    """Runs of one ``target_users`` in send order, each a level from its first send to the next level's (the
    last: to its last request's end), with its records."""
    order = sent.sort_values(kind="stable").index
    sent, users = sent.loc[order], users.loc[order].astype(int)
    runs = [sends for _, sends in sent.groupby((users != users.shift()).cumsum())]
    starts = [float(sends.iloc[0]) for sends in runs]
    ends = [*starts[1:], float(request_ends(records).max())]
    return [(Level(int(users[sends.index[0]]), start, end), records.loc[sends.index])
            for sends, start, end in zip(runs, starts, ends)]


def first_level_from_the_first_send(levels: list[Level], first_send: float) -> list[Level]:
    """The first level with users starts no later than the first request: Locust's history stamps its rows by
    whole seconds, so the first requests (sent in the second before the first row with users) would belong to
    no level. Nothing else was running then: they are the first level's."""
    for i, level in enumerate(levels):
        if level.users > 0:
            start = min(level.start, first_send)
            return [x for x in levels[:i] if x.end <= start] + [Level(level.users, start, level.end), *levels[i + 1:]]
    return levels
