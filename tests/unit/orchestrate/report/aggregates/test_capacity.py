"""orchestrate/report/aggregates/capacity.py: each probe judged from its summary alone, the boundary, what
limited it, the throughput cliff, and the block rebuilt from ``search.json`` and the probes' summaries."""

from __future__ import annotations

import json
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

import pytest

from orchestrate.report.aggregates.capacity import (
    capacity_block,
    cliff,
    judge,
    limited_by,
    sentence,
)
from orchestrate.report.jsontypes import from_json, to_json
from orchestrate.report.schema.capacity import Capacity, Cliff, Probe, ProbeFigures, Verdict
from orchestrate.report.schema.intervals import Interval
from orchestrate.report.schema.steady import MissedBy
from orchestrate.report.schema.summary import Summary
from orchestrate.results import VariantPaths, read_json, write_json
from orchestrate.scenario.search import CANNOT_PASS
from orchestrate.scenario.spec import Search

USERS = Search("users", 1, 16, precision=0.05, attainment=0.9)
RATE = Search("rate", 1.0, 16.0, precision=0.05, attainment=0.9)
SLO = {"ttft_ms": 2000.0, "tpot_ms": 100.0}


def summary(share: float | None = 0.95, *, found: bool = True, status: str = "completed",
            missed_by: dict[str, int] | None = None, decode: float | None = 100.0, kept_up: bool | None = None,
            stopped_by: str | None = None) -> dict[str, Any]:
    """A probe's ``summary.json``, only the keys ``judge`` reads."""
    steady: dict[str, Any] = {"found": found}
    if found:
        steady.update({"goodput": {"share": share, "missed_by": missed_by or {}}, "decode_tok_s": decode,
                       "requests_per_s": 2.0, "requests": 40,
                       "ttft_ms": {"p50": 100.0, "p90": 200.0, "p99": 300.0},
                       "tpot_ms": {"p50": 20.0, "p90": 30.0, "p99": 40.0}})
        if kept_up is not None:
            steady["kept_up"] = kept_up
    else:
        steady["reason"] = "only 3 requests were sent"
    out: dict[str, Any] = {"status": status, "steady_state": steady}
    if stopped_by:
        out["stopped_by"] = stopped_by
    return out


def judged(data: dict[str, Any], search: Search) -> Verdict:
    """``judge`` of a probe whose ``summary.json`` holds ``data``."""
    return judge(from_json(Summary, data), search)


def test_judge_pass_keeps_the_window_figures() -> None:
    verdict = judged(summary(0.95), USERS)
    assert verdict.passed is True and verdict.why is None and verdict.stopped_early is False
    assert verdict.attainment == 0.95
    assert asdict(verdict.steady_state) == {"found": True, "decode_tok_s": 100.0, "requests_per_s": 2.0,
                                            "ttft_p99_ms": 300.0, "tpot_p99_ms": 40.0, "requests": 40}
    assert judged(summary(0.9), USERS).passed is True  # exactly at the attainment passes


@pytest.mark.parametrize(("probe", "search", "why"), [
    (summary(1.0, status="stopped", stopped_by=CANNOT_PASS), USERS,
     "stopped early: it could no longer reach the attainment"),
    (summary(1.0, status="failed"), USERS, "the probe ended failed"),
    (summary(found=False), USERS, "no steady state (only 3 requests were sent)"),
    (summary(0.85), USERS, "85.0 % met the SLO, below 90 %"),
    (summary(None), USERS, "– % met the SLO, below 90 %"),
    (summary(1.0, kept_up=False), RATE, "the sends fell behind the schedule: the users cap held requests back"),
])
def test_judge_failures_say_why(probe: dict[str, Any], search: Search, why: str) -> None:
    verdict = judged(probe, search)
    assert verdict.passed is False and verdict.why == why
    assert verdict.stopped_early is (probe.get("stopped_by") == CANNOT_PASS)


def test_judge_kept_up_matters_only_in_an_open_loop_and_no_window_has_no_attainment() -> None:
    assert judged(summary(1.0, kept_up=False), USERS).passed is True
    assert judged(summary(1.0, kept_up=True), RATE).passed is True
    lost = judged(summary(found=False), USERS)
    assert lost.attainment is None and lost.steady_state.found is False


def test_a_probe_stopped_before_its_window_is_judged_by_what_all_its_requests_missed() -> None:
    """Stopped early with no steady window (seen on the real server at 5 users): its whole goodput names the
    limit, so the answer still says what limited it."""
    probe = {**summary(found=False, stopped_by=CANNOT_PASS),
             "goodput": {"missed_by": {"ttft_ms": 1, "tpot_ms": 6, "error": 0, "cancelled": 3}}}
    verdict = judged(probe, USERS)
    assert to_json(verdict.missed_by) == probe["goodput"]["missed_by"]
    assert limited_by([Probe(**{f.name: getattr(verdict, f.name) for f in fields(Verdict)})]) == "tpot_ms"
    assert judged(summary(0.5, missed_by={"ttft_ms": 2}), USERS).missed_by == MissedBy(ttft_ms=2)  # the window's first


