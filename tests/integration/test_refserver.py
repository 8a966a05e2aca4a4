"""The reference server (``tokenswarm serve-synthetic``): timing as asked, llama.cpp's stream shape, pre-flight;
the other dialects (vLLM, OpenAI), reasoning, EOS before max_tokens and cached prompt tokens; started by the
process launcher in llama-server's place, with a cost in speed and memory per slot."""

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
from typing import Any

import pytest
import requests

from orchestrate.errors import ServerExitedError
from orchestrate.scenario.spec import ServerSpec
from orchestrate.server.launchers.process import ProcessLauncher
from orchestrate.tools.refserver_timing import Timing
from tests.conftest import reference_binary, reference_server
from tests.fixtures.refserver_thread import refserver_thread
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


# -- dialects, reasoning, EOS, cached tokens -----------------------------------------------------

REASONING_KEY = {"llama.cpp": "reasoning_content", "vllm": "reasoning", "openai": None}
LLAMA_CPP_ONLY = [("GET", "/props", None), ("GET", "/slots", None), ("POST", "/tokenize", {"content": "a b"}),
                  ("POST", "/apply-template", {"messages": [{"role": "user", "content": "hi"}]})]


def sse(url: str, payload: dict[str, Any]) -> list[tuple[float, Any]]:
    """Every ``data:`` event of a streamed chat request over a raw socket: (ms after sending, parsed JSON or
    ``"[DONE]"``)."""
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps({"messages": [{"role": "user", "content": "one two three four"}], "stream": True,
                       **payload}).encode()
    events: list[tuple[float, Any]] = []
    with socket.create_connection((host, int(port))) as sock:
        f = sock.makefile("rb")
        t0 = time.perf_counter()
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                     % (len(body), body))
        while (line := f.readline()) and line != b"0\r\n":
            if line.startswith(b"data: "):
                data = line[6:].strip()
                ms = (time.perf_counter() - t0) * 1000.0
                events.append((ms, "[DONE]" if data == b"[DONE]" else json.loads(data)))
    return events


def deltas(events: list[tuple[float, Any]]) -> list[tuple[float, dict[str, Any]]]:
    """The (arrival, delta) of every chunk that carries a choice's delta, the role chunk left out."""
    return [(ms, e["choices"][0]["delta"]) for ms, e in events
            if e != "[DONE]" and e["choices"] and "role" not in e["choices"][0]["delta"]
            and e["choices"][0]["delta"]]


