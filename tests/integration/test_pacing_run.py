"""Open-loop arrivals and ramp stages, end to end: ``tokenswarm run`` against the scripted reference server.

The server answers every request with its first token 100 ms after it arrived and one token every
20 ms after that; 20 tokens make each request take about 0.48 s, so U users can send about 2·U
requests a second. That is what makes late and unsent requests, and the users of each stage, exact.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import reference_server
from tests.helpers import read_jsonl, tokenswarm_run

pytestmark = pytest.mark.integration

REQUEST_S = 0.1 + 19 * 0.02


@pytest.fixture
def refserver(tmp_path: Path) -> Iterator[str]:
    with reference_server(tmp_path / "server", "--ttft-ms", "100", "--itl-ms", "20") as url:
        yield url


def scenario(tmp_path: Path, **load: Any) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"name": "modes", "load": {
        "dataset": "synthetic:400", "max_tokens": 20, "sampling": {"fixed_output_tokens": 20}, **load}}))
    return path


def run(tmp_path: Path, url: str, **load: Any) -> tuple[dict[str, Any], list[dict[str, Any]], Path]:
    proc, run_dir = tokenswarm_run(tmp_path, scenario(tmp_path, **load), "--url", url)
    variant = run_dir / "default"
    assert proc.returncode == 0, proc.stdout + proc.stderr + (variant / "locust.log").read_text()[-3000:]
    return json.loads((variant / "summary.json").read_text()), read_jsonl(variant / "requests.jsonl"), variant


def peak_in_flight(records: list[dict[str, Any]]) -> int:
    """The most requests in flight at once (one cancelled by the stop was in flight to the end)."""
    ends = [r["send_ts"] + r["e2e_ms"] / 1000 if r["e2e_ms"] is not None else float("inf") for r in records]
    events = sorted([(r["send_ts"], 1) for r in records] + [(end, -1) for end in ends])
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


def test_a_rate_the_cap_cannot_keep_up_with_is_reported_late_and_unsent(refserver: str, tmp_path: Path) -> None:
    """40 req/s asked of 2 users that manage about 4: the schedule runs ahead of the sends."""
    summary, records, variant = run(tmp_path, refserver, rate=40, users=2, num_prompts=30, max_seconds=2)
    arr = summary["arrivals"]
    assert arr["scheduled"] == 30 and arr["sent"] == len(records) and arr["sent"] + arr["unsent"] == 30, arr
    assert arr["unsent"] >= 12 and arr["unsent_overdue"] == arr["unsent"]  # the whole schedule was due in 0.75 s
    assert arr["late"] > 0 and arr["cap_fell_behind"] and summary["stopped_by"] == "time_cap"
    assert peak_in_flight(records) <= 2
    assert all(r["scheduled_ts"] is not None and r["send_delay_ms"] >= 0 for r in records)
    delays = [r["send_delay_ms"] for r in sorted(records, key=lambda r: r["scheduled_ts"])]
    assert delays[-1] > delays[1] + 2 * REQUEST_S * 1000 * 0.8, delays  # each round of 2 waits one reply longer
    ok = [r for r in records if r["status"] == "ok"]
    assert all(r["ttft_from_schedule_ms"] == pytest.approx(r["send_delay_ms"] + r["ttft_ms"]) for r in ok)
    # the last completed request waited at least one reply past its schedule (whether a 4th round of
    # 2 still ends inside the 2 s cap is a matter of milliseconds: that failed this bound at +500 ms)
    assert arr["latency_from_schedule_ms"]["e2e"]["max"] > summary["latency_ms"]["e2e"]["max"] + 0.8 * REQUEST_S * 1000
    assert arr["rate_achieved"] < 8 and arr["rate_scheduled"] == pytest.approx(40, rel=0.5)
    md = (variant / "summary.md").read_text()
    assert "the concurrency cap of 2 could not keep up with 40.0 req/s" in md
    assert f"{arr['late']} late (> 10 ms), {arr['unsent']} unsent" in md


def test_a_comfortable_rate_is_kept(refserver: str, tmp_path: Path) -> None:
    summary, records, _ = run(tmp_path, refserver, rate=8, arrival="constant", users=8, num_prompts=16, late_ms=50)
    arr = summary["arrivals"]
    assert (arr["scheduled"], arr["sent"], arr["unsent"]) == (16, 16, 0), arr
    assert arr["late_share"] <= 0.1 and not summary["requests"]["errors"], arr
    assert arr["rate_achieved"] == pytest.approx(8.0, rel=0.1) and arr["rate_scheduled"] == pytest.approx(8.0)
    assert arr["send_delay_ms"]["p50"] < 20, arr["send_delay_ms"]
    assert 2 <= peak_in_flight(records) <= 6  # about 8/s × 0.48 s in flight, never the cap
    assert summary["stopped_by"] == "num_prompts" and "stages" not in summary


def test_stages_ramp_the_users(refserver: str, tmp_path: Path) -> None:
    """1 user for 3 s, then 4 users for 3 s; plenty of prompts, so the stages end the run."""
    summary, records, variant = run(tmp_path, refserver, num_prompts=200,
                                    stages=[{"duration_s": 3, "users": 1}, {"duration_s": 3, "users": 4}])
    first, second = summary["stages"]
    assert (first["users"], second["users"]) == (1, 4) and first["reached"] and second["reached"]
    assert first["peak_in_flight"] == 1 and second["peak_in_flight"] == 4, summary["stages"]
    assert 3 <= first["requests"] <= 9 and second["requests"] >= 2.5 * first["requests"], summary["stages"]
    assert first["requests"] + second["requests"] == len(records)
    assert second["decode_tok_s"] > 2.5 * first["decode_tok_s"] and first["ttft_p50_ms"] == pytest.approx(100, abs=30)
    assert 2.9 <= second["started_s"] <= 4.5 and summary["stopped_by"] == "stages_end"
    assert "arrivals" not in summary and all(r["scheduled_ts"] is None for r in records)
    with (variant / "locust_stats_history.csv").open() as f:
        users = {int(row["User Count"]) for row in csv.DictReader(f)}
    assert {1, 4} <= users, users  # Locust's own view of the ramp
    assert "| 2 | 4 | 3 s |" in (variant / "summary.md").read_text()