def test_limited_by_sums_the_failing_loads_probes() -> None:
    """TTFT is missed most in the first probe, TPOT over both (2 + 4 > 3 + 0); cancelled never limits."""
    probes = [Probe(missed_by=MissedBy(ttft_ms=3, tpot_ms=2, error=1, cancelled=9)),
              Probe(missed_by=MissedBy(ttft_ms=0, tpot_ms=4, error=0, cancelled=0))]
    assert limited_by(probes[:1]) == "ttft_ms"
    assert limited_by(probes) == "tpot_ms"
    assert limited_by([Probe(missed_by=MissedBy(error=5, ttft_ms=1))]) == "error"
    assert limited_by([Probe(missed_by=MissedBy(ttft_ms=0, cancelled=3))]) is None
    assert limited_by([Probe(missed_by=None)]) is None and limited_by([]) is None


def probe(value: float, decode: float | None, stopped_early: bool = False) -> Probe:
    return Probe(value=value, steady_state=ProbeFigures(decode_tok_s=decode), stopped_early=stopped_early)


def test_cliff_is_the_first_load_10_percent_below_a_lower_peak() -> None:
    rising = [probe(1, 100.0), probe(2, 190.0), probe(4, 350.0)]
    assert cliff(rising) is None
    # 4: 185 is 7.5 % below the peak at 2 (not a cliff); 8: the median of 150 and 170 is 20 % below
    fell = [probe(1, 100.0), probe(2, 200.0), probe(8, 150.0), probe(4, 185.0), probe(8, 170.0), probe(16, 50.0),
            probe(3, None)]
    assert cliff(fell) == Cliff(value=8, decode_tok_s=160.0, peak_value=2, peak_decode_tok_s=200.0)
    # one good probe of 8 lifts its median: no cliff at 8, the next load's fall is
    assert cliff([probe(2, 200.0), probe(8, 150.0), probe(8, 250.0), probe(16, 100.0)]) == Cliff(
        value=16, decode_tok_s=100.0, peak_value=2, peak_decode_tok_s=200.0)
    # a probe stopped early measured a window cut short: not a load level's throughput
    assert cliff([probe(2, 200.0), probe(8, 100.0, stopped_early=True), probe(4, 210.0)]) is None


def block(**changes: Any) -> Capacity:
    base = Capacity(unit="users", slo=SLO, attainment=0.99, range=(1, 64), max_passing=24, min_failing=28,
                    probes=(Probe(),), limited_by="ttft_ms", converged=True)
    return replace(base, **changes)


WITHIN = "within TTFT ≤ 2.0 s, TPOT ≤ 100 ms for 99 % of requests in steady state"


def test_sentence_every_form() -> None:
    assert sentence(block()) == f"serves 24 users {WITHIN}; 28 users miss TTFT"
    assert sentence(block(max_passing=None, min_failing=1)) == (
        f"does not serve 1 users {WITHIN}: the range's low end already failed")
    assert sentence(block(max_passing=64, min_failing=None)) == (
        f"serves at least 64 users {WITHIN} (the range's high end, 64, passed)")
    assert sentence(block(max_passing=8, min_failing=16, converged=False, limited_by=None)) == (
        f"serves 8 users {WITHIN}; 16 users miss the SLO (the search stopped at its probe limit before the "
        "boundary was as close as asked)")
    assert sentence(block(probes=())) == "no probe ran"


def test_a_verdict_whose_attainment_interval_straddles_the_target_is_uncertain() -> None:
    def with_interval(share: float, low: float, high: float) -> dict[str, Any]:
        data = summary(share)
        data["steady_state"]["intervals"] = {"batches": 10, "goodput_share": {"low": low, "high": high}}
        return data
    close = judged(with_interval(0.92, 0.85, 0.97), USERS)  # passes 90 %, but 85 % is as likely
    assert close.passed and close.uncertain and close.attainment_interval is not None
    assert not judged(with_interval(0.97, 0.93, 0.99), USERS).uncertain  # clear of 90 % either way
    near_miss = judged(with_interval(0.88, 0.80, 0.93), USERS)
    assert not near_miss.passed and near_miss.uncertain
    uncertain = Probe(value=24, attainment=0.992, attainment_interval=Interval(0.981, 0.998), uncertain=True)
    assert sentence(block(probes=(uncertain,), uncertain=(24,))) == (
        f"serves 24 users {WITHIN}; 28 users miss TTFT; uncertain at 24 users: attainment 99.2 % [98.1–99.8 %] "
        "straddles 99 %: the capacity may be a step off (more prompts per probe would tell)")


