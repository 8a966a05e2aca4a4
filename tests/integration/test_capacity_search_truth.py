"""Steady state and the capacity search against the reference server, checked against its logged truth.

``serve-synthetic --slots N --queue`` serves at most N streams at once; a request beyond them waits
for a free slot, and its timeline (``--ttft-ms``, then ``--itl-ms`` per token) starts then. So with
``max_tokens`` 16 a stream holds its slot for 50 + 15 × 10 = 200 ms, N users all see a TTFT of 50 ms,
and N + 1 users keep one request waiting 200 ms more at every turn: under a TTFT limit of 150 ms the
capacity is exactly N users. The truth file names every request (``X-Request-Id``) with when it
arrived, got a slot, and when each chunk and its end were written.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.browser import page_figures
from tests.conftest import reference_server
from tests.helpers import assert_report_rebuilds_every_key, read_jsonl, tokenswarm_run, write_scenario

pytestmark = pytest.mark.integration

TIMING = ("--ttft-ms", "50", "--itl-ms", "10")
LOAD = {"dataset": "synthetic:3000", "max_tokens": 16}


def truth(folder: Path) -> dict[str, dict[str, Any]]:
    """Per request id: ``arrive``, ``start`` (slot), ``first`` (first content chunk) and ``end`` times."""
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    with open(folder / "truth.csv", newline="") as f:
        for row in csv.DictReader(f):
            kind, ts, mine = row["kind"], float(row["ts"]), out[row["request_id"]]
            if kind == "content":
                mine["first"] = min(ts, mine.get("first", ts))
            elif kind in ("arrive", "start", "end"):
                mine[kind] = ts
    return out


def window(paths: Path, summary: dict[str, Any]) -> tuple[float, float, list[dict[str, Any]]]:
    """The steady-state window, wall clock, and the records sent inside it."""
    records = read_jsonl(paths / "requests.jsonl")
    first = min(r["send_ts"] for r in records)
    steady = summary["steady_state"]
    start, end = first + steady["start_s"], first + steady["end_s"]
    return start, end, [r for r in records if start <= r["send_ts"] < end]


def nearest_rank(values: list[float], p: int) -> float:
    ordered = sorted(values)
    return ordered[min(int(np.ceil(p / 100 * len(ordered))) - 1, len(ordered) - 1)]


def capacity_scenario(tmp_path: Path, url: str, **search: Any) -> Path:
    return write_scenario(tmp_path, server={"launcher": "external", "url": url}, load=LOAD,
                          variants=[{"name": "v", "slo": {"ttft_ms": 150},
                                     "search": {"over": "users", "range": [3, 6], "settle_s": 0.3, **search}}])


def test_the_search_finds_the_slots_and_each_probes_ttft_is_the_servers(tmp_path: Path) -> None:
    """4 slots: capacity 4 users, 5 miss TTFT; every probe's steady-state TTFT is what the server logged."""
    with reference_server(tmp_path / "server", *TIMING, "--slots", "4", "--queue") as url:
        proc, run = tokenswarm_run(tmp_path, capacity_scenario(tmp_path, url), timeout_s=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    variant = run / "v"
    capacity = json.loads((variant / "summary.json").read_text())["capacity"]
    assert (capacity["max_passing"], capacity["min_failing"], capacity["limited_by"]) == (4, 5, "ttft_ms")
    assert capacity["converged"] and capacity["sentence"].startswith("serves 4 users within TTFT ≤ 150 ms")
    probes = capacity["probes"]
    assert [p["value"] for p in probes] == [4, 5, 4, 5]  # bisected in log space, the boundary confirmed
    assert [p["passed"] for p in probes] == [True, False, True, False]
    assert "serves 4 users" in (variant / "summary.md").read_text() and (variant / "capacity.png").is_file()
    server = truth(tmp_path / "server")
    for probe in probes:
        folder = variant / "steps" / probe["label"]
        summary = json.loads((folder / "summary.json").read_text())
        if not summary["steady_state"]["found"]:
            assert probe["stopped_early"], probe
            continue
        _, _, inside = window(folder, summary)
        logged = [1000 * (server[r["request_id"]]["first"] - server[r["request_id"]]["arrive"])
                  for r in inside if r["status"] == "ok"]
        measured = summary["steady_state"]["ttft_ms"]
        for p, within_ms in ((50, 3.0), (99, 10.0)):  # the client's clock adds the network and its own turn
            assert abs(measured[f"p{p}"] - nearest_rank(logged, p)) < within_ms, (probe["label"], p, measured, logged)
    waited = [r for r in server.values() if "start" in r and r["start"] - r["arrive"] > 0.1]
    assert waited, "requests beyond the slots waited for one"


def test_tokenswarm_capacity_finds_twelve_slots_and_report_rebuilds_it(tmp_path: Path) -> None:
    """The command without a scenario file; then ``tokenswarm report`` gives the same blocks from the files."""
    with reference_server(tmp_path / "server", *TIMING, "--slots", "12", "--queue") as url:
        proc = subprocess.run([sys.executable, "-m", "orchestrate.cli", "capacity", "--url", url, "--slo",
                               "ttft_ms=150", "--range", "11,13", "--dataset", "synthetic:3000", "--max-tokens", "16",
                               "--results-dir", str(tmp_path / "results")],
                              capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "capacity: serves 12 users within TTFT ≤ 150 ms" in proc.stdout
    run = next((tmp_path / "results").iterdir())
    variant = run / "default"
    before = json.loads((variant / "summary.json").read_text())
    assert (before["capacity"]["max_passing"], before["capacity"]["min_failing"]) == (12, 13)
    assert [p["value"] for p in before["capacity"]["probes"]] == [12, 13, 12, 13]
    probe_before = {p["label"]: json.loads((variant / "steps" / p["label"] / "summary.json").read_text())
                    for p in before["capacity"]["probes"]}
    copy = tmp_path / "copy"
    assert len(assert_report_rebuilds_every_key(run, copy)) == 5  # the variant and its 4 probes, every key kept
    after = json.loads((copy / "default" / "summary.json").read_text())
    assert after["capacity"] == before["capacity"]
    drawn = page_figures(copy / "report.html")  # report.html rebuilt: the probes against the load
    assert [t["x"] for t in drawn["capacity-default-0"]["data"][:1]] == [[12, 13, 12, 13]]
    assert after["steady_state"] == before["steady_state"]
    for label, summary in probe_before.items():
        again = json.loads((copy / "default" / "steps" / label / "summary.json").read_text())
        assert again["steady_state"] == summary["steady_state"] and again["step"] == summary["step"]


def test_32_users_and_1000_prompts_have_a_window_without_the_ramp_and_the_drain(tmp_path: Path) -> None:
    """The window lies where the server itself had 31 or more of 32 requests in flight, and its decode
    tok/s is the tokens the server wrote inside it."""
    with reference_server(tmp_path / "server", *TIMING) as url:
        scenario = write_scenario(tmp_path, server={"launcher": "external", "url": url},
                                  load={**LOAD, "users": 32, "num_prompts": 1000})
        proc, run = tokenswarm_run(tmp_path, scenario, timeout_s=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((run / "v" / "summary.json").read_text())
    steady = summary["steady_state"]
    assert steady["found"] and steady["in_flight"]["threshold"] == 31
    start, end, inside = window(run / "v", summary)
    assert len(inside) == steady["requests"] and steady["share_of_requests"] > 0.9
    server = truth(tmp_path / "server")
    events = sorted([(r["arrive"], 1) for r in server.values()] + [(r["end"], -1) for r in server.values()])
    times = np.array([t for t, _ in events])
    level = np.cumsum([step for _, step in events])
    at_31 = times[np.flatnonzero(level >= 31)]
    ramp_done, drain_begins = at_31[0], times[np.flatnonzero(level >= 31)[-1] + 1]
    # the client sees the server's level change a network turn and an event-loop turn late (a few ms; on a
    # shared 2-core VM, once in a while 10-20 ms)
    assert start >= ramp_done - 0.025, "the window starts after the server had 31 in flight"
    assert end <= drain_begins + 0.025, "and ends before the server's drain"
    assert end - start > 0.8 * (times[-1] - times[0])
    written = sum(1 for row in csv.DictReader(open(tmp_path / "server" / "truth.csv"))
                  if row["kind"] == "content" and start <= float(row["ts"]) < end)
    assert steady["decode_tok_s"] == pytest.approx(written / (end - start), rel=0.02)
    assert summary["duration_s"] > steady["duration_s"]


def test_too_few_prompts_for_the_users_say_so_and_how_many_would_do(tmp_path: Path) -> None:
    with reference_server(tmp_path / "server", *TIMING) as url:
        scenario = write_scenario(tmp_path, server={"launcher": "external", "url": url},
                                  load={**LOAD, "users": 16, "num_prompts": 24})
        proc, run = tokenswarm_run(tmp_path, scenario)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steady = json.loads((run / "v" / "summary.json").read_text())["steady_state"]
    assert not steady["found"] and "a window needs 32 (2 per user)" in steady["reason"]
    assert 32 < steady["prompts_needed"] < 56
    assert "No steady-state window" in (run / "v" / "summary.md").read_text()
    assert "steady state: none" in proc.stdout


def test_a_rate_search_finds_the_request_rate_the_slots_can_take(tmp_path: Path) -> None:
    """4 slots each held 200 ms take 20 requests/s; evenly spaced arrivals below that never queue, above it
    the queue only grows. The search over rate (an open loop, 64 in flight at most) brackets 20 req/s."""
    with reference_server(tmp_path / "server", *TIMING, "--slots", "4", "--queue") as url:
        scenario = write_scenario(tmp_path, server={"launcher": "external", "url": url},
                                  load={**LOAD, "users": 64, "rate": 1, "arrival": "constant"},
                                  variants=[{"name": "v", "slo": {"ttft_ms": 150},
                                             "search": {"over": "rate", "range": [10, 30], "precision": 0.15,
                                                        "probe_s": 3, "settle_s": 0.3, "confirm": False}}])
        proc, run = tokenswarm_run(tmp_path, scenario, timeout_s=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    capacity = json.loads((run / "v" / "summary.json").read_text())["capacity"]
    assert capacity["unit"] == "req/s" and capacity["limited_by"] == "ttft_ms"
    assert 17 <= capacity["max_passing"] <= 20.5 < capacity["min_failing"] <= 23, capacity["sentence"]
    first = json.loads((run / "v" / "steps" / capacity["probes"][0]["label"] / "summary.json").read_text())
    assert first["steady_state"]["rule"] == "requests sent within 5 % of the arrival schedule"
    assert first["steady_state"]["kept_up"] and first["arrivals"]["rate_asked"] == capacity["probes"][0]["value"]
