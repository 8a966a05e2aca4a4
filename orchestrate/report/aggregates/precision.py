"""How precisely a run knows its steady-state figures: each ``load.until`` target's relative half width, and the
summary's ``until`` block.

Stage: records → report. ``relative_half_width`` is the one rule: the larger distance from the figure to a side of
its 95 % interval (``steady_state.intervals``), over the figure; a side the interval cannot bound is not precise at
all. ``load/precisionwatch.py`` asks it while the run goes (to stop it), the summary at the end (to say so).
"""

from __future__ import annotations

from typing import Any

from orchestrate.report.aggregates.intervals import relative_half_width as relative_half_width_of
from orchestrate.report.aggregates.recordsfile import read_records
from orchestrate.report.aggregates.steadystate import schedule_of, steady_state
from orchestrate.report.jsontypes import lookup
from orchestrate.report.schema.steady import SteadyState
from orchestrate.report.schema.until import Until, UntilTarget
from orchestrate.results import VariantPaths, read_json
from orchestrate.scenario.spec import LoadSpec

STEADY_PATHS = {"slo_attainment": ("goodput.share", "goodput_share")}
"""A target's figure → (its place in the steady state, its interval's), where the names differ."""


def figure_and_interval(steady: SteadyState | None, name: str) -> tuple[float | None, Any]:
    """A target figure's value in the steady window and its 95 % interval (None where absent)."""
    if steady is None or not steady.found:
        return None, None
    value_at, interval_at = STEADY_PATHS.get(name, (name, name))
    return lookup(steady, value_at), lookup(steady.intervals, interval_at)


def relative_half_width(steady: SteadyState | None, name: str) -> float | None:
    """A target figure's relative half width in the window (``intervals.relative_half_width``)."""
    return relative_half_width_of(*figure_and_interval(steady, name))


def precision_now(paths: VariantPaths, load: LoadSpec, slo: dict[str, float] | None
                  ) -> tuple[dict[str, float | None], float] | None:
    """While a run goes: each ``load.until`` target's relative half width in the steady window its records so far
    have (found as the summary will find it), and the first send (wall clock); None before any record."""
    records = read_records(paths.records)
    if records.empty:
        return None
    steady = steady_state(records, load, slo, schedule_of(read_json(paths.arrivals_json) or {}))
    return {name: relative_half_width(steady, name) for name in load.until}, float(records["send_ts"].min())


def until_block(targets: dict[str, float], steady: SteadyState | None, watched: dict[str, Any] | None,
                stopped: bool, stopped_by: str | None) -> Until | None:
    """``until``: each target's precision at the end (this summary's window) and when the watch first saw it hold
    (``until.json``), and why the run ended short of them; None without targets."""
    if not targets:
        return None
    watched = watched or {}
    first_held = watched.get("held_at_s") or {}
    found = []
    for name, asked in targets.items():
        reached = relative_half_width(steady, name)
        value, _ = figure_and_interval(steady, name)
        found.append(UntilTarget(figure=name, asked=asked, reached=reached, value=value,
                                 held=reached is not None and reached <= asked, held_at_s=first_held.get(name)))
    every = all(t.held for t in found)
    reason = None
    if not stopped:
        window = "" if steady is None or steady.found else f"; no steady window: {steady.reason}"
        reason = f"the run ended ({stopped_by or 'unknown'}) before every target held{window}"
    return Until(held=every, stopped=stopped, checks=int(watched.get("checks") or 0), targets=tuple(found),
                 reason=reason)
