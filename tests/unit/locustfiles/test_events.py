"""locustfiles/events.py: each finished record becomes Locust rows, a records line and a dispenser count.

Locust monkey-patches at import and must come before ``requests``/``ssl``, which this test process has
already imported, so Locust runs in a fresh interpreter (``SCRIPT``): real ``Environment``s with
tokenswarm installed from parsed flags (a prompts file, a records file), records fired by hand on the
hooks ``events.install`` adds, and what Locust's stats, the records file and the runner then hold
printed as JSON. (users.py's test sends real requests through the same wiring.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from locustfiles.dataset import Prompt
from tests.helpers import ROOT

SCRIPT = r"""
import json, subprocess, sys
import gevent
from locust import User, task
from locust.argument_parser import get_parser
from locust.env import Environment
from locustfiles import conversations, events, options
from locustfiles.records import CANCELLED, ERROR, OK, RequestRecord

folder = sys.argv[1]
parser = get_parser(default_config_files=[])
options.add_arguments(parser)
conversations.add_arguments(parser)
out = {}

class Idle(User):
    @task
    def nothing(self):
        pass

def start(name, *flags):
    opts = parser.parse_args(["--prompts-file", folder + "/prompts.jsonl", "--records-file",
                              folder + "/" + name + "/requests.jsonl", *flags])
    env = Environment(user_classes=[Idle], parsed_options=opts)
    env.create_local_runner()
    events.install(env)
    env.events.test_start.fire(environment=env)
    return env

def record(i, **kw):
    base = dict(request_id=f"local-{i}", prompt_index=i, worker="local", send_ts=1000.0 + i)
    return RequestRecord(**{**base, **kw})

def entries(env):
    return {f"{m} {n}": [e.num_requests, e.num_failures, e.total_response_time, e.total_content_length]
            for (n, m), e in env.stats.entries.items()}

# rows: a completed reply, one with no content (EOS at once), a failure, a cancelled one
env = start("rows", "--num-prompts", "4")
for _ in range(4):
    env.tokenswarm.dispenser.take()
fire = env.tokenswarm.record.fire
fire(record=record(0, status=OK, ttft_ms=30.0, tpot_ms=4.0, e2e_ms=70.0, prompt_tokens=100, output_tokens=11))
fire(record=record(1, status=OK, ttft_ms=None, tpot_ms=None, e2e_ms=5.0, prompt_tokens=50, output_tokens=1))
fire(record=record(2, status=ERROR, error_class="http_500:server_error", e2e_ms=9.0, output_tokens=3))
out["before_cancel"] = env.runner.state
fire(record=record(3, status=CANCELLED, error_class="cancelled", e2e_ms=12.0))
gevent.sleep(0.1)
out["rows"] = entries(env)
out["total"] = [env.stats.total.num_requests, env.stats.total.num_failures]
out["errors"] = [[e.name, e.method, str(e.error), e.occurrences] for e in env.stats.errors.values()]
out["written"] = env.tokenswarm.records_written
out["finished"] = env.tokenswarm.dispenser.finished
out["after_last"] = env.runner.state  # the last prompt's request ended: the run stops
env.events.quitting.fire(environment=env)
out["closed"] = env.tokenswarm.records_file is None

# a full disk: the write fails, the file is let go, the run stops
env = start("full")
env.tokenswarm.records_file.close()
env.tokenswarm.records_file = open("/dev/full", "w", buffering=1)
env.tokenswarm.record.fire(record=record(0, status=OK, ttft_ms=1.0, e2e_ms=2.0))
gevent.sleep(0.1)
out["full"] = [env.tokenswarm.records_file is None, env.tokenswarm.records_written, env.runner.state]

# a bug in the user stops the run at once
env = start("bug")
env.events.user_error.fire(user_instance=None, exception=ValueError("bug"), tb=None)
gevent.sleep(0.1)
out["user_error"] = env.runner.state

# the orchestrator that started Locust is gone
gone = subprocess.Popen([sys.executable, "-c", "pass"])
gone.wait()
env = start("orphan", "--exit-with-parent", str(gone.pid))
gevent.sleep(1.5)
out["orphan"] = env.runner.state

# a bad prompts file: one line on stderr, exit 2, before any user
try:
    start("bad", "--prompts-file", folder + "/missing.jsonl")
except SystemExit as exc:
    out["bad_exit"] = exc.code
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("events")
    prompts = [Prompt(index=i, conversation_id=f"c{i}", messages=({"role": "user", "content": f"q{i}"},),
                      prompt_tokens=10, max_tokens=16) for i in range(6)]
    (folder / "prompts.jsonl").write_text("".join(p.to_json() + "\n" for p in prompts), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(folder)], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["stderr"] = proc.stderr
    out["folder"] = folder
    return out


def test_each_outcome_makes_its_locust_rows(seen: dict[str, Any]) -> None:
    """Request row: E2E, output tokens as length (0 for a failure); TTFT row: prompt tokens as length;
    NO_CONTENT for a reply without content; nothing for a request the stop cut off."""
    assert seen["rows"] == {
        "POST /v1/chat/completions": [3, 1, 70.0 + 5.0 + 9.0, 11 + 1 + 0],
        "METRIC TTFT": [1, 0, 30.0, 100],
        "METRIC TPOT": [1, 0, 4.0, 11],
        "METRIC NO_CONTENT": [1, 0, 5.0, 50],
    }
    assert seen["errors"] == [["/v1/chat/completions", "POST", "http_500:server_error", 1]]  # grouped by class


def test_the_aggregated_row_counts_requests_not_metric_rows(seen: dict[str, Any]) -> None:
    assert seen["total"] == [3, 1]  # not 6: TTFT, TPOT and NO_CONTENT are figures of those requests


def test_every_record_is_written_and_counted_by_the_dispenser(seen: dict[str, Any]) -> None:
    lines = (seen["folder"] / "rows" / "requests.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["request_id"] for line in lines] == ["local-0", "local-1", "local-2", "local-3"]
    assert json.loads(lines[3])["status"] == "cancelled"  # in the records, not in Locust's rows
    assert seen["written"] == 4 and seen["finished"] == 4
    assert seen["before_cancel"] == "ready" and seen["after_last"] == "stopped"
    assert seen["closed"] is True


def test_a_full_disk_stops_the_run_and_keeps_what_was_written(seen: dict[str, Any]) -> None:
    assert seen["full"] == [True, 0, "stopped"]
    assert "cannot write records" in seen["stderr"]


def test_a_user_error_stops_the_run(seen: dict[str, Any]) -> None:
    assert seen["user_error"] == "stopped"
    assert "user error ValueError('bug')" in seen["stderr"]


def test_locust_quits_when_the_orchestrator_is_gone(seen: dict[str, Any]) -> None:
    assert seen["orphan"] == "stopped"
    assert "the orchestrator (pid" in seen["stderr"]


def test_a_bad_prompts_file_exits_2_with_one_line(seen: dict[str, Any]) -> None:
    assert seen["bad_exit"] == 2
    assert "tokenswarm: error: --prompts-file" in seen["stderr"] and "missing.jsonl" in seen["stderr"]
