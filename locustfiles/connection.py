"""A user's connection, opened before the clock starts: TTFT never carries a TCP connect.

Stage: load. Imports: stdlib, geventhttpclient (Locust's FastHttpUser client). A request that must
open a connection (a user's first, or after the server closed the kept-alive one) would otherwise
time the connect inside its TTFT: a few ms on loopback, more across a network, and on every
first request of a run (3 % of 1,000 prompts at 32 users: enough to move p99). ``ensure`` opens it
first, outside the clock, and says how long that took; the request then takes that very socket
from the pool (a LIFO queue). It uses geventhttpclient's pool (``_socket_queue``, ``get_socket``,
``return_socket``, as in 2.x); a client without them is left alone (``None``: nothing known).
"""

from __future__ import annotations

import time
from typing import Any

from geventhttpclient.url import URL


class Connection:
    """The connection pool a user's requests to ``url`` go through."""

    def __init__(self, session: Any, url: str) -> None:
        agent = getattr(session, "client", None)
        pool = getattr(agent, "clientpool", None)
        client = pool.get_client(URL(url)) if pool is not None else None
        self.pool = getattr(client, "_connection_pool", None)
        if not all(hasattr(self.pool, a) for a in ("_socket_queue", "get_socket", "return_socket")):
            self.pool = None
        self.opened = 0
        """Connections this user opened (its first included)."""

    def ensure(self) -> float | None:
        """Make a live connection wait in the pool; the ms spent opening one, or None when a kept-alive
        one was there. Raises the ``OSError`` of a failed connect (refused, unreachable)."""
        if self.pool is None:
            return None
        idle = list(self.pool._socket_queue.queue)
        started = time.perf_counter()
        sock = self.pool.get_socket()  # an idle live one (closed ones are dropped), else a new connect
        connect_ms = (time.perf_counter() - started) * 1000.0
        self.pool.return_socket(sock)
        if any(sock is s for s in idle):
            return None
        self.opened += 1
        return connect_ms
