"""orchestrate/load/precisionwatch.py: a run stopped once every ``until`` target holds, judged from its records (by
``report/aggregates/precision.py:precision_now``, as the plan wires it)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from orchestrate.load.precisionwatch import PrecisionWatch
from orchestrate.report.aggregates.precision import precision_now
from orchestrate.results import VariantPaths
from orchestrate.scenario.spec import LoadSpec
from orchestrate.scenario.until import UNTIL


def watch(paths: VariantPaths, until: dict[str, float], every_s: float = 0.0) -> PrecisionWatch:
    load = LoadSpec(users=4, until=until)
    return PrecisionWatch(paths, until, lambda: precision_now(paths, load, None), every_s=every_s)


def closed_loop(paths: VariantPaths, users: int, rounds: int) -> None:
    """``users`` users sending 100 ms requests back to back for ``rounds`` rounds, ending now; TTFT spread over 40–136 ms."""
    start = time.time() - rounds * 0.1
    with paths.records.open("w") as f:
        for r in range(rounds):
            for u in range(users):
                f.write(json.dumps({"send_ts": start + r * 0.1 + u * 1e-4, "status": "ok", "ttft_ms": 40.0 + (4 * r + u) % 97,
                                    "tpot_ms": 20.0, "e2e_ms": 100.0, "prompt_tokens": 10, "output_tokens": 4,
                                    "tokens_per_chunk": 1.0, "chunk_offsets_ms": [40.0, 60.0, 80.0, 99.0]}) + "\n")


def test_it_stops_the_run_once_every_target_holds_and_says_when(tmp_path: Path) -> None:
    paths = VariantPaths.create(tmp_path, "v")
    closed_loop(paths, users=4, rounds=200)
    loose = watch(paths, {"decode_tok_s": 0.05, "ttft_ms.p50": 0.1})
    assert loose.reached() == UNTIL
    written = json.loads(paths.until_json.read_text())
    assert written["stopped"] is True and written["checks"] == 1 and set(written["held_at_s"]) == {
        "decode_tok_s", "ttft_ms.p50"}
    strict = watch(paths, {"ttft_ms.p99": 0.0001})
    assert strict.reached() is None and json.loads(paths.until_json.read_text())["stopped"] is False


def test_between_checks_it_says_nothing_and_without_records_nothing_holds(tmp_path: Path) -> None:
    paths = VariantPaths.create(tmp_path, "v")
    later = watch(paths, {"decode_tok_s": 0.5}, every_s=3600.0)
    closed_loop(paths, users=4, rounds=200)
    assert later.reached() is None and later.checks == 0  # the first check is an hour away
    paths.records.write_text("")
    assert watch(paths, {"decode_tok_s": 0.5}).reached() is None
