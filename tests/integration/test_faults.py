"""The run loop under faults: a server killed mid-run, and Ctrl-C/SIGTERM to the orchestrator.

Real processes throughout: `tokenswarm run` as a subprocess, the embedded server, `locust`.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

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
    (server,) = [p for p in processes if "orchestrate.launchers.embedded_child" in " ".join(p.cmdline())]
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
    assert all(r["output_tokens"] == r["requested_max_tokens"] for r in completed)
    # requests after the kill fail fast (refused), so all 300 may be sent before the run stops
    assert summary["requests"]["sent"] == len(records) <= 300
    assert summary["requests"]["errors"] == sum(r["status"] == "error" for r in records)
    assert "crashed" in out
    assert summary["server"]["exit_code"] == -signal.SIGKILL
    assert_all_gone(children)


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