@pytest.mark.parametrize("dialect", ["llama.cpp", "vllm", "openai"])
def test_each_dialect_streams_reasoning_usage_and_endpoints_its_way(tmp_path: Path, dialect: str) -> None:
    """Reasoning in chunks of its own under the dialect's key (none in OpenAI's, whose hidden reasoning still
    takes its time), the dialect's usage (cached prompt tokens where it puts them; timings only from llama.cpp),
    the llama.cpp-only endpoints 404 elsewhere, and the truth's ``reasoning`` rows."""
    ttft, itl, n_reasoning = 10.0, 4.0, 5
    timing = Timing(ttft_ms=ttft, itl_ms=itl, reasoning_tokens=n_reasoning, cached_tokens=2, dialect=dialect)
    with refserver_thread(timing, tmp_path / "truth.csv") as ref:
        events = sse(ref.url, {"max_tokens": 8, "stream_options": {"include_usage": True}})
        bare = sse(ref.url, {"max_tokens": 2})  # no include_usage
        with requests.Session() as s:
            plain = s.post(f"{ref.url}/v1/chat/completions", headers={"X-Request-Id": "plain"}, json={
                "messages": [{"role": "user", "content": "one two three four"}], "max_tokens": 8}).json()
            assert s.get(f"{ref.url}/health").json() == {"status": "ok"}
            assert s.get(f"{ref.url}/v1/models").json()["data"][0]["id"] == "synthetic"
            codes = {path: s.request(method, f"{ref.url}{path}", json=body).status_code
                     for method, path, body in LLAMA_CPP_ONLY}
    key = REASONING_KEY[dialect]
    chunks = deltas(events)
    assert all(len(d) == 1 for _, d in chunks), chunks  # reasoning and content never share a chunk
    reasoning = [d[key] for _, d in chunks if key in d] if key else []
    content = [d["content"] for _, d in chunks if "content" in d]
    assert reasoning == ([" r0", " r1", " r2", " r3", " r4"] if key else [])
    assert content == [" w0", " w1", " w2"]
    assert not any(k in d for _, d in chunks for k in ("reasoning_content", "reasoning") if k != key)
    first_content_ms = next(ms for ms, d in chunks if "content" in d)
    assert first_content_ms >= ttft + n_reasoning * itl, first_content_ms  # hidden or not, reasoning takes its time
    assert events[-1][1] == "[DONE]" and events[-2][1]["choices"] == []
    finish = events[-3][1]["choices"][0]
    assert finish["finish_reason"] == "length" and finish["delta"] == {}
    usage, timings = events[-2][1]["usage"], events[-2][1].get("timings")
    whole = {"prompt_tokens": 4, "completion_tokens": 8, "total_tokens": 12}
    assert not any("timings" in e for _, e in events if dialect != "llama.cpp" and e != "[DONE]")
    if dialect == "llama.cpp":
        assert usage == whole  # cached tokens: in timings; no reasoning count
        assert (timings["cache_n"], timings["prompt_n"], timings["predicted_n"]) == (2, 2, 8)
        assert "usage" in bare[-2][1] and "timings" in bare[-2][1]  # on the finish chunk when not asked
    elif dialect == "vllm":
        assert usage == {**whole, "prompt_tokens_details": {"cached_tokens": 2}} and timings is None
        assert not any("usage" in e for _, e in bare if e != "[DONE]")  # only when asked
    else:
        assert usage == {**whole, "prompt_tokens_details": {"cached_tokens": 2},
                         "completion_tokens_details": {"reasoning_tokens": 5}} and timings is None
        assert not any("usage" in e for _, e in bare if e != "[DONE]")
    message = plain["choices"][0]["message"]
    assert message["content"] == " w0 w1 w2" and plain["choices"][0]["finish_reason"] == "length"
    assert {k: message[k] for k in message if k not in ("role", "content")} == (
        {key: " r0 r1 r2 r3 r4"} if key else {})
    assert plain["usage"] == usage and ("timings" in plain) == (dialect == "llama.cpp")
    assert codes == {path: 200 if dialect == "llama.cpp" else 404 for _, path, _ in LLAMA_CPP_ONLY}
    rows = list(csv.DictReader(open(tmp_path / "truth.csv")))
    mine = [r for r in rows if r["request_id"] == "s1"]
    assert Counter(r["kind"] for r in mine) == {"arrive": 1, "role": 1, "content": 3, "end": 1,
                                                 **({"reasoning": 5} if key else {})}
    arrive = float(mine[0]["scheduled_ts"])
    first = next(r for r in mine if r["kind"] == "content")
    assert float(first["scheduled_ts"]) - arrive == pytest.approx((ttft + n_reasoning * itl) / 1000.0, abs=1e-5)
    assert float(first["ts"]) >= float(first["scheduled_ts"]) - 0.001
    plain_rows = [r for r in rows if r["request_id"] == "plain"]
    assert [r["kind"] for r in plain_rows] == ["arrive", "end"]
    assert float(plain_rows[1]["ts"]) - float(plain_rows[0]["ts"]) >= (ttft + 7 * itl) / 1000.0 - 0.001


