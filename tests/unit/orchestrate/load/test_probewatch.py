"""orchestrate/load/probewatch.py: a probe is stopped once its misses exceed (1 − attainment) × planned + users,
read from its records file as it grows (a line still being written counts only once it is whole)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrate.load.probewatch import ProbeWatch
from orchestrate.scenario.search import CANNOT_PASS

LIMITS = {"ttft_ms": 100.0, "tpot_ms": 20.0}


def line(status: str = "ok", ttft: float | None = 50.0, tpot: float | None = 10.0) -> str:
    record: dict[str, Any] = {"request_id": "r", "status": status, "ttft_ms": ttft, "tpot_ms": tpot, "e2e_ms": 500.0}
    return json.dumps(record) + "\n"


GOOD = [line(), line(ttft=100.0, tpot=20.0), line(tpot=None)]  # fast; at both limits; one output token
MISSES = [line("error"), line("cancelled", None, None), line(ttft=100.5), line(tpot=21.0), line(ttft=None),
          line(ttft=300.0, tpot=90.0), line("error")]


def append(path: Path, text: str) -> None:
    with path.open("a") as f:
        f.write(text)


def test_stops_once_misses_exceed_the_allowance_never_before(tmp_path: Path) -> None:
    """attainment 0.75 of 16 planned, 2 users: 0.25 × 16 + 2 = 6 misses allowed (exact in binary); the 7th stops."""
    path = tmp_path / "requests.jsonl"
    watch = ProbeWatch(path, LIMITS, attainment=0.75, planned=16, users=2)
    assert watch.allowed == 6.0
    assert watch.cannot_pass() is None and watch.seen == 0  # no file yet
    append(path, "".join(GOOD) + MISSES[0])
    assert watch.cannot_pass() is None and (watch.seen, watch.misses) == (4, 1)
    append(path, "".join(MISSES[1:5]) + "not json\n")
    assert watch.cannot_pass() is None and (watch.seen, watch.misses) == (8, 5)  # a garbled line is skipped
    torn = MISSES[5]
    append(path, torn[:20])  # the 6th miss, half written
    assert watch.cannot_pass() is None and (watch.seen, watch.misses) == (8, 5)
    append(path, torn[20:] + GOOD[0])
    assert watch.cannot_pass() is None and (watch.seen, watch.misses) == (10, 6)  # at the allowance: not over it
    append(path, MISSES[6][:-1])  # the 7th, its newline not yet written
    assert watch.cannot_pass() is None and watch.misses == 6
    append(path, "\n")
    assert watch.cannot_pass() == CANNOT_PASS and (watch.seen, watch.misses) == (11, 7)
    assert watch.cannot_pass() == CANNOT_PASS and watch.misses == 7  # read again: nothing counted twice


def test_good_records_never_stop_a_probe(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(GOOD * 10))
    watch = ProbeWatch(path, LIMITS, attainment=1.0, planned=30, users=0)
    assert watch.cannot_pass() is None and (watch.seen, watch.misses) == (30, 0)
    append(path, MISSES[0])
    assert watch.cannot_pass() == CANNOT_PASS  # attainment 1: one miss is already too many


def test_a_probe_that_can_still_pass_is_not_stopped_float_allowance(tmp_path: Path) -> None:
    """An open-loop probe (users 0) of 40 at attainment 0.9 may miss 4: 36 / 40 = 0.9 meets it."""
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(MISSES[:4]))
    watch = ProbeWatch(path, LIMITS, attainment=0.9, planned=40, users=0)
    assert watch.cannot_pass() is None
