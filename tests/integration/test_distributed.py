"""Distributed load: a Locust master and worker processes, one `requests.jsonl`, nothing lost or doubled."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.helpers import read_jsonl, tokenswarm_run, write_scenario

pytestmark = pytest.mark.integration


def test_master_and_two_workers_send_exactly_n(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, load={"users": 6, "num_prompts": 30, "max_tokens": 16})
    proc, run = tokenswarm_run(tmp_path, scenario, "--workers", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    variant = run / "v"
    summary = json.loads((variant / "summary.json").read_text())
    records = read_jsonl(variant / "requests.jsonl")
    prompts = read_jsonl(variant / "prompts.jsonl")
    assert len(records) == 30 and summary["requests"]["completed"] == 30
    assert sorted(r["prompt_index"] for r in records) == list(range(30))  # none twice, none missing
    workers = {r["worker"] for r in records}
    assert len(workers) == 2 and all(w.startswith("w") and w != "local" for w in workers)
    assert summary["tokens"]["output"] == sum(r["output_tokens"] for r in records) \
        == sum(p["output_tokens"] for p in prompts)
    assert summary["tokens"]["prompt"] == sum(r["prompt_tokens"] for r in records)
    check = summary["locust_crosscheck"]
    assert (check["requests"], check["failures"]) == (30, 0)
    assert summary["crosscheck_agrees"] is True
    assert summary["workers_lost"] == 0
    ledger = json.loads((variant / "workers.json").read_text())
    assert sum(ledger["records_by_worker"].values()) == 30 and len(ledger["records_by_worker"]) == 2
    assert (variant / "locust-worker-0.log").exists() and (variant / "locust-worker-1.log").exists()


def test_a_worker_killed_mid_run_is_reported_and_nothing_is_counted_twice(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, server={"flags": {"parallel": 4}},
                              load={"users": 4, "num_prompts": 120, "max_tokens": 200, "dataset": "synthetic:400"})
    results = tmp_path / "results"
    proc = subprocess.Popen([sys.executable, "-m", "orchestrate.cli", "run", str(scenario), "--workers", "2",
                             "--results-dir", str(results)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    deadline = time.monotonic() + 90
    victim = None
    while victim is None and time.monotonic() < deadline:
        files = list(results.glob("*/v/requests.jsonl"))
        if files and files[0].read_text().count("\n") >= 8:
            workers = [p for p in psutil.Process(proc.pid).children(recursive=True)
                       if "--worker" in p.cmdline()]
            assert len(workers) == 2
            victim = workers[0]
        time.sleep(0.2)
    assert victim is not None, "no records after 90 s"
    victim.kill()
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 0, out
    variant = next(results.glob("*/v"))
    summary = json.loads((variant / "summary.json").read_text())
    records = read_jsonl(variant / "requests.jsonl")
    indices = [r["prompt_index"] for r in records]
    assert len(indices) == len(set(indices))  # no request counted twice
    assert summary["workers_lost"] == 1
    ledger = json.loads((variant / "workers.json").read_text())
    lost = [i for owed in ledger["lost_prompt_indices"].values() for i in owed]
    assert ledger["lost_in_flight"] == len(lost) > 0
    assert sorted(indices + lost) == list(range(120))  # every prompt: answered once, or lost with the worker
    dead = ledger["lost_workers"][0]
    assert any(r["worker"] == f"w{dead}" for r in records)  # what it shipped before dying is kept
    assert any("went missing" in n for n in summary["notes"])


def test_a_remote_worker_serves_every_variant_and_sweep_step(tmp_path: Path) -> None:
    """`tokenswarm run --master` starts a master per variant and per sweep step; one `tokenswarm
    worker` joins each in turn (a Locust worker quits with its master)."""
    from orchestrate.launchers.base import free_port
    port = free_port("127.0.0.1")
    worker = subprocess.Popen([sys.executable, "-m", "orchestrate.cli", "worker", "--master-host", "127.0.0.1",
                               "--master-port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        scenario = write_scenario(tmp_path, load={"users": 2, "num_prompts": 4, "max_tokens": 8},
                                  variants=[{"name": "a"},
                                            {"name": "b", "load": {"users": [1, 2], "warmup_prompts": 1,
                                                                    "settle_s": 0.2}}])
        proc, run = tokenswarm_run(tmp_path, scenario, "--master", "--expect-workers", "1",
                                   "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        for variant, sent in (("a", 4), ("b", 8)):
            summary = json.loads((run / variant / "summary.json").read_text())
            assert summary["status"] == "completed" and summary["requests"]["completed"] == sent
            assert {r["worker"] for r in read_jsonl(run / variant / "requests.jsonl")} != {"local"}
        assert worker.poll() is None  # still waiting for the next master
    finally:
        worker.terminate()
        out, _ = worker.communicate(timeout=20)
    assert out.count("finished; waiting for the next one") >= 4  # a, b's warm-up, b's two steps


def test_a_master_that_no_worker_joins_gives_up_in_one_line(tmp_path: Path) -> None:
    """Waiting states end: Locust's --expect-workers-max-wait, said at the start and in the result."""
    from orchestrate.launchers.base import free_port
    started = time.monotonic()
    proc, run = tokenswarm_run(tmp_path, write_scenario(tmp_path), "--master", "--expect-workers", "1",
                               "--expect-workers-max-wait", "4s", "--master-bind-host", "127.0.0.1",
                               "--master-bind-port", str(free_port()), timeout_s=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert time.monotonic() - started < 90
    assert "master waiting up to 4 s for 1 worker(s)" in proc.stdout
    summary = json.loads((run / "v" / "summary.json").read_text())
    assert summary["status"] == "error" and summary["error"].startswith("no worker joined within 4 s")


def test_an_interrupted_worker_says_what_a_worker_does(tmp_path: Path) -> None:
    import signal
    from orchestrate.launchers.base import free_port
    worker = subprocess.Popen([sys.executable, "-m", "orchestrate.cli", "worker", "--master-host", "127.0.0.1",
                               "--master-port", str(free_port())], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    assert worker.stdout is not None
    assert worker.stdout.readline().startswith("tokenswarm: locust")  # its Locust worker is starting
    time.sleep(1)
    worker.send_signal(signal.SIGINT)
    _, err = worker.communicate(timeout=60)
    assert worker.returncode == 130
    assert err.strip().splitlines()[-1].startswith("tokenswarm: worker interrupted; it left its master")
    assert "servers stopped" not in err
