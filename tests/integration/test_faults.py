"""The run loop under faults: a server killed mid-run, and Ctrl-C/SIGTERM to the orchestrator.

Real processes throughout: `tokenswarm run` as a subprocess, the embedded server, `locust`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from orchestrate.server.launchers.base import Launcher
from tests.helpers import read_jsonl, write_scenario

pytestmark = pytest.mark.integration

LONG_LOAD = {"users": 2, "num_prompts": 300, "max_tokens": 400, "dataset": "synthetic:600", "max_seconds": 120}


def start_run(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    scenario = write_scenario(tmp_path, server={"flags": {"parallel": 2}}, load=LONG_LOAD)
    results = tmp_path / "results"
    proc = subprocess.Popen([sys.executable, "-m", "orchestrate.cli", "run", str(scenario),
                             "--results-dir", str(results)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    return proc, results


def wait_for_records(proc: subprocess.Popen[str], results: Path, n: int, timeout_s: float = 90) -> Path:
    """The variant dir once its requests.jsonl holds ``n`` records."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"tokenswarm exited early: {proc.stdout.read() if proc.stdout else ''}")
        for records in results.glob("*/v/requests.jsonl"):
            if records.read_text().count("\n") >= n:
                return records.parent
        time.sleep(0.2)
    raise AssertionError(f"fewer than {n} records after {timeout_s} s")


