"""locustfiles/users.py: the request a user sends, and the record it makes of each outcome, over real HTTP.

Locust monkey-patches at import and must come before ``requests``/``ssl``, which this test process has
already imported, so the user runs in a fresh interpreter (``SCRIPT``): a real Locust ``Environment``
with tokenswarm installed (``events.install``: prompts file, records file, dispenser), one
``ChatStreamUser`` whose ``chat()`` is called by hand against reference servers running in threads of
this process (``tests/fixtures/refserver_thread.py``) and against a port nobody listens on. The script
prints what it saw as JSON; the records are read from the records file the run wrote, and the server's
own truth file says when each request arrived and each chunk left.
"""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
from typing import Any

import pytest

from locustfiles.dataset import Prompt
from orchestrate.server.launchers.base import free_port
from orchestrate.tools.refserver_timing import Timing
from tests.fixtures.raw_http import RawHttpServer
from tests.fixtures.refserver_thread import refserver_thread
from tests.helpers import ROOT, read_jsonl

TTFT_MS = 20.0
ITL_MS = 2.0
LONG_TOKENS = 300
"""The cancelled request's reply: 20 ms + 300 × 2 ms, cut after 150 ms."""

SCRIPT = r"""
import json, sys, time
import gevent
from locust import task
from locust.argument_parser import get_parser
from locust.env import Environment
from locust.exception import StopUser
from locustfiles import conversations, events, options
from locustfiles.users import ChatStreamUser, body_reader

folder, ok_url, close_url, dead_url, raw_url = sys.argv[1:6]
parser = get_parser(default_config_files=[])
options.add_arguments(parser)
conversations.add_arguments(parser)
out = {}

def start(url, name, *flags):
    class User(ChatStreamUser):
        host = url
        @task
        def send(self):
            self.chat()
    opts = parser.parse_args(["--prompts-file", folder + "/prompts.jsonl", "--records-file",
                              folder + "/" + name + ".jsonl", *flags])
    env = Environment(user_classes=[User], parsed_options=opts)
    env.create_local_runner()
    events.install(env)
    env.events.test_start.fire(environment=env)
    user = User(env)
    return env, user

# a: three answered requests (two completed, one 404), then one cancelled mid-stream
env, user = start(ok_url, "a", "--model", "m1", "--no-cache-prompt", "--ignore-eos")
env.runner.target_user_count = 3  # as the web UI's form sets it
out["body"] = user.request_body(env.tokenswarm.prompts[0])
out["headers"] = user.headers
user.on_start()
user.chat()
user.chat()
user.path = "/nope"
user.chat()
user.path = "/v1/chat/completions"
reading = gevent.spawn(user.chat)
gevent.sleep(0.15)
reading.kill()
out["cancel_raised"] = type(reading.value).__name__  # killed: GreenletExit went through chat()
real_request = user.client.request
def slow_request(*args, **kwargs):
    gevent.sleep(0.03)  # the client's own work before the send (Locust's request path), made long
    return real_request(*args, **kwargs)
user.client.request = slow_request
user.chat()
env.tokenswarm.close_records()

# b: the server closes the kept-alive connection after each reply
env, user = start(close_url, "b")
out["plain_body"] = user.request_body(env.tokenswarm.prompts[0])
user.on_start()
user.chat()
gevent.sleep(0.05)
user.chat()
env.tokenswarm.close_records()

# c: every connection refused: retried until the server counts as lost, then the user stops, no record
env, user = start(dead_url, "c", "--server-lost-after", "0.3")
t0 = time.monotonic()
try:
    user.chat()
except StopUser:
    out["stopped_after_s"] = time.monotonic() - t0
out["lost"] = env.tokenswarm.server_watch.lost
out["refusals"] = env.tokenswarm.server_watch.refusals
env.tokenswarm.close_records()

# d: stopped while waiting to retry a refused connection: never sent, so no record either
env, user = start(dead_url, "d", "--server-lost-after", "30")
waiting = gevent.spawn(user.chat)
gevent.sleep(0.2)
waiting.kill()
out["d_refusals"] = env.tokenswarm.server_watch.refusals
env.tokenswarm.close_records()

# e: a server that drops a request without answering, or cuts a stream after its headers (RawServer)
env, user = start(raw_url, "e")
user.on_start()
user.path = "/drop-second"
user.chat()  # the opened connection's first request: answered
user.chat()  # its second: dropped unanswered, so sent again once on a new connection
user.path = "/always-drop"
user.chat()  # dropped on the kept-alive one, then again on a new one: an error
user.path = "/cut"
user.chat()
env.tokenswarm.close_records()

class Lines:
    def readline(self, sep):
        return b"data: x" + sep
out["fallback"] = body_reader(Lines())().decode()
print(json.dumps(out))
"""


