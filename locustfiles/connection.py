"""When a request really left, and what opening its connection cost: TTFT starts at the send.

Stage: load. Taking the clock before ``client.request()`` puts the client's own work inside every TTFT:
Locust's request path, encoding the body, and, on a user's first request or after the server closed the
kept-alive connection, the TCP connect (a few ms on loopback, more across a network; 3 % of 1,000
prompts at 32 users are first requests, enough to move p99). Here the user's connection pool makes its
sockets through ``_StampedSocket``, which notes the moment the request is handed to the kernel
(``sent_at``), and times each connect it opens (``connect_ms``); the user starts its clock there. A user
also opens its first connection when it starts (``open``), a moment before its first request, so the
server has accepted it by then (the issue asked for it; measured against a server's own log, a
connection's first request is +0.3 to +0.4 ms p50, docs/benchmarks.md). It uses geventhttpclient's pool
(``_create_socket``, ``_create_tcp_socket``, as in 2.x); with a client without them (or TLS, whose
socket wraps ours) nothing is stamped and the user keeps the clock it took before the request.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import gevent.socket
from geventhttpclient.url import URL


class _StampedSocket(gevent.socket.socket):
    """A socket that calls ``on_send`` just before each ``sendall`` (a request goes out in one)."""

    on_send: Callable[[], None]

    def sendall(self, data: Any, flags: int = 0) -> None:
        self.on_send()
        super().sendall(data, flags)


class Connection:
    """The connection pool a user's requests to ``url`` go through, stamped."""

    def __init__(self, session: Any, url: str) -> None:
        self.sent_at: float | None = None
        """``perf_counter()`` when the last request was handed to the kernel; None before one was."""
        self.connect_ms: float | None = None
        """Time spent opening the last connection, until ``take_connect_ms`` takes it."""
        self.opened = 0
        """Connections this user opened (its first included)."""
        agent = getattr(session, "client", None)
        clients = getattr(agent, "clientpool", None)
        pool = getattr(clients.get_client(URL(url)), "_connection_pool", None) if clients is not None else None
        self.pool: Any = pool if all(
            hasattr(pool, a) for a in ("_create_socket", "_create_tcp_socket", "get_socket", "return_socket")) else None
        if self.pool is None:
            return
        create = self.pool._create_socket

        def tcp_socket(family: int, socktype: int, protocol: int) -> _StampedSocket:
            sock = _StampedSocket(family, socktype, protocol)
            sock.on_send = self._sent
            return sock

        def connect() -> Any:
            started = time.perf_counter()
            sock = create()
            self.connect_ms = (time.perf_counter() - started) * 1000.0
            self.opened += 1
            return sock

        self.pool._create_tcp_socket = tcp_socket
        self.pool._create_socket = connect

    def open(self) -> None:
        """Open a connection now and leave it in the pool for the next request; a failure (a refused
        connection) is left for that request to meet and classify."""
        if self.pool is None:
            return
        try:
            self.pool.return_socket(self.pool.get_socket())
        except OSError:
            pass

    def begin(self) -> None:
        """Before each request: forget when the last one left."""
        self.sent_at = None

    def take_connect_ms(self) -> float | None:
        """The time spent opening a connection since the last call (before or during the request); None
        when the request reused a kept-alive one."""
        connect_ms, self.connect_ms = self.connect_ms, None
        return connect_ms

    def _sent(self) -> None:
        self.sent_at = time.perf_counter()
