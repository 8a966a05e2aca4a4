"""locustfiles/runstate.py: the open-loop clock, and a run's per-process state (records file, request ids,
what a lost server does).

The clock and the records file are tested here directly (gevent sleeps without Locust). Request ids
and the server-lost stop need Locust's runners, and Locust monkey-patches at import, which this test
process must not be; those run in a fresh interpreter (``SCRIPT``), as in test_webui.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import gevent
import pytest

from locustfiles.dataset import Prompt
from locustfiles.runstate import ArrivalClock, LlmRun
from tests.helpers import ROOT


def prompt(index: int) -> Prompt:
    return Prompt(index=index, conversation_id=f"c{index}", messages=({"role": "user", "content": "q"},),
                  prompt_tokens=3, max_tokens=8)


def test_the_clock_sleeps_until_a_prompt_is_due_and_not_when_it_is_late() -> None:
    clock = ArrivalClock()
    now = time.time()
    clock.plan([prompt(5), prompt(6)], [0.0, 0.15], now - 0.5)  # 5 is overdue; 6 too
    t0 = time.perf_counter()
    assert clock.wait(5) == now - 0.5 and clock.wait(6) == pytest.approx(now - 0.35)
    assert time.perf_counter() - t0 < 0.05
    clock.plan([prompt(7)], [0.2], time.time())
    t0 = time.perf_counter()
    due = clock.wait(7)
    assert due is not None and time.time() >= due
    assert 0.19 <= time.perf_counter() - t0 < 0.3
    assert clock.wait(99) is None  # not scheduled: a closed-loop prompt goes at once


def test_a_worker_learns_due_times_from_the_master() -> None:
    clock = ArrivalClock()
    clock.learn([3, 4], [100.0, 101.5])
    assert clock.due == {3: 100.0, 4: 101.5}


def test_sleeping_users_stay_cooperative() -> None:
    """Many users waiting for their times do not block each other (gevent sleeps)."""
    clock = ArrivalClock()
    start = time.time()
    clock.plan([prompt(i) for i in range(20)], [0.01 * i for i in range(20)], start)
    woke: list[float] = []
    jobs = [gevent.spawn(lambda i=i: woke.append(time.time() - (clock.wait(i) or 0))) for i in range(20)]
    gevent.joinall(jobs, timeout=2)
    assert len(woke) == 20 and max(woke) < 0.02


def test_the_plan_gives_the_kth_prompt_handed_out_the_kth_offset() -> None:
    """Due times follow the order prompts are dealt in, not their index in the sample."""
    clock = ArrivalClock()
    clock.plan([prompt(9), prompt(2), prompt(5)], [0.0, 0.5, 2.0], 100.0)
    assert clock.due == {9: 100.0, 2: 100.5, 5: 102.0}
    clock.plan([prompt(1)], [0.25], 200.0)  # a new test start replaces the old schedule
    assert clock.due == {1: 200.25}


def new_run() -> LlmRun:
    return LlmRun(environment=None)  # type: ignore[arg-type]  # the records file needs no Locust


def test_the_records_file_and_its_folders_are_made_on_open(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "requests.jsonl"
    run = new_run()
    run.open_records(str(path))
    assert run.records_file is not None and path.is_file()
    run.records_file.write('{"x":1}\n')
    assert path.read_text() == '{"x":1}\n'  # line-buffered: there before any flush or close
    run.close_records()
    assert run.records_file is None
    run.close_records()  # twice (quitting after a full disk closed it) is harmless


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device that is always full)")
def test_a_full_disk_at_close_keeps_the_run_going() -> None:
    """The last partial line cannot be flushed on a full disk: closing says nothing and lets go of the file."""
    run = new_run()
    run.open_records("/dev/full")
    assert run.records_file is not None
    run.records_file.write('{"partial":')  # no newline: still in the buffer
    run.close_records()
    assert run.records_file is None


def test_a_run_starts_with_no_dispenser_schedule_or_prompts() -> None:
    run = new_run()
    assert run.dispenser is None and run.arrivals is None and run.prompts is None and run.records_file is None
    assert run.records_written == 0 and run.server_watch.lost is False


SCRIPT = r"""
import json
import gevent
from locust import User, task
from locust.env import Environment
from locust.runners import WorkerRunner
from locustfiles.runstate import LlmRun

class Idle(User):
    @task
    def nothing(self):
        pass

out = {}
env = Environment(user_classes=[Idle])
runner = env.create_local_runner()
run = LlmRun(env)
out["ids"] = [run.next_request_id() for _ in range(3)]
runner.target_user_count = 6
out["target"] = run.target_users
out["state_before"] = runner.state
for _ in range(3):  # the watch's window passes with every connection refused
    run.server_watch.window_s = 0.0
    run.server_watch.refused()
gevent.sleep(0.2)
out["state_after"] = runner.state

worker_env = Environment(user_classes=[Idle])
worker = WorkerRunner.__new__(WorkerRunner)  # a worker's identity only: no master to connect to
worker.client_id = "host1_abc"
worker_env.runner = worker
worker_run = LlmRun(worker_env)
out["worker_ids"] = [worker_run.next_request_id(), worker_run.next_request_id()]
worker.target_user_count = 3  # its share
out["worker_target_headless"] = worker_run.target_users
worker_env.parsed_options = type("Options", (), {"ui_target_users": 6})()  # the form's, from the master
out["worker_target_ui"] = worker_run.target_users
quit_called = []
worker.quit = lambda: quit_called.append(True)
sent = []
worker.send_message = lambda kind, data=None, **_kw: sent.append([kind, data])
worker_run.on_server_lost(5.0)
gevent.sleep(0.1)
out["worker_quit"] = bool(quit_called)
out["worker_sent"] = sent
print(json.dumps(out))
"""


def test_request_ids_name_the_process_and_a_lost_server_stops_the_local_runner_only() -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["ids"] == ["local-1", "local-2", "local-3"]
    assert out["worker_ids"] == ["whost1_abc-1", "whost1_abc-2"]  # unique across workers of one run
    assert out["target"] == 6  # the count the run is set to
    assert out["worker_target_headless"] is None and out["worker_target_ui"] == 6  # never a worker's share
    assert out["state_before"] == "ready" and out["state_after"] == "stopped"  # ServerWatch's on_lost quits
    assert out["worker_quit"] is False  # a worker's users stop one by one; the master ends the run
    assert out["worker_sent"] == [["tokenswarm_server_lost", {"refused_s": 5.0}]]  # told to the master
    assert "server lost" in proc.stderr