class RawServer(RawHttpServer):
    """Streams two content events by hand (chunked, kept alive), or misbehaves by path: ``/drop-second``
    closes a connection on its second request without answering, ``/always-drop`` on any request,
    ``/cut`` after the headers and two events."""

    EVENTS = [b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n',
              b'data: {"choices":[{"index":0,"delta":{"content":"b"}}]}\n\n',
              b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\ndata: [DONE]\n\n']

    def reply(self, conn: socket.socket, path: bytes, served: int) -> bool:
        if path == b"/always-drop" or (path == b"/drop-second" and served > 1):
            return False
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        for event in self.EVENTS[:2] if path == b"/cut" else self.EVENTS:
            conn.sendall(b"%x\r\n%s\r\n" % (len(event), event))
        if path == b"/cut":
            return False
        conn.sendall(b"0\r\n\r\n")
        return True


def prompt(index: int, max_tokens: int) -> Prompt:
    return Prompt(index=index, conversation_id=f"c{index}", messages=({"role": "user", "content": f"say {index}"},),
                  prompt_tokens=2, max_tokens=max_tokens)


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One script run: what it printed, the records of each part, and the first server's truth rows."""
    folder = tmp_path_factory.mktemp("users")
    prompts = [prompt(0, 8), prompt(1, 5), prompt(2, 8), prompt(3, LONG_TOKENS), prompt(4, 8), prompt(5, 8)]
    (folder / "prompts.jsonl").write_text("".join(p.to_json() + "\n" for p in prompts), encoding="utf-8")
    truth = folder / "truth.csv"
    env = {**os.environ, "TOKENSWARM_API_KEY": "sk-test"}
    raw = RawServer()
    with refserver_thread(Timing(ttft_ms=TTFT_MS, itl_ms=ITL_MS), truth) as ok, \
            refserver_thread(Timing(ttft_ms=1.0, itl_ms=1.0, close_after=1)) as closing:
        proc = subprocess.run([sys.executable, "-c", SCRIPT, str(folder), ok.url, closing.url,
                               f"http://127.0.0.1:{free_port('127.0.0.1')}", raw.url],
                              capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
        connections = closing.connections
    raw.close()
    raw_connections = raw.connections
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["closing_connections"] = connections
    out["raw_connections"] = raw_connections
    for part in "abcde":
        path = folder / f"{part}.jsonl"
        out[part] = read_jsonl(path) if path.exists() else []
    out["truth"] = list(csv.DictReader(truth.open(encoding="utf-8")))
    return out


def test_the_request_streams_with_usage_and_asks_for_no_compression(seen: dict[str, Any]) -> None:
    assert seen["body"] == {"messages": [{"role": "user", "content": "say 0"}], "max_tokens": 8, "stream": True,
                            "stream_options": {"include_usage": True}, "model": "m1", "cache_prompt": False,
                            "ignore_eos": True}
    assert seen["plain_body"] == {"messages": [{"role": "user", "content": "say 0"}], "max_tokens": 8,
                                  "stream": True, "stream_options": {"include_usage": True}}
    assert seen["headers"]["Accept-Encoding"] == "identity"  # a gzipped stream cannot be timed chunk by chunk
    assert seen["headers"]["Accept"] == "text/event-stream"
    assert seen["headers"]["Authorization"] == "Bearer sk-test"  # from --api-key-env's default variable


def test_a_completed_stream_is_timed_chunk_by_chunk(seen: dict[str, Any]) -> None:
    first, second = seen["a"][0], seen["a"][1]
    assert [r["request_id"] for r in seen["a"]] == ["local-1", "local-2", "local-3", "local-4", "local-5"]
    assert first["status"] == "ok" and first["http_status"] == 200 and first["prompt_index"] == 0
    assert first["n_chunks"] == 8 and first["output_tokens"] == 8 and first["output_tokens_source"] == "usage"
    assert second["n_chunks"] == 5 and second["max_tokens"] == 5
    assert first["target_users"] == second["target_users"] == 3  # the count the run was set to when it left
    for r in (first, second):
        assert r["ttft_ms"] >= TTFT_MS  # the server waits 20 ms after the request arrived
        assert r["e2e_ms"] >= TTFT_MS + (r["n_chunks"] - 1) * ITL_MS  # every chunk is due from the arrival
        assert r["chunk_offsets_ms"][0] == pytest.approx(r["ttft_ms"], abs=1e-3)
        assert r["chunk_offsets_ms"] == sorted(r["chunk_offsets_ms"])
    # the connection was opened at on_start: its cost reported with the first request only
    assert first["connect_ms"] is not None and first["connect_ms"] > 0 and first["reconnect"] is False
    assert second["connect_ms"] is None


def test_the_clock_starts_when_the_request_left(seen: dict[str, Any]) -> None:
    """The server's truth (same host clock): each request's arrival is just after the record's send, and its
    first content chunk left TTFT after the send, to within a few ms of loopback and scheduling."""
    truth = seen["truth"]
    arrive = {row["request_id"]: float(row["ts"]) for row in truth if row["kind"] == "arrive"}
    first_content = {row["request_id"]: float(row["ts"]) for row in truth
                     if row["kind"] == "content" and row["index"] == "1"}
    for r in (*seen["a"][:2], seen["a"][4]):
        rid = r["request_id"]  # sent as X-Request-Id, so the server logged it under the same id
        assert 0.0 <= (arrive[rid] - r["send_ts"]) * 1000 < 5.0
        assert (first_content[rid] - r["send_ts"]) * 1000 == pytest.approx(r["ttft_ms"], abs=5.0)


def test_the_clients_own_work_before_the_send_is_not_in_the_ttft(seen: dict[str, Any]) -> None:
    """30 ms spent in the request path before the bytes left (``slow_request``) are not the server's."""
    r = seen["a"][4]
    assert r["status"] == "ok" and r["n_chunks"] == 8
    assert TTFT_MS <= r["ttft_ms"] < TTFT_MS + 15.0


def test_an_http_error_is_an_error_record_classed_by_status(seen: dict[str, Any]) -> None:
    r = seen["a"][2]
    assert r["status"] == "error" and r["http_status"] == 404
    assert r["error_class"] == "http_404:not_found_error" and "File Not Found" in r["error_detail"]
    assert r["ttft_ms"] is None and r["n_chunks"] == 0 and r["e2e_ms"] > 0


def test_a_request_stopped_mid_stream_keeps_what_had_arrived(seen: dict[str, Any]) -> None:
    r = seen["a"][3]
    assert seen["cancel_raised"] == "GreenletExit"
    assert r["status"] == "cancelled" and r["error_class"] == "cancelled" and r["prompt_index"] == 3
    assert 0 < r["n_chunks"] < LONG_TOKENS  # cut at 150 ms: some of the 300 chunks
    assert r["ttft_ms"] >= TTFT_MS and 140 <= r["e2e_ms"] < 1000


def test_a_connection_the_server_closed_is_reopened_and_marked(seen: dict[str, Any]) -> None:
    first, second = seen["b"]
    assert first["status"] == second["status"] == "ok"
    assert first["connect_ms"] is not None and first["reconnect"] is False
    assert second["connect_ms"] is not None and second["reconnect"] is True
    assert seen["closing_connections"] == 2


def test_a_request_dropped_unanswered_on_a_kept_alive_connection_is_sent_once_more(seen: dict[str, Any]) -> None:
    """The server closed the kept-alive connection as the request went out (llama.cpp may): not an
    error of the server's; once more on a new connection, and only once."""
    first, resent, dropped, _ = seen["e"]
    assert first["status"] == "ok" and first["reconnect"] is False and first["n_chunks"] == 2
    assert resent["status"] == "ok" and resent["reconnect"] is True and resent["connect_ms"] is not None
    assert resent["n_chunks"] == 2 and resent["output_tokens"] == 2
    assert dropped["status"] == "error" and dropped["error_class"] == "connection_closed"
    assert dropped["http_status"] is None and dropped["ttft_ms"] is None
    assert seen["raw_connections"] == 4  # opened, reopened after the drop, reopened once for /always-drop, /cut


def test_a_stream_cut_after_its_headers_keeps_what_arrived(seen: dict[str, Any]) -> None:
    cut = seen["e"][3]
    assert cut["status"] == "error" and cut["error_class"] == "stream_cut" and cut["http_status"] == 200
    assert cut["n_chunks"] == 2 and cut["ttft_ms"] is not None and cut["bytes_received"] > 0
    assert cut["output_tokens"] == 2 and cut["output_tokens_source"] == "chunks"


def test_refused_connections_are_retried_until_the_server_is_lost_and_leave_no_record(seen: dict[str, Any]) -> None:
    assert seen["lost"] is True and seen["refusals"] >= 3  # 0.05 + 0.1 + 0.25 s of back-off passes 0.3 s
    assert seen["stopped_after_s"] >= 0.3
    assert seen["c"] == []  # never reached the server: the prompt counts as unsent, not as an error


def test_a_user_stopped_while_waiting_to_retry_sent_nothing(seen: dict[str, Any]) -> None:
    assert seen["d_refusals"] >= 2 and seen["d"] == []


def test_a_stream_without_the_parsers_internals_is_read_line_by_line(seen: dict[str, Any]) -> None:
    assert seen["fallback"] == "data: x\n"