def write_probe(paths: VariantPaths, search: Search, n: int, value: float, probe_summary: dict[str, Any] | None,
                record: dict[str, Any]) -> None:
    """What ``run_search`` leaves for one probe: its summary under ``steps/<label>/``, then ``search.json``."""
    label = search.label(n, value)
    if probe_summary is not None:
        paths.step(label).summary_json.write_text(json.dumps(probe_summary))
    record["probes"].append({"n": n, "value": value, "label": label, "prompts": 4 * int(value)})
    write_json(paths.search_json, record)


def users_search(tmp_path: Path) -> VariantPaths:
    """Grow 1, 2, 4 (fails on TTFT), bisect to 3, then confirm 3 (passes again) and 4 (fails on TPOT and errors).
    Throughput: 50, 100, 150, 140, 145, 120 tok/s."""
    paths = VariantPaths.create(tmp_path, "v")
    record: dict[str, Any] = {"search": asdict(USERS), "slo": SLO, "probes": [], "started_ts": 100.0,
                              "ended_ts": None}
    runs = [(1, summary(1.0, decode=50.0)), (2, summary(0.95, decode=100.0)),
            (4, summary(0.80, decode=150.0, missed_by={"ttft_ms": 5, "tpot_ms": 1, "error": 0, "cancelled": 0})),
            (3, summary(0.92, decode=140.0)), (3, summary(0.91, decode=145.0)),
            (4, summary(0.70, decode=120.0, missed_by={"ttft_ms": 1, "tpot_ms": 3, "error": 2, "cancelled": 7}))]
    for n, (value, probe_summary) in enumerate(runs, start=1):
        write_probe(paths, USERS, n, value, probe_summary, record)
    record["ended_ts"] = 112.0
    write_json(paths.search_json, record)
    return paths


def test_capacity_block_from_files(tmp_path: Path) -> None:
    paths = users_search(tmp_path)
    assert read_json(paths.search_json)["search"] == asdict(USERS)
    found = capacity_block(paths)
    assert found is not None
    assert (found.over, found.unit, found.range, found.slo) == ("users", "users", (1, 16), SLO)
    assert (found.max_passing, found.min_failing, found.converged) == (3, 4, True)
    # at 4: TTFT 5 + 1 = 6, TPOT 1 + 3 = 4, errors 2 (the 7 cancelled do not count)
    assert found.limited_by == "ttft_ms"
    assert [(p.n, p.value, p.passed) for p in found.probes] == [
        (1, 1, True), (2, 2, True), (3, 4, False), (4, 3, True), (5, 3, True), (6, 4, False)]
    assert [p.label for p in found.probes][:3] == ["probe-01-users-1", "probe-02-users-2", "probe-03-users-4"]
    assert found.probes[2].why == "80.0 % met the SLO, below 90 %"
    # medians 50, 100, 142.5 (3), 135 (4): 4 is 5 % below 3's peak, not 10 %
    assert found.cliff is None
    assert found.wall_s == 12.0
    assert found.sentence == ("serves 3 users within TTFT ≤ 2.0 s, TPOT ≤ 100 ms for 90 % of requests in steady "
                                 "state; 4 users miss TTFT")


def test_capacity_block_of_a_stopped_rate_search(tmp_path: Path) -> None:
    """A probe whose summary is missing fails as not run; the search stopped before converging, no end time."""
    paths = VariantPaths.create(tmp_path, "v")
    record: dict[str, Any] = {"search": asdict(RATE), "slo": SLO, "probes": [], "started_ts": 100.0,
                              "ended_ts": None}
    write_probe(paths, RATE, 1, 1.0, summary(1.0, decode=40.0, kept_up=True), record)
    write_probe(paths, RATE, 2, 2.0, summary(0.99, decode=80.0, kept_up=True), record)
    write_probe(paths, RATE, 3, 4.0, None, record)
    found = capacity_block(paths)
    assert found is not None
    assert (found.unit, found.max_passing, found.min_failing) == ("req/s", 2.0, 4.0)
    assert found.converged is False and found.limited_by is None and found.wall_s is None
    assert found.probes[2].why == "the probe ended not_run" and found.probes[2].attainment is None
    assert found.sentence.startswith("serves 2 req/s within") and found.sentence.endswith(
        "4 req/s miss the SLO (the search stopped at its probe limit before the boundary was as close as asked)")


def test_no_search_no_block(tmp_path: Path) -> None:
    assert capacity_block(VariantPaths.create(tmp_path, "v")) is None
