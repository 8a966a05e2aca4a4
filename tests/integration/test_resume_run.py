"""``tokenswarm run --resume``: a matrix whose orchestrator was killed (SIGKILL) after its second variant is
finished without running the first two again, and a changed scenario is refused before anything runs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import reference_server

pytestmark = pytest.mark.integration

NAMES = ("max_tokens-8", "max_tokens-12", "max_tokens-16")


def tokenswarm(*args: str) -> list[str]:
    return [sys.executable, "-m", "orchestrate.cli", "run", *args]


def test_a_killed_matrix_is_finished_by_resume_and_a_changed_one_is_refused(tmp_path: Path) -> None:
    with reference_server(tmp_path / "server", "--ttft-ms", "30", "--itl-ms", "20") as url:
        scenario = tmp_path / "matrix.yaml"
        scenario.write_text(yaml.safe_dump({
            "name": "resumed", "server": {"launcher": "external", "url": url},
            "load": {"dataset": "synthetic:200", "users": 2, "num_prompts": 6, "sampling": {"fixed_output_tokens": 16}},
            "matrix": {"max_tokens": [8, 12, 16]}}))
        results = tmp_path / "results"
        proc = subprocess.Popen(tokenswarm(str(scenario), "--results-dir", str(results)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not list(results.glob(f"*/{NAMES[1]}/summary.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        (run,) = results.iterdir()
        kept = {name: (run / name / "summary.json").stat().st_mtime_ns for name in NAMES[:2]}
        assert not (run / "compare.md").exists(), "killed before the comparison"

        changed = tmp_path / "changed.yaml"
        changed.write_text(scenario.read_text().replace("num_prompts: 6", "num_prompts: 7"))
        refused = subprocess.run(tokenswarm(str(changed), "--resume", str(run)), capture_output=True, text=True)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert "load.num_prompts: 6 → 7" in refused.stderr and "nothing was run" in refused.stderr
        assert not (run / "partial").exists() and not (run / NAMES[2] / "summary.json").exists()

        resumed = subprocess.run(tokenswarm(str(scenario), "--resume", str(run)), capture_output=True, text=True,
                                 timeout=180)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert {name: (run / name / "summary.json").stat().st_mtime_ns for name in NAMES[:2]} == kept
    assert f"[{NAMES[0]}] completed before: kept" in resumed.stdout
    assert json.loads((run / NAMES[2] / "summary.json").read_text())["status"] == "completed"
    partial = list((run / "partial").iterdir()) if (run / "partial").exists() else []
    assert [p.name for p in partial] in ([], [f"{NAMES[2]}-1"]), "the third, if it had begun, set aside"
    compared = (run / "compare.md").read_text()
    assert all(f"| {name} | completed |" in compared for name in NAMES)



def kill_when(proc: subprocess.Popen[bytes], results: Path, pattern: str, timeout_s: float = 120) -> Path:
    """SIGKILL the orchestrator as soon as a file matching ``pattern`` under ``results`` exists (a step's
    summary): a crash between two steps. Returns the run folder."""
    deadline = time.monotonic() + timeout_s
    while not list(results.glob(pattern)) and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert list(results.glob(pattern)), f"{pattern} never appeared"
    (run,) = results.iterdir()
    return run


def test_a_killed_sweep_keeps_its_finished_steps_and_runs_only_the_rest(tmp_path: Path) -> None:
    with reference_server(tmp_path / "server", "--ttft-ms", "30", "--itl-ms", "20") as url:
        scenario = tmp_path / "sweep.yaml"
        scenario.write_text(yaml.safe_dump({
            "name": "swept", "server": {"launcher": "external", "url": url},
            "load": {"dataset": "synthetic:200", "users": [1, 2, 3], "num_prompts": 4, "max_tokens": 8,
                     "warmup_prompts": 2, "settle_s": 0.2}, "variants": [{"name": "v"}]}))
        results = tmp_path / "results"
        proc = subprocess.Popen(tokenswarm(str(scenario), "--results-dir", str(results)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        run = kill_when(proc, results, "*/v/steps/users-2/summary.json")
        before = {label: (run / "v" / "steps" / label / "requests.jsonl").read_text() for label in ("users-1", "users-2")}
        resumed = subprocess.run(tokenswarm(str(scenario), "--resume", str(run)), capture_output=True, text=True,
                                 timeout=180)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "its 2 finished step(s) kept (users-1, users-2), the rest run again" in resumed.stdout
    assert "[v] users-1: finished before: kept" in resumed.stdout and "[v] users-3: 4 prompts" in resumed.stdout
    assert "[v] users-1: 4 prompts" not in resumed.stdout
    for label, records in before.items():  # kept as they were, not run again
        assert (run / "v" / "steps" / label / "requests.jsonl").read_text() == records
    summary = json.loads((run / "v" / "summary.json").read_text())
    assert [(s["value"], s["status"], s["completed"]) for s in summary["sweep"]["steps"]] == \
        [(1, "completed", 4), (2, "completed", 4), (3, "completed", 4)]
    assert summary["requests"]["completed"] == 12  # the variant's records: all three steps'
    assert summary["resumed"] == {"set_aside": "partial/v-1", "kept_steps": ["users-1", "users-2"]}
    assert any("run again by --resume" in note for note in summary["notes"])
    assert (run / "partial" / "v-1" / "steps" / "users-1" / "summary.json").is_file()  # the earlier attempt, kept


def test_a_killed_capacity_search_goes_on_from_its_finished_probes(tmp_path: Path) -> None:
    with reference_server(tmp_path / "server", "--ttft-ms", "50", "--itl-ms", "10", "--slots", "4", "--queue") as url:
        scenario = tmp_path / "search.yaml"
        scenario.write_text(yaml.safe_dump({
            "name": "searched", "server": {"launcher": "external", "url": url},
            "load": {"dataset": "synthetic:3000", "max_tokens": 16},
            "variants": [{"name": "v", "slo": {"ttft_ms": 150},
                          "search": {"over": "users", "range": [3, 6], "settle_s": 0.3}}]}))
        results = tmp_path / "results"
        proc = subprocess.Popen(tokenswarm(str(scenario), "--results-dir", str(results)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        run = kill_when(proc, results, "*/v/steps/probe-01-*/summary.json", timeout_s=180)
        (first,) = (run / "v" / "steps").glob("probe-01-*")
        records = (first / "requests.jsonl").read_text()
        resumed = subprocess.run(tokenswarm(str(scenario), "--resume", str(run)), capture_output=True, text=True,
                                 timeout=300)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert f"its 1 finished step(s) kept ({first.name})" in resumed.stdout
    assert "probe 1:" in resumed.stdout and "finished before: kept" in resumed.stdout
    assert (run / "v" / "steps" / first.name / "requests.jsonl").read_text() == records
    found = json.loads((run / "v" / "summary.json").read_text())["capacity"]
    assert (found["max_passing"], found["min_failing"]) == (4, 5)  # the slots, as an uninterrupted search finds
    assert [p["n"] for p in json.loads((run / "v" / "search.json").read_text())["probes"]] == \
        list(range(1, len(found["probes"]) + 1))
    assert found["probes"][0]["label"] == first.name
