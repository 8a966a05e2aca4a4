"""The reference server (``tokenswarm serve-synthetic``): timing as asked, llama.cpp's stream shape, pre-flight."""

from __future__ import annotations

import csv
import json
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.conftest import reference_server
from tests.helpers import read_jsonl, tokenswarm_run, write_scenario

pytestmark = pytest.mark.integration


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with reference_server(tmp_path, "--ttft-ms", "50", "--itl-ms", "10") as url:
        yield url


def stream_times(url: str, rid: str, max_tokens: int) -> tuple[list[float], list[bytes]]:
    """Content-chunk arrival times (ms after send) and every ``data:`` line, over a raw socket."""
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps({"messages": [{"role": "user", "content": f"hello [req:{rid}] world"}],
                       "max_tokens": max_tokens, "stream": True,
                       "stream_options": {"include_usage": True}}).encode()
    with socket.create_connection((host, int(port))) as sock:
        f = sock.makefile("rb")
        t0 = time.perf_counter()
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        times, events = [], []
        while True:
            line = f.readline()
            if not line or line == b"0\r\n":
                break
            if line.startswith(b"data: "):
                events.append(line)
                if b'"content":"' in line:
                    times.append((time.perf_counter() - t0) * 1000.0)
    return times, events


def test_idle_timing_is_what_was_asked(server: str, tmp_path: Path) -> None:
    results: dict[str, tuple[list[float], list[bytes]]] = {}
    threads = [threading.Thread(target=lambda r=rid: results.__setitem__(r, stream_times(server, r, 20)))
               for rid in ("a", "b", "c", "d")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    ttfts = [times[0] for times, _ in results.values()]
    gaps = [b - a for times, _ in results.values() for a, b in zip(times, times[1:])]
    assert all(len(times) == 20 for times, _ in results.values())
    assert all(49.0 <= t <= 56.0 for t in ttfts), ttfts
    assert abs(statistics.median(gaps) - 10.0) < 1.0, gaps
    assert max(abs(g - 10.0) for g in gaps) < 8.0, gaps
    events = results["a"][1]
    assert b'"role":"assistant"' in events[0] and events[-1] == b"data: [DONE]\n"
    usage = json.loads(events[-2][6:])
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 20
    assert usage["timings"]["predicted_n"] == 20 and usage["timings"]["prompt_n"] == 3
    # one health check keeps the connection alive, and the truth is flushed on exit
    with requests.Session() as s:
        assert s.get(f"{server}/health").json() == {"status": "ok"}
        assert s.post(f"{server}/tokenize", json={"content": "a b c"}).json()["tokens"] == [0, 1, 2]
        plain = s.post(f"{server}/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}],
                                                              "max_tokens": 3}).json()
        assert plain["choices"][0]["message"]["content"] == " w0 w1 w2"


def test_truth_file_has_one_line_per_chunk(tmp_path: Path) -> None:
    with reference_server(tmp_path, "--ttft-ms", "5", "--itl-ms", "1", "--tokens-per-chunk", "3",
                          "--jitter-ms", "0.5") as url:
        times, _ = stream_times(url, "r1", 10)
    assert len(times) == 4  # 10 tokens in chunks of 3; the server stopped: the truth is flushed
    rows = list(csv.DictReader(open(tmp_path / "truth.csv")))
    kinds = Counter(r["kind"] for r in rows if r["request_id"] == "r1")
    assert kinds == {"arrive": 1, "role": 1, "content": 4, "end": 1}
    sent = [float(r["ts"]) for r in rows if r["kind"] == "content"]
    assert sent == sorted(sent)


def test_tokenswarm_run_against_it(server: str, tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, load={"users": 4, "num_prompts": 8, "max_tokens": 5})
    proc, run = tokenswarm_run(tmp_path, scenario, "--url", server)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads(next(run.glob("*/summary.json")).read_text())
    assert summary["status"] == "completed"


def served(log: Path) -> dict[str, int]:
    """``serve-synthetic: 30 requests, 4 connections, 300 events in 290 writes`` as numbers."""
    numbers = re.findall(r"(\d+) (requests|connections|events|writes)", log.read_text())
    return {name: int(n) for n, name in numbers}


@pytest.mark.parametrize("close_after", [0, 1])
def test_connections_are_reused_and_reopened_when_the_server_closes_them(tmp_path: Path, close_after: int) -> None:
    """Streams read to their end leave the connection reusable; a server that closes it without
    warning after every response (as llama.cpp may) costs a reconnect, never an error."""
    scenario = write_scenario(tmp_path, load={"users": 4, "num_prompts": 40, "max_tokens": 5})
    with reference_server(tmp_path / "server", "--ttft-ms", "2", "--itl-ms", "1",
                          "--close-after", str(close_after)) as url:
        proc, run = tokenswarm_run(tmp_path, scenario, "--url", url)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads(next(run.glob("*/summary.json")).read_text())
    assert summary["requests"]["completed"] == 40 and summary["requests"]["errors"] == 0, summary["requests"]
    counts = served(tmp_path / "server" / "server.log")
    assert counts["requests"] >= 40
    records = read_jsonl(next(run.glob("*/requests.jsonl")))
    opened = [r for r in records if r["connect_ms"] is not None]
    assert summary["connections"]["opened"] == len(opened) and all(r["connect_ms"] > 0 for r in opened)
    assert summary["connections"]["reconnects"] == sum(r["reconnect"] for r in records)
    # every request is named in the server's log by the record's own id (X-Request-Id)
    arrived = {r["request_id"] for r in csv.DictReader(open(tmp_path / "server" / "truth.csv")) if r["kind"] == "arrive"}
    assert {r["request_id"] for r in records} <= arrived
    if close_after:
        assert counts["connections"] >= 40, counts
        # each reopened connection is opened before the request's clock: every request after a user's first
        assert summary["connections"]["reconnects"] == 40 - 4 and len(opened) == 40, summary["connections"]
    else:
        assert summary["connections"] == {**summary["connections"], "opened": 4, "reconnects": 0}
        assert counts["connections"] <= 4 + 6, counts  # the users' 4, the pre-flight's own, the start's probe, the liveness watch's


def test_events_already_due_go_out_in_one_write(tmp_path: Path) -> None:
    with reference_server(tmp_path, "--ttft-ms", "1", "--itl-ms", "0") as url:
        times, events = stream_times(url, "burst", 200)
    assert len(times) == 200 and events[-1] == b"data: [DONE]\n"
    counts = served(tmp_path / "server.log")
    assert counts["events"] == 202 and counts["writes"] <= 3, counts  # role, the 200 at once, the end
    rows = [r for r in csv.DictReader(open(tmp_path / "truth.csv")) if r["kind"] == "content"]
    assert len(rows) == 200 and len({r["ts"] for r in rows}) == 1
