"""locustfiles/joingate.py: a master lets in only the workers that prove its join token.

Locust monkey-patches at import and must come before ``requests``/``ssl``, which this test process has
already imported, so the runners live in a fresh interpreter (``SCRIPT``): a real Locust master bound to
127.0.0.1 and real workers connected to it over ZeroMQ, all in that one process (gevent), with the
right token, a wrong one, none, and a plain Locust worker that never asks to join. (Separate processes
and ``tokenswarm run``: tests/integration/test_distributed.py.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, socket, time
import gevent
from locust import User, constant, task
from locust.env import Environment
from locustfiles import joingate

joingate.JOIN_TIMEOUT_S = 0.5

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

class Idle(User):
    wait_time = constant(1)
    @task
    def nothing(self):
        pass

def wait_for(condition, timeout=5.0):
    t0 = time.monotonic()
    while not condition() and time.monotonic() - t0 < timeout:
        gevent.sleep(0.02)

out = {}
for master_token in ("s3cret", None):
    port = free_port()
    master = Environment(user_classes=[Idle]).create_master_runner("127.0.0.1", port)
    gate = joingate.install_master(master, master_token)
    workers = {}
    for name, token in [("right", "s3cret"), ("wrong", "guess"), ("none", None), ("plain", "-")]:
        env = Environment(user_classes=[Idle])
        runner = env.create_worker_runner("127.0.0.1", port)
        if token != "-":  # "plain": a Locust worker without tokenswarm's side of the gate
            joingate.install_worker(env, runner, token)
        workers[name] = (env, runner)
    expected = 3 if master_token else 0
    wait_for(lambda: len(gate.rejected) >= expected and len(master.clients) >= (1 if master_token else 4))
    master.start(4, 100)
    wait_for(lambda: sum(r.user_count for e, r in workers.values()) >= 4, 3.0)
    gevent.sleep(0.2)
    ids = {runner.client_id: name for name, (env, runner) in workers.items()}
    out[str(master_token)] = {
        "clients": sorted(ids[c] for c in master.clients.keys()),
        "users": {name: runner.user_count for name, (env, runner) in workers.items()},
        "rejected": {ids[w]: r for w, r in gate.to_json()["rejected_workers"].items()},
        "exit": {name: env.process_exit_code for name, (env, runner) in workers.items()},
    }
    master.quit()
    for env, runner in workers.values():
        runner.greenlet.kill(block=False)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def seen() -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["stderr"] = proc.stderr
    return out


def test_only_the_worker_with_the_token_joins_and_gets_users(seen: dict[str, Any]) -> None:
    gated = seen["s3cret"]
    assert gated["clients"] == ["right"]  # what Locust counts toward --expect-workers and deals users to
    assert gated["users"] == {"right": 4, "wrong": 0, "none": 0, "plain": 0}


def test_each_stranger_is_rejected_once_with_its_reason(seen: dict[str, Any]) -> None:
    rejected = seen["s3cret"]["rejected"]
    assert {name: r["reason"] for name, r in rejected.items()} == {
        "wrong": "wrong join token", "none": "it has no join token",
        "plain": "no proof of the join token within 0.5 s"}  # never asked: held, then timed out
    assert all(sum(r["dropped"].values()) >= 1 for name, r in rejected.items() if name != "plain")  # its stats


def test_a_rejected_worker_exits_2_and_says_how_to_get_in(seen: dict[str, Any]) -> None:
    assert seen["s3cret"]["exit"] == {"right": None, "wrong": 2, "none": 2, "plain": None}
    assert seen["stderr"].count("the master rejected this worker") == 2
    assert "TOKENSWARM_JOIN_TOKEN" in seen["stderr"]


def test_a_master_without_a_token_is_open_to_every_worker_with_a_warning(seen: dict[str, Any]) -> None:
    open_master = seen["None"]
    assert open_master["clients"] == ["none", "plain", "right", "wrong"] and open_master["rejected"] == {}
    assert sum(open_master["users"].values()) == 4
    assert "warning: no join token" in seen["stderr"]
