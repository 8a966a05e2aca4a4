"""orchestrate/load/sampler.py (+ the metrics lines of console.py and summary.md): hand-written inputs."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import requests

from locustfiles.records import OK
from orchestrate.load import sampler
from orchestrate.load.sampler import GpuMemoryProbe, MetricsSampler, parse_nvidia_smi, parse_prometheus
from orchestrate.report.aggregates.headline import summarize_records
from orchestrate.report.aggregates.servermetrics import load_metrics, server_metrics, summarize_metrics
from orchestrate.report.console import memory_line, server_metrics_line
from orchestrate.report.formats import fmt_bytes
from orchestrate.report.jsontypes import from_json
from orchestrate.report.markdown import summary_md
from orchestrate.report.notes import notes
from orchestrate.report.schema import Summary
from orchestrate.report.schema.server import Memory
from orchestrate.server.launchers.base import Launcher
from tests.unit.orchestrate.report.aggregates.test_servermetrics import COMPLETED, GIB, MIB, records, write_metrics

PROMETHEUS = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed, excluding cached tokens
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 168
# HELP llamacpp:prompt_tokens_cached_total Number of prompt tokens reused from the cache
# TYPE llamacpp:prompt_tokens_cached_total counter
llamacpp:prompt_tokens_cached_total 164
llamacpp:prompt_seconds_total 0.01041
llamacpp:tokens_predicted_total 32 1700000000000
llamacpp:tokens_predicted_seconds_total 1.5e-2
llamacpp:n_busy_slots_per_decode NaN
llamacpp:predicted_tokens_seconds +Inf
llamacpp:requests_processing{model="a",note="x} y, z"} 2
llamacpp:requests_processing{model="b"} 1

process_cpu_seconds_total 12.5
vllm:prompt_tokens_total 999
"""


def test_parse_prometheus_skips_comments_sums_labels_and_maps_nan_to_none() -> None:
    assert parse_prometheus(PROMETHEUS) == {
        "prompt_tokens_total": 168.0, "prompt_tokens_cached_total": 164.0, "prompt_seconds_total": 0.01041,
        "tokens_predicted_total": 32.0, "tokens_predicted_seconds_total": 0.015,
        "n_busy_slots_per_decode": None, "predicted_tokens_seconds": None, "requests_processing": 3.0}
    assert parse_prometheus("") == {}
    assert parse_prometheus("<html>not found</html>") == {}


@pytest.mark.parametrize("out, expected", [
    ("81920, 97871\n", (81920 * MIB, 97871 * MIB)),
    ("1000, 80000\n2000, 80000\n", (3000 * MIB, 160000 * MIB)),  # summed over GPUs
    ("[N/A], [N/A]\n", None),                                   # GB10 / DGX Spark: unified memory
    ("Not Supported, Not Supported\n", None),
    ("1000, 80000\n[N/A], [N/A]\n", None),
    ("", None),
])
def test_parse_nvidia_smi(out: str, expected: tuple[int, int] | None) -> None:
    assert parse_nvidia_smi(out) == expected


def write_meminfo(tmp_path: Path) -> Path:
    path = tmp_path / "meminfo"
    path.write_text("MemTotal:       125000000 kB\nMemFree:         1000000 kB\n"
                    "MemAvailable:    100000000 kB\nBuffers:          500000 kB\n")
    return path


def test_nvidia_smi_na_falls_back_to_system_memory_for_good(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Sequence[str]] = []

    def fake_run(argv: Sequence[str], timeout_s: float) -> str:
        calls.append(argv)
        return "[N/A], [N/A]\n"

    monkeypatch.setattr(sampler, "run_command", fake_run)
    probe = GpuMemoryProbe("/usr/bin/nvidia-smi", meminfo=write_meminfo(tmp_path))
    expected = ((125000000 - 100000000) * 1024, 125000000 * 1024, "system")
    assert probe.read() == expected
    assert probe.read() == expected
    assert len(calls) == 1 and calls[0][0] == "/usr/bin/nvidia-smi"  # not asked again every second
    assert "--query-gpu=memory.used,memory.total" in calls[0]


def test_nvidia_smi_numbers_are_used_and_a_missing_tool_is_never_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = iter(["512, 81559\n"])
    monkeypatch.setattr(sampler, "run_command", lambda argv, timeout_s: next(outputs))
    assert GpuMemoryProbe("nvidia-smi").read() == (512 * MIB, 81559 * MIB, "nvidia-smi")
    assert GpuMemoryProbe(None, meminfo=write_meminfo(tmp_path)).read() == (None, None, None)  # next() not called


