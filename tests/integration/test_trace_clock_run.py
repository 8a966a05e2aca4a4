"""A trace on its own clock against the scripted reference server, checked against what the server logged.

The server writes when each request arrived (its truth file, by ``X-Request-Id``): a request's lateness is its
arrival against the trace's time for it, from one Locust process and from two workers. And a capacity search
over ``time_scale`` finds the speed the server's slots give by arithmetic.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from tests.conftest import reference_server
from tests.helpers import read_jsonl, tokenswarm_run

pytestmark = pytest.mark.integration


def write_trace(path: Path, n: int, gap_ms: int, input_tokens: int, output_tokens: int) -> str:
    """A Mooncake trace of ``n`` requests ``gap_ms`` apart, every prompt its own block."""
    path.write_text("".join(json.dumps({"timestamp": k * gap_ms, "input_length": input_tokens,
                                        "output_length": output_tokens, "hash_ids": [k]}) + "\n" for k in range(n)))
    return str(path)


def scenario(tmp_path: Path, url: str, users: int, trace: str, **variant: Any) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "server": {"launcher": "external", "url": url},
                                    "load": {"dataset": "trace", "users": users, "trace": {"path": trace}},
                                    "variants": [{"name": "v", **variant}]}))
    return path


def arrivals(folder: Path) -> dict[str, float]:
    with open(folder / "truth.csv", newline="") as f:
        return {row["request_id"]: float(row["ts"]) for row in csv.DictReader(f) if row["kind"] == "arrive"}


@pytest.mark.parametrize("workers", [0, 2])
def test_fifty_requests_a_second_arrive_within_5_ms_of_the_trace(tmp_path: Path, workers: int) -> None:
    """250 requests 20 ms apart (50 req/s), each answered in about 11 ms: the server's arrival time against the
    trace's time is p99 <= 5 ms, from one Locust process and from a master with two workers."""
    trace = write_trace(tmp_path / "trace.jsonl", 250, 20, 24, 4)
    with reference_server(tmp_path / "server", "--ttft-ms", "5", "--itl-ms", "2") as url:
        proc, run = tokenswarm_run(tmp_path, scenario(tmp_path, url, 32, trace),
                                   *(["--workers", str(workers)] if workers else []))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    records = read_jsonl(run / "v" / "requests.jsonl")
    arrived = arrivals(tmp_path / "server")
    late_ms = np.array([1000 * (arrived[r["request_id"]] - r["scheduled_ts"]) for r in records])
    assert len(records) == 250 and {r["status"] for r in records} == {"ok"}
    p99 = float(np.percentile(late_ms, 99))
    print(f"workers {workers}: arrival − trace time p50 {np.median(late_ms):.2f} ms, p99 {p99:.2f} ms, "
          f"max {late_ms.max():.2f} ms")
    assert p99 <= 5.0, sorted(late_ms)[-10:]
    summary = json.loads((run / "v" / "summary.json").read_text())
    assert summary["arrivals"]["mode"] == "trace" and summary["arrivals"]["unsent"] == 0
    assert summary["trace"]["arrivals_per_s"]["scheduled"][:4] == [50, 50, 50, 50]


def test_a_search_over_time_scale_finds_the_speed_the_slots_can_take(tmp_path: Path) -> None:
    """80 requests 40 ms apart (25 req/s) on 4 slots each held 200 ms (20 req/s): the trace fits up to 0.8× its
    speed; evenly spaced arrivals below that never queue, above it the queue only grows."""
    trace = write_trace(tmp_path / "trace.jsonl", 80, 40, 24, 16)
    with reference_server(tmp_path / "server", "--ttft-ms", "50", "--itl-ms", "10", "--slots", "4", "--queue") as url:
        proc, run = tokenswarm_run(tmp_path, scenario(
            tmp_path, url, 64, trace, slo={"ttft_ms": 150}, search={
                "over": "time_scale", "range": [0.4, 1.6], "precision": 0.15, "settle_s": 0.3, "confirm": False,
                "warmup_prompts": 0}), timeout_s=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    capacity = json.loads((run / "v" / "summary.json").read_text())["capacity"]
    assert capacity["over"] == "time_scale" and capacity["limited_by"] == "ttft_ms"
    assert 0.68 <= capacity["max_passing"] <= 0.82 < capacity["min_failing"] <= 0.92, capacity["sentence"]
    assert "0.8" in capacity["sentence"] or "0.7" in capacity["sentence"]
    probes = [json.loads((run / "v" / "steps" / p["label"] / "summary.json").read_text()) for p in capacity["probes"]]
    assert [p["arrivals"]["time_scale"] for p in probes] == [p["value"] for p in capacity["probes"]]
    assert all(p["arrivals"]["scheduled"] == 80 for p in probes)
