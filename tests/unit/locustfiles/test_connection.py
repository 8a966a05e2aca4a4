"""locustfiles/connection.py: a user's pool stamps when each request left and times each connect it opens.

Real sockets on 127.0.0.1: a small HTTP/1.1 server in a thread of this process notes (``perf_counter``,
the clock the stamps use) when each request's first bytes arrive and can close a kept-alive connection
after N replies, as llama.cpp may. The client is geventhttpclient's real ``UserAgent`` and pool, the
ones Locust's ``FastHttpSession`` is built on (``session.client``); this process is not monkey-patched,
so the server's thread is a real thread. The pool reached through a real Locust ``FastHttpSession`` is
checked in a fresh interpreter (Locust patches at import), as in test_webui.py.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from geventhttpclient.useragent import UserAgent

from locustfiles.connection import Connection, _StampedSocket
from tests.fixtures.raw_http import RawHttpServer
from tests.helpers import ROOT

PATH = "/v1/chat/completions"


class Server(RawHttpServer):
    """Every request gets ``200 ok``; ``close_after`` replies per connection, then it closes without warning."""

    def __init__(self, close_after: int = 0) -> None:
        self.close_after = close_after
        super().__init__()

    def reply(self, conn: socket.socket, path: bytes, served: int) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
        if served == self.close_after:
            time.sleep(0.05)  # the client has read the reply and returned the socket to its pool
            return False
        return True


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


def session() -> SimpleNamespace:
    """What Connection reads of a Locust session: ``client``, its user agent (geventhttpclient's own here)."""
    return SimpleNamespace(client=UserAgent(max_retries=0, connection_timeout=5, network_timeout=5))


def post(sess: SimpleNamespace, url: str) -> bytes:
    response = sess.client.urlopen(url + PATH, method="POST", payload=json.dumps({"stream": True}).encode())
    body: bytes = response.read()
    return body


def test_the_send_is_stamped_when_the_request_is_handed_to_the_kernel(server: Server) -> None:
    """``sent_at`` lies after the caller started the request and before the server saw its bytes: TTFT
    counted from it leaves out the client's own work before the send."""
    sess = session()
    conn = Connection(sess, server.url + PATH)
    assert conn.pool is not None
    for n in range(1, 4):
        conn.begin()
        assert conn.sent_at is None
        before = time.perf_counter()
        assert post(sess, server.url) == b"ok"
        assert conn.sent_at is not None
        assert before < conn.sent_at <= server.arrivals[-1]
        assert len(server.arrivals) == n
    assert server.connections == 1 and conn.opened == 1  # one kept-alive connection carried all three


def test_a_connect_is_timed_once_and_a_reused_connection_has_none(server: Server) -> None:
    sess = session()
    conn = Connection(sess, server.url + PATH)
    conn.begin()
    before = time.perf_counter()
    post(sess, server.url)
    spent_ms = (time.perf_counter() - before) * 1000.0
    connect_ms = conn.take_connect_ms()
    assert connect_ms is not None and 0.0 < connect_ms < spent_ms
    assert conn.take_connect_ms() is None  # taken: not counted again
    conn.begin()
    post(sess, server.url)
    assert conn.take_connect_ms() is None and conn.opened == 1


def test_open_makes_the_first_connection_before_the_first_request(server: Server) -> None:
    """``open`` leaves a connected socket in the pool: the first request reuses it, and the connect
    time (taken before the request's clock started) is still reported with that request."""
    sess = session()
    conn = Connection(sess, server.url + PATH)
    conn.open()
    deadline = time.monotonic() + 2.0
    while server.connections == 0 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert server.connections == 1 and conn.opened == 1 and not server.arrivals  # connected, nothing sent
    assert conn.sent_at is None
    conn.begin()
    post(sess, server.url)
    assert server.connections == 1 and conn.opened == 1  # the request went over the opened connection
    connect_ms = conn.take_connect_ms()
    assert connect_ms is not None and connect_ms > 0.0


def test_a_connection_the_server_closed_is_reopened_and_counted() -> None:
    server = Server(close_after=1)
    try:
        sess = session()
        conn = Connection(sess, server.url + PATH)
        post(sess, server.url)
        assert conn.take_connect_ms() is not None and conn.opened == 1
        time.sleep(0.1)  # the server has closed the kept-alive connection
        conn.begin()
        post(sess, server.url)
        assert server.connections == 2 and conn.opened == 2  # a reconnect: users.py marks the record
        assert conn.take_connect_ms() is not None
        assert conn.sent_at is not None and conn.sent_at <= server.arrivals[-1]
    finally:
        server.close()


def test_open_leaves_a_refused_connection_for_the_request_to_meet() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    sess = session()
    conn = Connection(sess, url + PATH)
    conn.open()  # no exception
    assert conn.opened == 0 and conn.take_connect_ms() is None
    with pytest.raises(ConnectionRefusedError):
        post(sess, url)
    conn.open()  # the pool's slot was handed back: a second try does not block
    assert conn.opened == 0


def test_without_a_pool_nothing_is_stamped_and_nothing_fails() -> None:
    """A client without geventhttpclient's pool: the user keeps the clock it took before the request."""
    conn = Connection(SimpleNamespace(client=None), "http://127.0.0.1:9" + PATH)
    assert conn.pool is None
    conn.open()
    conn.begin()
    assert conn.sent_at is None and conn.take_connect_ms() is None and conn.opened == 0


def test_a_stamped_socket_calls_back_before_the_bytes_leave(server: Server) -> None:
    sock = _StampedSocket(socket.AF_INET, socket.SOCK_STREAM)
    calls: list[int] = []
    sock.on_send = lambda: calls.append(len(server.arrivals))
    sock.connect(("127.0.0.1", server.port))
    sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert sock.recv(100).startswith(b"HTTP/1.1 200 OK")
    sock.close()
    assert calls == [0]  # once, and before the server had the request


SCRIPT = r"""
import json, sys
from locust.contrib.fasthttp import FastHttpSession
from locust.event import EventHook
from locustfiles.connection import Connection
url = sys.argv[1]
session = FastHttpSession(url, request_event=EventHook(), user=None)
conn = Connection(session, url + "/v1/chat/completions")
out = {"pool": conn.pool is not None}
conn.open()
conn.begin()
resp = session.post("/v1/chat/completions", data=b"{}")
out.update(status=resp.status_code, sent=conn.sent_at is not None, connect_ms=conn.take_connect_ms(),
           opened=conn.opened)
print(json.dumps(out))
"""


def test_locusts_fast_http_session_is_stamped(server: Server) -> None:
    """The pool is found through a real ``FastHttpSession`` (Locust's ``LocustUserAgent``), as users.py hands it."""
    proc = subprocess.run([sys.executable, "-c", SCRIPT, server.url], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["pool"] and out["status"] == 200 and out["sent"] and out["opened"] == 1
    assert out["connect_ms"] is not None and out["connect_ms"] > 0
    assert server.connections == 1 and len(server.arrivals) == 1
