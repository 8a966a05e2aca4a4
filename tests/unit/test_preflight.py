"""orchestrate/preflight.py: the pre-flight session survives a kept-alive connection the server dropped."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from orchestrate.preflight import session

OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\nConnection: keep-alive\r\n\r\n"
BODY = b'{"tokens":[1]}\n'


def read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(rest) < length:
        rest += conn.recv(65536)
    return head


@pytest.fixture
def dropping_server() -> Iterator[tuple[str, list[int]]]:
    """Answers the first request on each connection, then resets the connection at the next one
    (what a client meets when llama.cpp closed a kept-alive connection as it was reused)."""
    listener = socket.create_server(("127.0.0.1", 0))
    served: list[int] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                if read_request(conn):
                    served.append(1)  # before the answer: the client may check right after it
                    conn.sendall(OK + BODY)
                if read_request(conn):  # the reuse: reset without a byte of answer
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", served
    listener.close()


def test_a_post_on_a_dropped_keepalive_connection_is_sent_again(dropping_server):
    url, served = dropping_server
    with session() as s:
        for _ in range(3):  # the 2nd and 3rd reuse a connection that the server then resets
            assert s.post(f"{url}/tokenize", json={"content": "a"}, timeout=5).json() == {"tokens": [1]}
    assert len(served) == 3


def test_a_refused_connection_still_fails_at_once():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with session() as s, pytest.raises(Exception) as err:
        s.get(f"http://127.0.0.1:{port}/health", timeout=5)
    assert "refused" in str(err.value).lower() or "Max retries" in str(err.value)