def descendants(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def embedded_server(processes: list[psutil.Process]) -> psutil.Process:
    (server,) = [p for p in processes if "orchestrate.server.launchers.embedded_child" in " ".join(p.cmdline())]
    return server


def assert_all_gone(processes: list[psutil.Process]) -> None:
    gone, alive = psutil.wait_procs(processes, timeout=15)
    assert not alive, [p.cmdline() for p in alive]


def test_server_killed_mid_run_is_crashed_and_completed_requests_are_kept(tmp_path: Path) -> None:
    proc, results = start_run(tmp_path)
    variant = wait_for_records(proc, results, 5)
    children = descendants(proc.pid)
    embedded_server(children).kill()
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, out
    summary = json.loads((variant / "summary.json").read_text())
    assert summary["status"] == "crashed" and summary["stopped_by"] == "server_died"
    records = read_jsonl(variant / "requests.jsonl")
    completed = [r for r in records if r["status"] == "ok"]
    assert len(completed) >= 5 and summary["requests"]["completed"] == len(completed)
    assert all(r["output_tokens"] == r["max_tokens"] for r in completed)
    req = summary["requests"]
    assert req["sent"] == len(records) and req["errors"] == sum(r["status"] == "error" for r in records)
    # refused connections are retried, not sent again and again: the prompts left are unsent, not errors
    # cut mid-stream, or taken and dropped before a response; never a refused storm
    assert set(req["errors_by_class"]) <= {"stream_cut", "connection_closed", "connection_reset"}, req
    assert req["completed"] + req["errors"] + req["cancelled"] + req["unsent"] == summary["planned_prompts"] == 300
    assert req["unsent"] > 200, req
    assert all(r["bytes_received"] is not None for r in records if r["error_class"] == "stream_cut")
    assert summary["server_down"]["at_s"] > 0 and "cut when the server died at" in out and "not sent" in out
    assert "crashed" in out
    assert summary["server"]["exit_code"] == -signal.SIGKILL
    assert_all_gone(children)


def break_mid_run_under_url(tmp_path: Path, server: Launcher, load: dict[str, Any],
                            signum: int = signal.SIGKILL) -> tuple[str, dict[str, Any]]:
    """``tokenswarm run --url`` against ``server``, sent ``signum`` once 6 requests are recorded (SIGKILL: it
    dies and cuts its streams; SIGSTOP: it hangs, accepting connections and answering nothing); asserts the
    run ends ``server_lost`` (exit 1) soon after, with every prompt accounted for; returns its output and summary."""
    results = tmp_path / "results"
    proc = subprocess.Popen([sys.executable, "-m", "orchestrate.cli", "run", str(write_scenario(tmp_path, load=load)),
                             "--url", str(server.url), "--server-lost-after", "3s", "--results-dir", str(results)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    variant = wait_for_records(proc, results, 6, timeout_s=240)
    pid = server.pid()
    assert pid is not None
    os.kill(pid, signum)
    broken = time.monotonic()
    try:
        out, _ = proc.communicate(timeout=120)
    finally:
        os.kill(pid, signal.SIGCONT)  # a stopped server must be able to die at the fixture's stop
    assert proc.returncode == 1, out
    assert time.monotonic() - broken < 3 + 20, "ends a few seconds after the server-lost window"
    summary = json.loads((variant / "summary.json").read_text())
    assert summary["status"] == "server_lost" and summary["stopped_by"] == "server_lost", out
    req, records = summary["requests"], read_jsonl(variant / "requests.jsonl")
    assert req["sent"] == len(records) and req["completed"] >= 6
    assert req["completed"] + req["errors"] + req["cancelled"] + req["unsent"] == summary["planned_prompts"]
    assert req["unsent"] >= summary["planned_prompts"] - len(records) > 0
    assert f"{req['unsent']:,} not sent" in out
    cut = [r for r in records if r["error_class"] == "stream_cut"]
    dropped = [r for r in records if r["error_class"] in ("connection_closed", "connection_reset")]
    down = summary["server_down"]
    assert down["streams_cut"] == len(cut) and down["dropped_before_response"] == len(dropped)
    assert 0 < down["at_s"] <= summary["duration_s"] + 1
    if signum == signal.SIGKILL:  # its streams cut, then every connection refused: retried, never errors
        # a request it had taken and not answered yet is dropped: closed before a response
        assert set(req["errors_by_class"]) <= {"stream_cut", "connection_closed", "connection_reset"}, req
        assert all(r["http_status"] == 200 and r["bytes_received"] is not None for r in cut)  # after its headers
        assert f"{len(cut) + len(dropped)} cut when the server was lost at {down['at_s']:.1f} s" in out
    else:  # hung: nothing cut, the requests it holds are cancelled at the stop
        assert not req["errors_by_class"] and req["cancelled"] >= 1, req
        assert f"the server was lost at {down['at_s']:.1f} s" in out
    return out, summary


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "hung"])
def test_a_server_gone_under_url_is_server_lost_with_every_prompt_accounted_for(
        tmp_path: Path, embedded: Callable[..., Launcher], signum: int) -> None:
    break_mid_run_under_url(tmp_path, embedded(parallel=4), {"users": 4, "num_prompts": 400, "max_tokens": 400,
                                                               "dataset": "synthetic:800"}, signum)


@pytest.mark.timeout(600)
def test_the_real_llama_server_killed_under_url_is_server_lost(tmp_path: Path, own_real_server: Launcher) -> None:
    out, summary = break_mid_run_under_url(tmp_path, own_real_server, {
        "dataset": "sharegpt-v3", "allow_truncated": True, "users": 4, "num_prompts": 200, "max_tokens": 96,
        "sampling": {"max_prompt_tokens": 160}})
    assert summary["requests"]["errors_by_class"]["stream_cut"] >= 1


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_stops_everything_and_keeps_a_partial_result(tmp_path: Path, signum: int) -> None:
    proc, results = start_run(tmp_path)
    variant = wait_for_records(proc, results, 5)
    children = descendants(proc.pid)
    assert embedded_server(children)
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    summary = json.loads((variant / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    assert summary["requests"]["completed"] >= 5
    assert summary["requests"]["sent"] == len(read_jsonl(variant / "requests.jsonl"))
    assert (variant / "summary.md").exists() and (variant / "server.json").exists()
    assert "interrupted" in out
    assert_all_gone(children)


def test_sigkill_of_the_orchestrator_loses_no_finished_record_and_leaves_nothing_running(tmp_path: Path) -> None:
    proc, results = start_run(tmp_path)
    variant = wait_for_records(proc, results, 5)
    children = descendants(proc.pid)
    time.sleep(1.0)
    proc.kill()  # no cleanup code runs in the orchestrator
    proc.communicate(timeout=30)
    assert_all_gone(children)  # the server and Locust notice their parent is gone and quit
    records = read_jsonl(variant / "requests.jsonl")  # every line is a whole record
    assert len(records) >= 5
    assert all(r["status"] in ("ok", "error", "cancelled") for r in records)
    assert len({r["prompt_index"] for r in records}) == len(records)
    # `tokenswarm report` still turns what was measured into a summary
    report = subprocess.run([sys.executable, "-m", "orchestrate.cli", "report", str(variant.parent)],
                            capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    summary = json.loads((variant / "summary.json").read_text())
    assert summary["requests"]["completed"] == sum(r["status"] == "ok" for r in records)
