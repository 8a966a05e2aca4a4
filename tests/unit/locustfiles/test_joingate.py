"""locustfiles/joingate.py: a master lets in only the workers that prove its join token.

Locust monkey-patches at import and must come before ``requests``/``ssl``, which this test process has
already imported, so the runners live in a fresh interpreter (``SCRIPT``): a real Locust master bound to
127.0.0.1 and real workers connected to it over ZeroMQ, all in that one process (gevent), with the
right token, a wrong one, none, and a plain Locust worker that never asks to join; ``SILENT_SCRIPT``
adds a worker that asks, is challenged and never answers (``JOIN_TIMEOUT_S`` set to 1 s). (Separate processes
and ``tokenswarm run``: tests/integration/test_distributed_run.py.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.helpers import ROOT

COMMON = r"""
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
"""
"""What both scripts define after their imports: a free port, an idle user class, a polling wait."""

SCRIPT = r"""
import json, socket, time
import gevent
from locust import User, constant, task
from locust.env import Environment
from locustfiles import joingate

joingate.JOIN_TIMEOUT_S = 0.5

""" + COMMON + r"""
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


SILENT_SCRIPT = r"""
import json, socket, time
import gevent
from locust import User, __version__, constant, task
from locust.env import Environment
from locust.rpc import Message, rpc
from locustfiles import joingate
from locustfiles.admission import MSG_CHALLENGE, MSG_JOIN, MSG_VERDICT
from locustfiles.distributed import MSG_PROMPTS, MSG_TAKE

joingate.JOIN_TIMEOUT_S = 1.0  # before the master exists: its timer reads the module constant

""" + COMMON + r"""
port = free_port()
master = Environment(user_classes=[Idle]).create_master_runner("127.0.0.1", port)
served = []
def on_take(environment, msg, **kw):  # stands in for the dispenser: any take that reaches it gets a prompt
    served.append(msg.node_id)
    master.send_message(MSG_PROMPTS, {"prompts": ["p"], "done": False, "due": []}, msg.node_id)
master.register_message(MSG_TAKE, on_take)
gate = joingate.install_master(master, "s3cret")

# the control: a worker with the token, admitted, asks for prompts and gets them
env = Environment(user_classes=[Idle])
right = env.create_worker_runner("127.0.0.1", port)
right_prompts = []
right.register_message(MSG_PROMPTS, lambda msg, **kw: right_prompts.append(msg.data["prompts"]))
joingate.install_worker(env, right, "s3cret")

# the silent worker: connects, asks to join, takes the challenge, never answers it, keeps asking for prompts
client = rpc.Client("127.0.0.1", port, "silent")
got = []
def listen():
    while True:
        msg = client.recv()
        got.append({"type": msg.type, "t": time.monotonic(), "data": msg.data})
gevent.spawn(listen)
def send(msg_type, data=None):
    client.send(Message(msg_type, data, "silent"))
before = {}
def snapshot():  # half the timeout after it connected
    before.update(rejected=sorted(gate.rejected), clients=sorted(master.clients.keys()))
connected = time.monotonic()  # the master's timer starts when it gets this first client_ready, or later
send("client_ready", __version__)
gevent.spawn_later(0.5, snapshot)
while not any(m["type"] == "ack" for m in got):
    gevent.sleep(0.05)
    send("client_ready", __version__)
send(MSG_JOIN)
def ask():
    while True:
        send(MSG_TAKE, {"want": 4})
        gevent.sleep(0.1)
gevent.spawn(ask)

wait_for(lambda: right.client_id in gate.admitted)
right.send_message(MSG_TAKE, {"want": 1})
wait_for(lambda: "silent" in gate.rejected)
gevent.sleep(0.5)  # its takes after the rejection
out = {
    "right": right.client_id, "right_prompts": right_prompts, "served": sorted(set(served)),
    "before": before, "clients": sorted(master.clients.keys()),
    "rejected": gate.to_json()["rejected_workers"],
    "got": [m["type"] for m in got],
    "verdict": [m["data"] for m in got if m["type"] == MSG_VERDICT],
    "verdict_after_s": [m["t"] - connected for m in got if m["type"] == MSG_VERDICT],
    "challenged": any(m["type"] == MSG_CHALLENGE for m in got),
}
master.quit()
right.greenlet.kill(block=False)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def silent() -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", SILENT_SCRIPT], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def test_a_worker_that_never_proves_the_token_is_rejected_after_the_timeout(silent: dict[str, Any]) -> None:
    """Asked to join, challenged, silent: held (not rejected) until JOIN_TIMEOUT_S, then told why and quit."""
    assert silent["challenged"]
    assert silent["before"]["rejected"] == []  # half the timeout in: still held, not yet judged
    assert silent["rejected"]["silent"]["reason"] == "no proof of the join token within 1 s"
    assert silent["verdict"] == [{"admitted": False, "reason": "no proof of the join token within 1 s"}]
    (after_s,) = silent["verdict_after_s"]
    assert 1.0 <= after_s < 4.0  # the timeout, counted from its first client_ready
    assert silent["got"].index("quit") > silent["got"].index("tokenswarm_verdict")


def test_a_worker_held_or_rejected_gets_no_prompts(silent: dict[str, Any]) -> None:
    """Its takes never reach the dispenser, before or after the rejection; the admitted worker's do."""
    assert silent["served"] == [silent["right"]] and silent["right_prompts"] == [["p"]]
    assert "tokenswarm_prompts" not in silent["got"]
    assert "silent" not in silent["before"]["clients"] and silent["clients"] == [silent["right"]]  # not counted
    assert silent["rejected"]["silent"]["dropped"].get("tokenswarm_take", 0) >= 2  # thrown away, and counted
