"""The notes of an open-loop run (``arrivals``) and a staged ramp (``stages``), and the warning when the
concurrency cap fell behind the schedule.

Stage: report. Formatting only: the figures are ``aggregates/pacing_figures.py``'s; their ``summary.md`` lines
and tables are ``markdown.py:pacing_section``'s (which states ``cap_warning`` too).
"""

from __future__ import annotations

from typing import Any

from orchestrate.report.formats import fmt_num


def notes(summary: dict[str, Any]) -> list[str]:
    """The caveats of an open-loop run or a ramp, for ``summary.md``'s notes."""
    out = []
    arr = summary.get("arrivals")
    if arr and arr["cap_fell_behind"]:
        out.append(cap_warning(arr))
    elif arr and arr["unsent_not_due"]:
        out.append(f"the run ended with {arr['unsent_not_due']} scheduled request(s) not yet due; they were "
                   "never sent (the time cap cut the schedule short)")
    if summary.get("stopped_by") == "stages_end":
        out.append("the last stage ended before every prompt was sent; requests in flight then were cancelled")
    stages = summary.get("stages") or []
    skipped = [s["stage"] for s in stages if not s["reached"]]
    if skipped:
        out.append(f"stage(s) {', '.join(map(str, skipped))} never began (the run ended first)")
    return out


def cap_warning(arr: dict[str, Any]) -> str:
    return (f"the concurrency cap of {arr['users_cap']} could not keep up with {fmt_num(arr['rate_asked'], 1)} "
            f"req/s: {arr['late']} late (> {arr['late_ms']:g} ms), {arr['unsent']} unsent "
            f"({arr['unsent_overdue']} of them already due) — latencies from the scheduled time are the ones "
            "users would see")