@pytest.mark.parametrize("honour", [True, False])
def test_eos_after_stops_early_unless_ignore_eos_is_asked_and_honoured(honour: bool) -> None:
    timing = Timing(ttft_ms=1.0, itl_ms=0.5, eos_after=3, honour_ignore_eos=honour, dialect="vllm")

    def reply(url: str, stream: bool, max_tokens: int, **extra: Any) -> tuple[int, str, int]:
        """(content chunks or words, finish_reason, usage.completion_tokens)"""
        payload = {"max_tokens": max_tokens, "stream_options": {"include_usage": True}, **extra}
        if stream:
            events = sse(url, payload)
            finish = next(e["choices"][0]["finish_reason"] for _, e in events
                          if e != "[DONE]" and e["choices"] and e["choices"][0]["finish_reason"])
            return len(deltas(events)), finish, events[-2][1]["usage"]["completion_tokens"]
        body = requests.post(f"{url}/v1/chat/completions", json={
            "messages": [{"role": "user", "content": "x"}], **payload}).json()
        choice = body["choices"][0]
        return len(choice["message"]["content"].split()), choice["finish_reason"], body["usage"]["completion_tokens"]

    with refserver_thread(timing) as ref:
        for stream in (True, False):
            assert reply(ref.url, stream, 8) == (3, "stop", 3)
            assert reply(ref.url, stream, 8, ignore_eos=False) == (3, "stop", 3)
            assert reply(ref.url, stream, 8, ignore_eos=True) == ((8, "length", 8) if honour else (3, "stop", 3))
            assert reply(ref.url, stream, 2) == (2, "length", 2)  # max_tokens came first
            assert reply(ref.url, stream, 3) == (3, "length", 3)  # reached max_tokens: length


@pytest.mark.parametrize("dialect", ["llama.cpp", "vllm", "openai"])
def test_cached_tokens_are_fewer_than_the_prompt(dialect: str) -> None:
    """At most the prompt's length - 1 are cached (the last token is always computed): a one-word prompt has none."""
    with refserver_thread(Timing(ttft_ms=1.0, itl_ms=0.0, cached_tokens=100, dialect=dialect)) as ref:
        found = []
        for prompt in ("one two three four", "one"):
            events = sse(ref.url, {"messages": [{"role": "user", "content": prompt}], "max_tokens": 1,
                                   "stream_options": {"include_usage": True}})
            last = events[-2][1]
            assert last["usage"]["prompt_tokens"] == len(prompt.split())
            if dialect == "llama.cpp":
                found.append((last["timings"]["cache_n"], last["timings"]["prompt_n"]))
            else:
                found.append(last["usage"].get("prompt_tokens_details"))
    assert found == {"llama.cpp": [(3, 1), (0, 1)],
                     "vllm": [{"cached_tokens": 3}, None],
                     "openai": [{"cached_tokens": 3}, {"cached_tokens": 0}]}[dialect]


def test_the_cli_flags_reach_the_server(tmp_path: Path) -> None:
    with reference_server(tmp_path, "--ttft-ms", "1", "--itl-ms", "1", "--dialect", "openai", "--reasoning-tokens",
                          "2", "--eos-after", "4", "--ignore-ignore-eos", "--cached-tokens", "1") as url:
        events = sse(url, {"max_tokens": 9, "ignore_eos": True, "stream_options": {"include_usage": True}})
        assert requests.get(f"{url}/props").status_code == 404
    assert [d for _, d in deltas(events)] == [{"content": " w0"}, {"content": " w1"}]  # 4 tokens, 2 hidden
    assert events[-3][1]["choices"][0]["finish_reason"] == "stop"
    assert events[-2][1]["usage"] == {"prompt_tokens": 4, "completion_tokens": 4, "total_tokens": 8,
                                      "prompt_tokens_details": {"cached_tokens": 1},
                                      "completion_tokens_details": {"reasoning_tokens": 2}}


@pytest.mark.parametrize("bad", [{"dialect": "tgi"}, {"reasoning_tokens": -1}, {"cached_tokens": -1},
                                 {"eos_after": 0}])
