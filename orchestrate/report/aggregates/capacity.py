"""A capacity search's answer: each probe judged from its own summary, the boundary, what limited it, and
where throughput fell while load rose.

Stage: report. Everything comes from the variant's ``search.json`` (the search's settings and its probes
in the order run) and each probe's ``summary.json`` under ``steps/``, so ``tokenswarm report`` rebuilds
the same ``capacity`` block without a server. The run loop judges each probe here too, to choose the
next one (``orchestrate.scenario.search.next_probe``).

A probe passes when it completed, had a steady-state window, the share of the requests sent in that
window that met every SLO limit (its ``goodput.share``) reached ``attainment``, and, in an open loop,
the sends kept up with the schedule. A probe the run stopped early because it could no longer pass
(``CANNOT_PASS``) fails.
"""

from __future__ import annotations

import statistics
from dataclasses import fields, replace
from typing import Any

from orchestrate.report.formats import SLO_LABELS, fmt_num, slo_text
from orchestrate.report.jsontypes import from_json
from orchestrate.report.schema.capacity import Capacity, Cliff, Probe, ProbeFigures, Verdict
from orchestrate.report.schema.summary import Summary
from orchestrate.results import VariantPaths, read_json
from orchestrate.scenario.search import CANNOT_PASS, boundary, converged
from orchestrate.scenario.slo import SLO_KEYS
from orchestrate.scenario.spec import Search

CLIFF_DROP = 0.10
"""Steady-state decode tok/s this far below a lower load's: throughput fell while load rose."""
UNITS = {"users": "users", "rate": "req/s", "time_scale": "× the trace's speed"}


def judge(summary: Summary, search: Search) -> Verdict:
    """One probe's verdict and figures, from its summary alone."""
    steady = summary.steady_state
    found = steady is not None and steady.found
    window_goodput = steady.goodput if steady is not None and found else None
    share = window_goodput.share if window_goodput is not None else None
    stopped_early = summary.stopped_by == CANNOT_PASS
    status = summary.status or "completed"
    why = None
    if stopped_early:
        why = "stopped early: it could no longer reach the attainment"
    elif status != "completed":
        why = f"the probe ended {status}"
    elif steady is None or not found:
        why = f"no steady state ({steady.reason if steady is not None and steady.reason else 'no requests'})"
    elif share is None or share < search.attainment:
        why = f"{fmt_num(100 * share if share is not None else None)} % met the SLO, below {100 * search.attainment:g} %"
    elif search.over != "users" and steady.kept_up is False:
        why = "the sends fell behind the schedule: the users cap held requests back"
    # a probe stopped early often has no steady window: what its requests missed is then read over all of them
    whole = summary.goodput
    missed = window_goodput.missed_by if window_goodput is not None else whole.missed_by if whole else None
    figures = ProbeFigures(found=found)
    if steady is not None and found:
        figures = ProbeFigures(True, steady.decode_tok_s, steady.requests_per_s,
                               steady.ttft_ms.p99 if steady.ttft_ms else None,
                               steady.tpot_ms.p99 if steady.tpot_ms else None, steady.requests)
    interval = steady.intervals.goodput_share if steady is not None and found and steady.intervals else None
    uncertain = (interval is not None and not stopped_early and status == "completed" and interval.low is not None
                 and interval.high is not None and interval.low < search.attainment <= interval.high)
    return Verdict(share, why is None, stopped_early, why, missed, figures, attainment_interval=interval,
                   uncertain=uncertain)


def search_of(record: dict[str, Any]) -> Search:
    """The ``Search`` a ``search.json`` was run with."""
    return Search(**record["search"])


def capacity_block(paths: VariantPaths) -> Capacity | None:
    """``summary.json``'s ``capacity``, from ``search.json`` and the probes' summaries; None without a search."""
    record = read_json(paths.search_json)
    if not record:
        return None
    search = search_of(record)
    probes = []
    for probe in record.get("probes") or []:
        probe_paths = VariantPaths(paths.dir / "steps" / probe["label"])
        summary = from_json(Summary, read_json(probe_paths.summary_json) or {"status": "not_run"},
                            str(probe_paths.summary_json))
        verdict = judge(summary, search)
        probes.append(Probe(n=probe["n"], value=probe["value"], label=probe["label"],
                            **{f.name: getattr(verdict, f.name) for f in fields(Verdict)}))
    max_passing, min_failing = boundary([(p.value, p.passed) for p in probes])
    block = Capacity(
        over=search.over, unit=UNITS[search.over], range=(search.low, search.high),
        slo={key: float(limit) for key, limit in (record.get("slo") or {}).items()},
        attainment=search.attainment, precision=search.precision,
        max_passing=max_passing, min_failing=min_failing,
        converged=bool(probes) and converged(search, max_passing, min_failing),
        limited_by=limited_by([p for p in probes if p.value == min_failing]),
        probes=tuple(probes), cliff=cliff(probes),
        uncertain=tuple(sorted({p.value for p in probes if p.uncertain and p.value in (max_passing, min_failing)})),
        wall_s=(record["ended_ts"] - record["started_ts"]) if record.get("ended_ts") else None)
    return replace(block, sentence=sentence(block))


