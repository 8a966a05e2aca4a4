"""``summary.md``'s lines and notes for an open-loop run (``arrivals``) and a staged ramp (``stages``).

Stage: report. Formatting only: the figures are ``aggregates/pacing_figures.py``'s.
"""

from __future__ import annotations

from typing import Any

from orchestrate.report.aggregates.pacing_figures import LATENCY_KEYS
from orchestrate.report.formats import fmt_ms, fmt_num


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


def markdown(summary: dict[str, Any]) -> list[str]:
    """``summary.md`` lines: the arrivals block and the per-stage table (nothing in a plain run)."""
    out: list[str] = []
    arr = summary.get("arrivals")
    if arr:
        delay = arr.get("send_delay_ms") or {}
        share = arr["late_share"]
        out += [f"Open loop: {fmt_num(arr['rate_asked'], 2)} req/s asked ({arr['mode']}"
                + (f", burstiness {arr['burstiness']:g}" if arr.get("burstiness") not in (None, 1, 1.0) else "")
                + f"), {fmt_num(arr['rate_scheduled'], 2)} scheduled, {fmt_num(arr['rate_achieved'], 2)} sent; "
                f"at most {arr['users_cap']} in flight  ", "",
                "| scheduled | sent | unsent | late | late share | send delay p50 | p99 | max |",
                "|---|---|---|---|---|---|---|---|",
                f"| {arr['scheduled']} | {arr['sent']} | {arr['unsent']} | {arr['late']} (> {arr['late_ms']:g} ms) | "
                f"{'–' if share is None else f'{100 * share:.0f} %'} | {fmt_ms(delay.get('p50'))} | "
                f"{fmt_ms(delay.get('p99'))} | {fmt_ms(delay.get('max'))} |", ""]
        lat = arr.get("latency_from_schedule_ms") or {}
        if any(lat.values()):
            out += ["| from the scheduled time | p50 | p90 | p99 | mean | max |", "|---|---|---|---|---|---|"]
            out += [f"| {label} | " + " | ".join(fmt_ms(lat[label.lower()][c]) for c in ("p50", "p90", "p99", "mean",
                                                                                         "max")) + " |"
                    for _, label in LATENCY_KEYS if lat.get(label.lower())]
            out.append("")
        if arr["cap_fell_behind"]:
            out += [f"**Warning: {cap_warning(arr)}.**", ""]
    stages = summary.get("stages")
    if stages:
        out += ["| stage | users | duration | began at | requests | completed | errors | peak in flight | "
                "decode tok/s | TTFT p50 | TTFT p99 | TPOT p50 |", "|---" * 12 + "|"]
        for s in stages:
            began = "not reached" if not s["reached"] else f"{s['started_s']:.1f} s"
            out.append(f"| {s['stage']} | {s['users']} | {s['duration_s']:g} s | {began} | {s['requests']} | "
                       f"{s['completed']} | {s['errors']} | {s['peak_in_flight']} | {fmt_num(s['decode_tok_s'])} | "
                       f"{fmt_ms(s['ttft_p50_ms'])} | {fmt_ms(s['ttft_p99_ms'])} | {fmt_ms(s['tpot_p50_ms'])} |")
        out.append("")
    return out
