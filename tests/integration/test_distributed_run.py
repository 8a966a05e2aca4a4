"""Distributed load: a Locust master and worker processes, one `requests.jsonl`, nothing lost or doubled."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from locustfiles.admission import JOIN_TOKEN_ENV, MSG_CHALLENGE, MSG_VERDICT, NO_TOKEN, WRONG_TOKEN
from locustfiles.command import LOCUSTFILE
from orchestrate.server.launchers.embedded import EmbeddedLauncher
from tests.helpers import read_jsonl, tokenswarm_run, undocumented_keys, write_scenario

pytestmark = pytest.mark.integration

ROGUE = Path(__file__).resolve().parents[1] / "fixtures" / "rogue_worker.py"


def token_file(tmp_path: Path, token: str = "a-token-for-this-test", name: str = "join-token") -> Path:
    """A join token's file, as a worker host would hold it (the token never goes on a command line)."""
    path = tmp_path / name
    path.write_text(token + "\n")
    return path


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
        == sum(p["max_tokens"] for p in prompts)
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
    from orchestrate.server.launchers.base import free_port
    port = free_port("127.0.0.1")
    token = token_file(tmp_path)
    worker = subprocess.Popen([sys.executable, "-m", "orchestrate.cli", "worker", "--master-host", "127.0.0.1",
                               "--master-port", str(port), "--join-token-file", str(token)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        scenario = write_scenario(tmp_path, load={"users": 2, "num_prompts": 4, "max_tokens": 8},
                                  variants=[{"name": "a"},
                                            {"name": "b", "load": {"users": [1, 2], "warmup_prompts": 1,
                                                                    "settle_s": 0.2}}])
        proc, run = tokenswarm_run(tmp_path, scenario, "--master", "--expect-workers", "1",
                                   "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
                                   "--join-token-file", str(token))
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
    from orchestrate.server.launchers.base import free_port
    started = time.monotonic()
    proc, run = tokenswarm_run(tmp_path, write_scenario(tmp_path), "--master", "--expect-workers", "1",
                               "--expect-workers-max-wait", "4s", "--master-bind-host", "127.0.0.1",
                               "--master-bind-port", str(free_port()), "--join-token-file", str(token_file(tmp_path)),
                               timeout_s=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert time.monotonic() - started < 90
    assert "master waiting up to 4 s for 1 worker(s)" in proc.stdout
    summary = json.loads((run / "v" / "summary.json").read_text())
    assert summary["status"] == "error" and summary["error"].startswith("no worker joined within 4 s")


def test_an_interrupted_worker_says_what_a_worker_does(tmp_path: Path) -> None:
    import signal

    from orchestrate.server.launchers.base import free_port
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


def test_only_workers_that_prove_the_join_token_take_part(tmp_path: Path) -> None:
    """Two workers hold the master's join token; a worker with a wrong one, a worker with none, and a rogue
    that ignores its rejection (forging records and Locust stats) get no prompt and no user, do not count
    toward --expect-workers, and nothing they send counts: exactly N records, all from the admitted two."""
    from orchestrate.server.launchers.base import free_port
    port, token = free_port("127.0.0.1"), "the-join-token-of-this-test"
    good, wrong = token_file(tmp_path, token), token_file(tmp_path, "not-the-join-token", "wrong-token")
    env = {k: v for k, v in os.environ.items() if k != JOIN_TOKEN_ENV}
    worker = [sys.executable, "-m", "orchestrate.cli", "worker", "--master-host", "127.0.0.1", "--master-port",
              str(port)]
    out = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}
    scenario = write_scenario(tmp_path, load={"users": 4, "num_prompts": 20, "max_tokens": 8})
    rogue_seen = tmp_path / "rogue.json"
    rogue = subprocess.Popen([sys.executable, str(ROGUE), "127.0.0.1", str(port), "rogue_1", str(rogue_seen)],
                             env=env, **out)
    outsiders = [subprocess.Popen([*worker, "--join-token-file", str(wrong)], env=env, **out),
                 subprocess.Popen(worker, env=env, **out)]
    master = subprocess.Popen([sys.executable, "-m", "orchestrate.cli", "run", str(scenario), "--master",
                               "--expect-workers", "2", "--master-bind-host", "127.0.0.1", "--master-bind-port",
                               str(port), "--join-token-file", str(good), "--results-dir", str(tmp_path / "results")],
                              env=env, **out)
    admitted: list[subprocess.Popen[str]] = []
    try:
        said = [p.communicate(timeout=180)[0] for p in outsiders]  # rejected: they end, the rogue stays
        admitted = [subprocess.Popen([*worker, "--once"], env={**env, JOIN_TOKEN_ENV: token}, **out)
                    for _ in range(2)]
        argv_with_token = []
        while master.poll() is None:
            argv_with_token += [p.info["cmdline"] for p in psutil.process_iter(["cmdline"])
                                if token in " ".join(p.info["cmdline"] or [])]
            time.sleep(0.5)
        master_out = master.communicate(timeout=240)[0]
        admitted_out = [p.communicate(timeout=60)[0] for p in admitted]
    finally:
        for p in (rogue, master, *outsiders, *admitted):
            if p.poll() is None:
                p.kill()
    assert master.returncode == 0, master_out + "\n".join(said + admitted_out)
    assert [p.returncode for p in (*outsiders, *admitted)] == [2, 2, 0, 0], "\n".join(said + admitted_out)
    for text, reason in zip(said, (WRONG_TOKEN, NO_TOKEN)):
        line = next(line for line in text.splitlines() if "rejected this worker" in line)
        assert f"({reason})" in line and JOIN_TOKEN_ENV in line and "--join-token-file" in line
    assert argv_with_token == []  # the token is never on a command line, only its file's path
    variant = next((tmp_path / "results").glob("*/v"))
    records = read_jsonl(variant / "requests.jsonl")
    assert sorted(r["prompt_index"] for r in records) == list(range(20))
    ledger = json.loads((variant / "workers.json").read_text())
    rejected = ledger["rejected_workers"]
    assert len(rejected) == 3 and rejected["rogue_1"]["reason"] == WRONG_TOKEN
    assert sorted(r["reason"] for r in rejected.values()) == sorted([WRONG_TOKEN, WRONG_TOKEN, NO_TOKEN])
    dropped = rejected["rogue_1"]["dropped"]  # it asked for prompts, sent records and Locust stats: all dropped
    assert all(dropped.get(kind, 0) > 0 for kind in ("tokenswarm_take", "tokenswarm_records", "stats"))
    workers = {r["worker"] for r in records}
    assert len(workers) == 2 and not workers & {*rejected, *(f"w{w}" for w in rejected)}
    assert sum(ledger["records_by_worker"].values()) == 20
    seen = set(json.loads(rogue_seen.read_text()))
    assert seen <= {"ack", MSG_CHALLENGE, MSG_VERDICT, "quit"}  # no tokenswarm_prompts, no spawn: no prompt, no user
    summary = json.loads((variant / "summary.json").read_text())
    assert summary["requests"]["completed"] == 20 and summary["locust_crosscheck"]["requests"] == 20
    assert summary["crosscheck_agrees"] is True  # the rogue's forged Locust stats never reached the counts
    log = (variant / "locust.log").read_text()
    assert all(f"worker {w} rejected" in log for w in rejected)
    assert not [p for p in variant.parent.rglob("*") if p.is_file() and token in p.read_text(errors="replace")]


def test_a_plain_master_ends_the_run_when_its_worker_finds_the_server_lost(
        tmp_path: Path, embedded: Callable[..., EmbeddedLauncher]) -> None:
    """Plain Locust (`locust --master` and `--worker`, no orchestrator): the worker's users find every
    connection refused, the worker tells the master, and the master ends the run long before its run time."""
    from orchestrate.server.launchers.base import free_port
    server = embedded(parallel=2)
    port = free_port("127.0.0.1")
    env = {**os.environ, JOIN_TOKEN_ENV: "a-token-for-this-test"}
    records = tmp_path / "requests.jsonl"
    common = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE)]
    master = subprocess.Popen([*common, "--headless", "--master", "--master-bind-host", "127.0.0.1",
                               "--master-bind-port", str(port), "--expect-workers", "1", "-u", "2", "-r", "2",
                               "--host", server.url or "", "--dataset", "synthetic:400", "--num-prompts", "200",
                               "--max-tokens", "200", "--records-file", str(records), "--server-lost-after", "2",
                               "-t", "180s"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    worker = subprocess.Popen([*common, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        while not (records.exists() and records.read_text().count("\n") >= 3):
            assert time.monotonic() < deadline and master.poll() is None, "no records from the worker"
            time.sleep(0.2)
        pid = server.pid()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        out, _ = master.communicate(timeout=60)
        assert time.monotonic() - killed < 30, out  # the 2 s window and the quit, not the 180 s run time
        worker_out, _ = worker.communicate(timeout=30)
    finally:
        for proc in (master, worker):
            proc.kill()
    assert "found the server lost" in out, out[-3000:]
    assert "server lost; stopping" in worker_out, worker_out[-3000:]
    sent = read_jsonl(records)
    assert 3 <= len(sent) < 200  # what the server answered is kept; the rest was never sent
    assert not any(r["error_class"] == "connection_refused" for r in sent)  # refusals retried, never records


def test_a_web_ui_ramp_with_local_workers_places_every_request_by_the_forms_count(tmp_path: Path) -> None:
    """``--ui --workers 2``: each worker runs only its share of the users, yet its records carry the total the
    form set (the master hands it on with each spawn), so the steps are the form's counts and hold every request."""
    import requests

    from orchestrate.server.launchers.base import free_port
    scenario = write_scenario(tmp_path, load={"users": 4, "num_prompts": 500, "max_tokens": 256, "ignore_eos": True,
                                              "dataset": "synthetic:2000"})  # more than 12 s of work: Stop ends it
    results, port = tmp_path / "results", free_port()
    proc = subprocess.Popen([sys.executable, "-m", "orchestrate.cli", "run", str(scenario), "--results-dir",
                             str(results), "--ui", "--ui-quit-on-stop", "--web-port", str(port), "--workers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:  # the server starts, the prompts are sampled, then both workers join the master
            try:
                if requests.get(f"{url}/stats/requests", timeout=1).json().get("worker_count") == 2:
                    break
            except (requests.ConnectionError, ValueError):
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.3)
        for users in (4, 2):  # Start, then Edit
            assert requests.post(f"{url}/swarm", data={"user_count": users, "spawn_rate": 4}, timeout=10).json()["success"]
            time.sleep(6)
        assert requests.post(f"{url}/stop", timeout=10).ok  # the variant ends with the test (--ui-quit-on-stop)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out
    (variant,) = results.glob("*/v")
    summary, records = json.loads((variant / "summary.json").read_text()), read_jsonl(variant / "requests.jsonl")
    assert (summary["status"], summary["stopped_by"]) == ("completed", "ui_stop"), out
    assert len({r["worker"] for r in records}) == 2, out  # both workers sent
    assert {r["target_users"] for r in records} == {4, 2}  # the form's totals, not a worker's share of 2 or 1
    steps = summary["ui_steps"]
    assert steps["placed_by"] == "send" and steps["values"] == [4, 2], steps
    assert sum(s["sent"] for s in steps["steps"]) == summary["requests"]["sent"] == len(records)
    assert undocumented_keys(summary) == [], "a web UI run's every key is a row of docs/results.md"