def test_a_failing_nvidia_smi_is_given_up_after_a_few_tries(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def broken(argv: Sequence[str], timeout_s: float) -> str:
        calls.append(1)
        raise subprocess.CalledProcessError(9, list(argv))

    monkeypatch.setattr(sampler, "run_command", broken)
    probe = GpuMemoryProbe("nvidia-smi")
    for _ in range(10):
        assert probe.read() == (None, None, None)
    assert len(calls) == sampler.NVIDIA_SMI_MAX_FAILURES


class FakeLauncher(Launcher):
    """No process: a fixed memory figure (as the docker launcher's container stats would be)."""

    kind = "fake"
    memory_source = "container"

    def __init__(self, memory: int | None = 123 * MIB) -> None:
        super().__init__(Path("/nonexistent/server.log"))
        self.memory = memory

    def _start(self) -> str:
        return "http://127.0.0.1:1"

    def exit_status(self) -> int | None:
        return None

    def stop(self) -> None:
        pass

    def memory_bytes(self) -> int | None:
        return self.memory


class FakeResponse:
    def __init__(self, status_code: int, text: str = "") -> None:
        self.status_code, self.text = status_code, text


class ScriptedSession(requests.Session):
    """GET answers from a script (a response or an exception to raise); the last entry repeats."""

    def __init__(self, script: list[Any]) -> None:
        super().__init__()
        self.script, self.urls = script, []

    def get(self, url: str | bytes, **kwargs: Any) -> Any:  # type: ignore[override]
        self.urls.append(url)
        answer = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def wait_for(condition: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_failed_scrape_is_a_line_without_metrics_and_sampling_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sampler.shutil, "which", lambda name: None)  # no GPU here
    session = ScriptedSession([FakeResponse(200, PROMETHEUS), requests.ConnectionError("refused"),
                               FakeResponse(500, "oops"), FakeResponse(200, PROMETHEUS)])
    out = tmp_path / "metrics.jsonl"
    with MetricsSampler("http://srv:8080/", FakeLauncher(), out, interval_s=0.01,
                        session_factory=lambda: session) as s:
        wait_for(lambda: s.samples >= 5)
    lines = read_lines(out)
    assert len(lines) == s.samples >= 6  # + the last sample on exit
    assert session.urls[0] == "http://srv:8080/metrics"
    assert lines[0]["metrics"]["tokens_predicted_total"] == 32.0
    assert set(lines[0]["metrics"]) == {"prompt_tokens_total", "prompt_tokens_cached_total", "prompt_seconds_total",
                                        "tokens_predicted_total", "tokens_predicted_seconds_total",
                                        "requests_processing"}  # only the listed counters and gauges
    assert (lines[1]["metrics"], lines[1]["metrics_error"]) == (None, "scrape_failed:ConnectionError")
    assert (lines[2]["metrics"], lines[2]["metrics_error"]) == (None, "http_500")
    assert all(line["metrics"] is not None for line in lines[3:])
    assert all(line["server_memory_bytes"] == 123 * MIB and line["server_memory_source"] == "container"
               for line in lines)
    assert all(line["gpu_memory_source"] is None and line["gpu_memory_used_bytes"] is None for line in lines)
    elapsed = [line["elapsed_s"] for line in lines]
    assert elapsed == sorted(elapsed) and elapsed[0] < 0.5
    assert all(isinstance(line["t"], float) for line in lines)


def test_a_server_without_metrics_is_said_once_and_memory_is_still_sampled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sampler.shutil, "which", lambda name: None)
    session = ScriptedSession([FakeResponse(501, '{"error": {"message": "This server does not support metrics"}}')])
    out = tmp_path / "metrics.jsonl"
    with MetricsSampler("http://srv", FakeLauncher(None), out, interval_s=0.01,
                        session_factory=lambda: session) as s:
        wait_for(lambda: s.samples >= 4)
    assert len(session.urls) == 1
    assert capsys.readouterr().out.count("http_501") == 1
    lines = read_lines(out)
    assert all(line["metrics"] is None and line["metrics_error"] == "http_501" for line in lines)
    assert all(line["server_memory_bytes"] is None and line["server_memory_source"] is None for line in lines)
    summary = summarize_metrics(load_metrics(out))
    assert summary.server_counters is None and summary.metrics_unavailable == "http_501"
    block = server_metrics(summary, pd.DataFrame([{"status": OK, "output_tokens": 3}]))
    assert block.available is False and block.agrees_with_records is None
    assert any("no llama.cpp /metrics (http_501)" in note for note in notes(Summary(server_metrics=block)))