def limited_by(failed: list[Probe]) -> str | None:
    """The SLO key (or ``error``) the failing load's requests missed most often, over its probes."""
    totals: dict[str, int] = {}
    for probe in failed:
        for key in (*SLO_KEYS, "error"):
            count = getattr(probe.missed_by, key) if probe.missed_by is not None else None
            if count is not None:
                totals[key] = totals.get(key, 0) + int(count)
    return max(totals, key=lambda k: totals[k]) if totals and max(totals.values()) else None


def decode_by_load(probes: list[Probe]) -> dict[float, float]:
    """Each load's steady-state decode tok/s: the median over its probes that ran to the end (a window cut
    short by an early stop is no load level's throughput)."""
    by_value: dict[float, list[float]] = {}
    for p in probes:
        decode = p.steady_state.decode_tok_s
        if decode is not None and not p.stopped_early:
            by_value.setdefault(p.value, []).append(decode)
    return {value: statistics.median(found) for value, found in sorted(by_value.items())}


def cliff(probes: list[Probe]) -> Cliff | None:
    """The first load at which steady-state decode tok/s (``decode_by_load``) fell ``CLIFF_DROP`` below a
    lower load's, while load rose; None when it never did."""
    best: tuple[float, float] | None = None
    for value, decode in decode_by_load(probes).items():
        if best is not None and decode < (1 - CLIFF_DROP) * best[1]:
            return Cliff(value=value, decode_tok_s=decode, peak_value=best[0], peak_decode_tok_s=best[1])
        if best is None or decode > best[1]:
            best = (value, decode)
    return None


def _load(value: float | None, unit: str) -> str:
    if value is None:
        return "–"
    return f"{value:g}{unit}" if unit.startswith("×") else f"{value:g} {unit}"  # 1.8× the trace's speed


def sentence(block: Capacity) -> str:
    """The answer in one sentence: "serves 24 users within TTFT ≤ 2.0 s, TPOT ≤ 100 ms; 28 miss TTFT"."""
    unit, slo = block.unit, slo_text(block.slo)
    within = f"within {slo} for {100 * (block.attainment or 0):g} % of requests in steady state"
    low, high = block.range
    top, bottom = block.max_passing, block.min_failing
    if not block.probes:
        return "no probe ran"
    if top is None:
        return f"does not serve {_load(low, unit)} {within}: the range's low end already failed"
    if bottom is None:
        return f"serves at least {_load(top, unit)} {within} (the range's high end, {high:g}, passed)"
    missed = SLO_LABELS.get(block.limited_by or "", block.limited_by or "the SLO")
    return (f"serves {_load(top, unit)} {within}; {_load(bottom, unit)} miss {missed}"
            + ("" if block.converged else " (the search stopped at its probe limit before the boundary was as "
                                          "close as asked)") + _uncertain_text(block))


def _uncertain_text(block: Capacity) -> str:
    """``; uncertain at 24 users: attainment 99.2 % [98.1–99.8 %] straddles 99 %, ...``: a boundary load with a
    probe whose verdict could have gone the other way by chance (its attainment's 95 % interval holds the target);
    each load once, its probes' figures once each."""
    said = []
    for value in block.uncertain:
        found: list[str] = []
        for p in block.probes:
            if p.value == value and p.uncertain and p.attainment is not None and p.attainment_interval is not None:
                low, high = p.attainment_interval.low or 0.0, p.attainment_interval.high or 1.0
                text = f"{100 * p.attainment:.1f} % [{100 * low:.1f}–{100 * high:.1f} %]"
                found += [text] if text not in found else []
        if found:
            verb = "straddles" if len(found) == 1 else "straddle"
            said.append(f"{_load(value, block.unit)}: attainment {', '.join(found)} {verb} "
                        f"{100 * (block.attainment or 0):g} %")
    if not said:
        return ""
    return f"; uncertain at {'; '.join(said)}: the capacity may be a step off (more prompts per probe would tell)"
