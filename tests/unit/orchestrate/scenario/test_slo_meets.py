"""orchestrate/scenario/slo.py ``meets_slo``: the record-by-record rule a probe's early stop uses must be
goodput's rule (orchestrate/report/aggregates/goodput.py), else a probe could be stopped that the report
would pass, or the other way round."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from orchestrate.report.aggregates.goodput import goodput
from orchestrate.scenario.slo import SLO_KEYS, meets_slo

SLO = {"ttft_ms": 200.0, "tpot_ms": 50.0, "e2e_ms": 1000.0}


def rec(status: str = "ok", ttft: float | None = 100.0, tpot: float | None = 20.0,
        e2e: float | None = 500.0) -> dict[str, Any]:
    return {"status": status, "ttft_ms": ttft, "tpot_ms": tpot, "e2e_ms": e2e, "output_tokens": 10}


CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("fast", rec(), True),
    ("at every limit", rec(ttft=200.0, tpot=50.0, e2e=1000.0), True),
    ("no TPOT (one token)", rec(tpot=None), True),
    ("no TTFT", rec(ttft=None), False),
    ("no E2E", rec(e2e=None), False),
    ("TTFT just over", rec(ttft=200.001), False),
    ("TPOT over", rec(tpot=51.0), False),
    ("E2E over", rec(e2e=1000.5), False),
    ("over all three", rec(ttft=900.0, tpot=90.0, e2e=5000.0), False),
    ("error, though fast", rec("error"), False),
    ("cancelled", rec("cancelled", None, None, None), False),
    ("cancelled after its first token", rec("cancelled", 50.0, None, None), False),
]


def records() -> list[dict[str, Any]]:
    return [r for _, r, _ in CASES]


@pytest.mark.parametrize(("name", "record", "good"), CASES, ids=[c[0] for c in CASES])
def test_each_record_by_both_rules(name: str, record: dict[str, Any], good: bool) -> None:
    """Each verdict by hand, by ``meets_slo``, and by goodput over a frame of that one record."""
    assert meets_slo(record, SLO) is good
    block = goodput(pd.DataFrame([record]), SLO, 1.0)
    assert block is not None and block.requests_meeting == int(good)


def test_counts_agree_with_goodput_over_the_whole_frame() -> None:
    rows = records()
    block = goodput(pd.DataFrame(rows), SLO, 1.0)
    assert block is not None
    assert block.requests_meeting == sum(meets_slo(r, SLO) for r in rows) == 3
    missed = block.missed_by
    for key in SLO_KEYS:  # a completed request misses a limit exactly when it fails that limit alone
        assert getattr(missed, key) == sum(r["status"] == "ok" and not meets_slo(r, {key: SLO[key]}) for r in rows), key
    assert (missed.ttft_ms, missed.tpot_ms, missed.e2e_ms) == (3, 2, 3)
    assert missed.error == 1 and missed.cancelled == 2
    assert not any(meets_slo(r, SLO) for r in rows if r["status"] != "ok")


def test_a_subset_of_limits_and_none() -> None:
    """Only the limits set are judged; with none, every completed request is good by both."""
    rows = records()
    for limits in ({"tpot_ms": 50.0}, {"e2e_ms": 1000.0}, {"ttft_ms": 200.0, "e2e_ms": 1000.0}):
        block = goodput(pd.DataFrame(rows), limits, 1.0)
        assert block is not None and block.requests_meeting == sum(meets_slo(r, limits) for r in rows), limits
    assert sum(meets_slo(r, {}) for r in rows) == 9  # the 9 with status ok