def test_timing_refuses_what_no_server_does(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Timing(**bad)


# -- as llama-server: a launcher's command line, a cost in speed and memory per slot --------------

def launcher(folder: Path, flags: dict[str, Any]) -> ProcessLauncher:
    """The process launcher as a scenario sets it up (``--model M --host H --port P --metrics <flags>``)."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = ServerSpec(launcher="process", binary=str(reference_binary(folder)), flags=flags)
    return ProcessLauncher(spec, "model.gguf", None, folder / "server.log")


def rss_mib(pid: int) -> float:
    """The process's resident memory, MiB (``VmRSS`` of ``/proc/PID/status``)."""
    match = re.search(r"^VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    assert match is not None
    return int(match.group(1)) / 1024.0


@pytest.mark.parametrize("parallel", ["--parallel", "-np"])
def test_it_takes_the_command_line_a_launcher_gives_llama_server(tmp_path: Path, parallel: str) -> None:
    cmd = [sys.executable, "-m", "orchestrate.tools.refserver_cli", "--model", "x", "--host", "127.0.0.1",
           "--port", "0", "--metrics", parallel, "3"]
    with open(tmp_path / "server.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    assert proc.stdout is not None
    try:
        line = proc.stdout.readline()
        assert "listening on http://127.0.0.1:" in line, line
        url = line.split()[-1]
        props = requests.get(f"{url}/props", timeout=5).json()
        metrics = requests.get(f"{url}/metrics", timeout=5).status_code
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
    assert props["total_slots"] == 3 and props["model_path"] == "x"
    assert metrics == 404  # as before: a sampler finds no counters and samples memory only


def test_a_stream_started_beside_another_gets_the_slot_cost_in_each_gap(tmp_path: Path) -> None:
    """With --queue and --slot-cost-ms 30 (started by the process launcher), a stream that starts alone keeps
    --itl-ms 5; one that starts while it holds its slot (K = 2) gets 5 + 30 ms, at the client and in the truth."""
    truth = tmp_path / "truth.csv"
    server = launcher(tmp_path, {"parallel": 2, "queue": True, "slot-cost-ms": 30, "ttft-ms": 5, "itl-ms": 5,
                                 "truth-file": str(truth)})
    with server:
        url = server.start()
        server.wait_ready(20)
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as sock:  # "alone": holds its slot ~100 ms
            f = sock.makefile("rb")
            body = json.dumps({"messages": [{"role": "user", "content": "[req:alone]"}], "max_tokens": 20,
                               "stream": True}).encode()
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(body), body))
            while b'"role"' not in f.readline():  # its slot is taken: the next stream starts beside it
                pass
            beside = stream_times(url, "beside", 6)[0]
            while f.readline() not in (b"", b"0\r\n"):
                pass
    gaps = [b - a for a, b in zip(beside, beside[1:])]
    assert len(beside) == 6 and 28.0 <= statistics.median(gaps) <= 50.0, gaps
    rows = list(csv.DictReader(open(truth)))
    due = {rid: [float(r["scheduled_ts"]) for r in rows if r["request_id"] == rid and r["kind"] == "content"]
           for rid in ("alone", "beside")}
    assert len(due["alone"]) == 20
    for rid, gap in (("alone", 0.005), ("beside", 0.035)):
        assert [b - a for a, b in zip(due[rid], due[rid][1:])] == pytest.approx([gap] * (len(due[rid]) - 1),
                                                                                   abs=1e-5)
    sent = [float(r["ts"]) for r in rows if r["request_id"] == "alone" and r["kind"] == "content"]
    assert statistics.median(b - a for a, b in zip(sent, sent[1:])) < 0.015  # it kept its own gap


def test_slot_memory_over_the_limit_fails_to_load_as_out_of_memory(tmp_path: Path) -> None:
    server = launcher(tmp_path, {"parallel": 4, "slot-memory-mib": 64, "memory-limit-mib": 200})
    with server, pytest.raises(ServerExitedError) as raised:
        server.start()
        server.wait_ready(20)
    failed = raised.value
    assert failed.returncode == 1
    assert failed.cause is not None and failed.cause.startswith(
        f"ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size {256 << 20}: out of memory")
    assert failed.hint is not None and "ran out of memory" in failed.hint
    assert "256 MiB > memory limit 200 MiB" in (tmp_path / "server.log").read_text()


def test_slot_memory_is_resident_in_the_server_process(tmp_path: Path) -> None:
    """4 slots of 32 MiB: the server's RSS is 128 MiB above the same server's without, before it answers."""
    rss = {}
    for mib in (0, 32):
        server = launcher(tmp_path / str(mib), {"parallel": 4, "slot-memory-mib": mib, "memory-limit-mib": 128})
        with server:
            server.start()
            server.wait_ready(20)
            pid = server.pid()
            assert pid is not None
            rss[mib] = rss_mib(pid)
            assert (server.memory_bytes() or 0) >= rss[mib] * 1024 * 1024 * 0.9  # what the sampler sees
    assert 118.0 <= rss[32] - rss[0] <= 145.0, rss
