"""The reference server's wire: HTTP/1.1 framing, one connection, one timed stream, the truth log.

Stage: tools (calibration). ``refserver.py`` decides what to send and when; this module writes it. Events are
preformatted bytes; a stream's timer writes, in one ``transport.write``, its due event and every later
one already due (so ``--itl-ms 0`` sends a whole reply in one write and a lagging server catches up in
bursts, as a real one does), and each event's truth row records when that write was made.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Protocol, TextIO

FLUSH_S = 0.5


def sse_event(obj: dict[str, Any]) -> bytes:
    payload = b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(payload), payload)


REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}


def http_response(status: int, body: bytes, keep_alive: bool, ctype: bytes = b"application/json") -> bytes:
    return (b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: %s\r\n\r\n%s"
            % (status, REASONS.get(status, "Error").encode(), ctype, len(body),
               b"keep-alive" if keep_alive else b"close", body))


def http_error(status: int, kind: str, message: str, keep_alive: bool) -> bytes:
    body = json.dumps({"error": {"code": status, "message": message, "type": kind}}).encode()
    return http_response(status, body, keep_alive)


class Truth:
    """Buffered truth lines; flushed every ``FLUSH_S`` by the server and at close."""

    def __init__(self, path: str | None) -> None:
        self.file: TextIO | None = open(path, "w", encoding="utf-8") if path else None
        self.rows: list[tuple[str, int, str, float, float]] = []
        if self.file is not None:
            self.file.write("request_id,index,kind,ts,scheduled_ts\n")

    def add(self, rid: str, index: int, kind: str, ts: float, scheduled: float) -> None:
        if self.file is not None:
            self.rows.append((rid, index, kind, ts, scheduled))  # formatted at flush: off the send path

    def flush(self) -> None:
        if self.file is not None and self.rows:
            self.file.write("".join(["%s,%d,%s,%.6f,%.6f\n" % row for row in self.rows]))
            self.rows.clear()
            self.file.flush()

    def close(self) -> None:
        self.flush()
        if self.file is not None:
            self.file.close()
            self.file = None


class Limits(Protocol):
    @property
    def close_after(self) -> int:
        """Close a kept-alive connection after this many responses (0: never)."""


class Endpoint(Protocol):
    """What the wire needs of the server (``refserver.RefServer``), so this module need not import it."""

    loop: asyncio.AbstractEventLoop
    truth: Truth
    connections: int
    writes: int
    events_sent: int

    @property
    def timing(self) -> Limits: ...

    def dispatch(self, conn: HttpConnection, method: bytes, path: bytes, headers: dict[bytes, bytes],
                 body: bytes, keep_alive: bool) -> None: ...

    def stream_done(self, stream: Stream) -> None:
        """A stream sent its last event, or its client went away: its slot is free."""


class Stream:
    """One streamed completion: its preformatted events and the timer that sends them."""

    __slots__ = ("conn", "rid", "events", "times", "i", "t0_loop", "t0_wall", "keep_alive")

    def __init__(self, conn: HttpConnection, rid: str, events: list[tuple[str, bytes]],
                 times: list[float], t0_loop: float, t0_wall: float, keep_alive: bool) -> None:
        self.conn, self.rid, self.events, self.times = conn, rid, events, times
        self.i, self.t0_loop, self.t0_wall, self.keep_alive = 0, t0_loop, t0_wall, keep_alive

    def step(self) -> None:
        conn = self.conn
        transport = conn.transport
        if transport is None or transport.is_closing():
            conn.stream = None
            conn.server.stream_done(self)
            return
        server, events, times, i = conn.server, self.events, self.times, self.i
        due_by = max(times[i], server.loop.time() - self.t0_loop)  # this event and all already due
        j = i + 1
        while j < len(events) and times[j] <= due_by:
            j += 1
        now = time.time()
        transport.write(events[i][1] if j == i + 1 else b"".join([data for _, data in events[i:j]]))
        server.writes += 1
        server.events_sent += j - i
        for k in range(i, j):
            server.truth.add(self.rid, k, events[k][0], now, self.t0_wall + times[k])
        self.i = j
        if j < len(events):
            server.loop.call_at(self.t0_loop + times[j], self.step)
        else:
            server.stream_done(self)
            conn.end_stream(self.keep_alive)


class HttpConnection(asyncio.Protocol):
    """A minimal HTTP/1.1 server connection: Content-Length bodies, keep-alive, one request at a time."""

    def __init__(self, server: Endpoint) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.buf = b""
        self.stream: Stream | None = None
        self.served = 0
        self.arrived: tuple[float, float] | None = None
        """(loop time, wall clock) when the first bytes of the request being read came in: the truth's
        arrival, taken before any request is handled (see ``data_received``); None for a request that
        came behind another in one read (pipelined), which is stamped when it is handled."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.connections += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        """Stamp the arrival now, handle the request after this loop pass: requests that come in
        together (32 users' first requests) are all stamped before any is built, so a burst's last
        arrival is not stamped late by the server's own work on the others."""
        if not self.buf:
            self.arrived = (self.server.loop.time(), time.time())
        self.buf += data
        if self.stream is None:
            self.server.loop.call_soon(self._handle)

    def end_stream(self, keep_alive: bool) -> None:
        """After a response: close if asked, or silently after ``close_after`` responses (as
        llama.cpp may: the client finds out on its next request), else serve what is queued."""
        self.stream = None
        self.served += 1
        limit = self.server.timing.close_after
        if not keep_alive or (limit and self.served >= limit):
            if self.transport is not None:
                self.transport.close()
        elif self.buf:
            self._handle()

    def _handle(self) -> None:
        while self.transport is not None and self.stream is None:
            head_end = self.buf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            lines = self.buf[:head_end].split(b"\r\n")
            try:
                method, target, version = lines[0].split(b" ", 2)
            except ValueError:
                self.transport.write(http_error(400, "invalid_request_error", "bad request line", False))
                self.transport.close()
                return
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get(b"content-length", b"0") or 0)
            if len(self.buf) < head_end + 4 + length:
                return
            body = self.buf[head_end + 4:head_end + 4 + length]
            self.buf = self.buf[head_end + 4 + length:]
            conn_header = headers.get(b"connection", b"").lower()
            keep_alive = conn_header != b"close" and (version != b"HTTP/1.0" or conn_header == b"keep-alive")
            served = self.served
            self.server.dispatch(self, method, target.split(b"?", 1)[0], headers, body, keep_alive)
            self.arrived = None  # a request read in the same bytes as this one is stamped when handled
            if self.stream is None and self.served == served:  # answered at once, not by a stream
                self.end_stream(keep_alive)
                return


def chunked_raw(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def chunked(json_text: str) -> bytes:
    return chunked_raw(b"data: " + json_text.encode() + b"\n\n")