def test_stop_is_prompt_and_takes_a_last_sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sampler.shutil, "which", lambda name: None)
    session = ScriptedSession([FakeResponse(200, PROMETHEUS)])
    out = tmp_path / "metrics.jsonl"
    s = MetricsSampler("http://srv", FakeLauncher(), out, interval_s=60.0, session_factory=lambda: session)
    started = time.monotonic()
    with s:
        pass
    assert time.monotonic() - started < 1.0
    assert len(read_lines(out)) == 2  # the first on entry, the last on exit
    s.stop()  # twice is harmless


class PidLauncher(FakeLauncher):
    memory_source = "process_tree"

    def __init__(self, pid: int | None) -> None:
        super().__init__()
        self._pid = pid

    def pid(self) -> int | None:
        return self._pid

    memory_bytes = Launcher.memory_bytes  # the default under test


def test_default_memory_is_the_rss_of_the_process_tree() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        alone = PidLauncher(child.pid).memory_bytes()
        tree = PidLauncher(os.getpid()).memory_bytes()
        assert alone is not None and alone > 0
        assert tree is not None and tree > alone  # this process and its sleeping child
    finally:
        child.kill()
        child.wait()
    assert PidLauncher(child.pid).memory_bytes() is None  # gone
    assert PidLauncher(None).memory_bytes() is None


def test_report_lines_and_plot_links(tmp_path: Path) -> None:
    assert (fmt_bytes(None), fmt_bytes(412.25 * MIB), fmt_bytes(1.5 * GIB)) == ("–", "412.2 MiB", "1.50 GiB")
    metrics = summarize_metrics(load_metrics(write_metrics(tmp_path / "metrics.jsonl")))
    summary = Summary(scenario="s", variant="v", **summarize_records(records(*COMPLETED)).blocks(),
                      memory=metrics.memory, server_metrics=server_metrics(metrics, records(*COMPLETED)))
    assert memory_line(summary.memory) == ("memory: server peak 950.0 MiB (RSS of the server's processes); memory peak "
                                    "32.00 GiB of 128.00 GiB (system memory in use: unified memory, whole machine)")
    assert server_metrics_line(summary.server_metrics) == (
        "server /metrics tokens: prefill 1,000 (records 1,000), cached 300 (records 300), output 200 (records 200) "
        "— agrees with the records; its own speed (Σ tokens / Σ seconds it counted): prefill 2,000.0 tok/s, "
        "decode 100.0 tok/s")
    md = summary_md(summary, ["latency.png", "throughput.png"])
    assert "![latency](latency.png)" in md and "![throughput](throughput.png)" in md
    assert f"{memory_line(summary.memory)}  " in md and f"{server_metrics_line(summary.server_metrics)}  " in md
    assert memory_line(from_json(Memory, {"peak_bytes": None, "gpu_peak_bytes": None})) is None


def test_sample_now_writes_a_line_at_once_and_returns_its_time(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A step's counter deltas are taken between two such samples: the time returned must be the line's."""
    monkeypatch.setattr(sampler.shutil, "which", lambda name: None)
    session = ScriptedSession([FakeResponse(200, PROMETHEUS)])
    out = tmp_path / "metrics.jsonl"
    with MetricsSampler("http://srv", FakeLauncher(), out, interval_s=60.0, session_factory=lambda: session) as s:
        assert s.samples == 1  # the first, on entry
        before = time.time()
        t = s.sample_now()
        assert s.samples == 2 and before <= t <= time.time()
        lines = read_lines(out)
        assert len(lines) == 2 and lines[-1]["t"] == t, "flushed at once, not at the next interval"
        assert lines[-1]["metrics"]["tokens_predicted_total"] == 32.0
        later = s.sample_now()
        assert later >= t and read_lines(out)[-1]["t"] == later
    assert len(read_lines(out)) == 4  # + the last sample on exit


def test_a_failed_sample_now_writes_nothing_and_still_returns_when_it_was_tried(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sampler.shutil, "which", lambda name: None)
    out = tmp_path / "metrics.jsonl"
    s = MetricsSampler("http://srv", FakeLauncher(), out, interval_s=60.0,
                       session_factory=lambda: ScriptedSession([FakeResponse(200, PROMETHEUS)]))
    real, failing = s.sample, [True]

    def sometimes_broken() -> sampler.MetricsSample:
        if failing:
            raise RuntimeError("boom")
        return real()

    monkeypatch.setattr(s, "sample", sometimes_broken)
    failing.clear()
    with s:
        failing.append(True)
        before = time.time()
        t = s.sample_now()
        assert before <= t <= time.time() and s.samples == 1
        failing.clear()
    assert "metrics sample failed: RuntimeError: boom" in capsys.readouterr().out
    assert len(read_lines(out)) == 2  # the first and the last: nothing for the failed one
