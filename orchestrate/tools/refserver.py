"""``tokenswarm serve-synthetic``: a scripted llama.cpp-compatible streaming server with exact timing.

Stage: tools (calibration; also a stand-in server for tests). It imports stdlib; ``uvloop`` when installed.

It answers ``POST /v1/chat/completions`` (stream true/false) exactly as llama.cpp streams: the role
chunk at once, then content chunks of ``tokens_per_chunk`` words at ``ttft_ms`` after the request
arrived and every ``itl_ms`` after that (± ``jitter_ms``, uniform, seeded), then the finish chunk,
the usage chunk (``choices: []``, ``usage`` and ``timings``) and ``data: [DONE]``. ``GET /health``,
``/v1/models``, ``/props``, ``/slots``, ``POST /tokenize`` (one token per whitespace-separated
word) and ``/apply-template`` make tokenswarm's pre-flight work against it.

The truth file (``--truth-file``, CSV, buffered and flushed every 0.5 s and at exit) has one line
per event the server wrote: ``request_id,index,kind,ts,scheduled_ts``, with ``kind`` ``arrive``
(index -1: the request's body was complete), ``start`` (index -2, with ``--queue`` only: it got a
slot, later than its arrival when every slot was busy), ``role``, ``content``, ``end`` (finish + usage +
``[DONE]``, written at once) and ``ts``/``scheduled_ts`` as ``time.time()`` seconds: when the write
was made and when it was due. The request id is the ``X-Request-Id`` header, else the first
``[req:ID]`` marker in the body (calibration puts one in every prompt), else ``s<N>``.

Design: one raw ``asyncio.Protocol`` per connection (no framework), HTTP/1.1 keep-alive with
``Transfer-Encoding: chunked`` (what llama.cpp sends; ``Connection: close`` from the client is
honoured; ``--close-after N`` closes a connection without warning after N responses, as llama.cpp
may), one ``loop.call_at`` timer per stream, every event preformatted bytes, truth rows kept as
tuples and formatted only at flush (the wire is ``refserver_wire.py``). Events already due go out
in one write: ``--itl-ms 0`` sends a whole reply at once, which is how a client's ingest capacity
is measured without the server's per-write cost in the way. Measured on this 2-core machine (server pinned to core 0, a
raw byte-counting asyncio client on core 1, uvloop, one token per chunk, the host shared with other
test runs): 512 streams at 5 ms gaps saturate it at 50,000-70,000 chunks/s (14-20 µs of server CPU
per chunk; asyncio's own loop: about 33,000); idle, 16-64 streams at 1,600-3,200 chunks/s, its send
time versus the schedule is p50 +0.1 ms, p99 +1 to +2 ms, p1 -0.8 ms (uvloop's timers tick in
whole milliseconds and may fire up to 1 ms early; CPU contention makes the p99). The truth file
records the actual send time, so calibration measures against the truth, not the schedule.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import math
import random
import re
import sys
import time
from dataclasses import dataclass
from typing import Any

from orchestrate.tools.refserver_wire import (FLUSH_S, HttpConnection, Stream, Truth, chunked, chunked_raw, http_error,
                                              http_response, sse_event)

MARKER_RE = re.compile(rb"\[req:([A-Za-z0-9_.\-]+)\]")
"""``[req:ID]`` anywhere in the request body names the request in the truth file."""
DEFAULT_OUTPUT_TOKENS = 16
"""Output length when neither ``--output-tokens`` nor the request's ``max_tokens`` says."""
MODEL_ID = "synthetic"
WORDS = tuple(f" w{i}" for i in range(64))


@dataclass(frozen=True)
class Timing:
    """What the server plays: times in ms; ``output_tokens`` None = the request's ``max_tokens``."""

    ttft_ms: float = 50.0
    itl_ms: float = 10.0
    jitter_ms: float = 0.0
    tokens_per_chunk: int = 1
    output_tokens: int | None = None
    seed: int = 0
    slots: int = 256
    n_ctx: int = 8192
    close_after: int = 0
    """Close a kept-alive connection, without warning, after this many responses (0: never)."""
    queue: bool = False
    """At most ``slots`` streams at once; a request beyond them waits (first come, first served) and its
    timeline (``ttft_ms``, then ``itl_ms``) starts when a slot frees, as llama.cpp's do."""

    def __post_init__(self) -> None:
        if self.ttft_ms < 0 or self.itl_ms < 0 or self.jitter_ms < 0:
            raise ValueError("ttft_ms, itl_ms and jitter_ms must be >= 0")
        if self.close_after < 0:
            raise ValueError("close_after must be >= 0")
        if self.tokens_per_chunk < 1 or (self.output_tokens is not None and self.output_tokens < 1):
            raise ValueError("tokens_per_chunk and output_tokens must be >= 1")


class RefServer:
    """The server: ``await start()``, ``url``, ``close()``. Run ``serve()`` for the CLI."""

    def __init__(self, timing: Timing, host: str = "127.0.0.1", port: int = 0, truth_file: str | None = None) -> None:
        self.timing, self.host, self.port = timing, host, port
        self.truth = Truth(truth_file)
        self.rng = random.Random(timing.seed)
        self.requests = 0
        self.connections = 0
        self.writes = 0
        self.events_sent = 0
        self.holding: set[Stream] = set()
        """Streams holding a slot (``Timing.queue``)."""
        self.waiting: collections.deque[Stream] = collections.deque()
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        self._server: asyncio.base_events.Server | None = None
        self._flusher: asyncio.TimerHandle | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._server = await self.loop.create_server(lambda: HttpConnection(self), self.host, self.port,
                                                     backlog=4096, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        self._flush()

    def _flush(self) -> None:
        self.truth.flush()
        self._flusher = self.loop.call_later(FLUSH_S, self._flush)

    def close(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
        if self._server is not None:
            self._server.close()
        self.truth.close()

    # -- requests ------------------------------------------------------------------------------

    def dispatch(self, conn: HttpConnection, method: bytes, path: bytes, headers: dict[bytes, bytes],
                 body: bytes, keep_alive: bool) -> None:
        assert conn.transport is not None
        write = conn.transport.write
        if path == b"/v1/chat/completions" or path == b"/chat/completions":
            if method != b"POST":
                write(http_error(405, "invalid_request_error", "use POST", keep_alive))
                return
            self._chat(conn, headers, body, keep_alive)
        elif path == b"/health":
            write(http_response(200, b'{"status":"ok"}', keep_alive))
        elif path in (b"/v1/models", b"/models"):
            write(http_response(200, json.dumps({"object": "list", "data": [
                {"id": MODEL_ID, "object": "model", "owned_by": "tokenswarm"}]}).encode(), keep_alive))
        elif path == b"/props":
            write(http_response(200, json.dumps({
                "total_slots": self.timing.slots, "model_path": MODEL_ID, "build_info": "tokenswarm-synthetic",
                "default_generation_settings": {"n_ctx": self.timing.n_ctx}}).encode(), keep_alive))
        elif path == b"/slots":
            write(http_response(200, json.dumps([{"id": 0, "speculative": False}]).encode(), keep_alive))
        elif path in (b"/tokenize", b"/apply-template") and method == b"POST":
            try:
                req = json.loads(body or b"{}")
            except ValueError:
                write(http_error(400, "invalid_request_error", "bad JSON", keep_alive))
                return
            if path == b"/tokenize":
                tokens = list(range(len(str(req.get("content", "")).split())))
                write(http_response(200, json.dumps({"tokens": tokens}).encode(), keep_alive))
            else:
                text = " ".join(str(m.get("content", "")) for m in req.get("messages", []) if isinstance(m, dict))
                write(http_response(200, json.dumps({"prompt": text}).encode(), keep_alive))
        else:
            write(http_error(404, "not_found_error", "File Not Found", keep_alive))

    def _chat(self, conn: HttpConnection, headers: dict[bytes, bytes], body: bytes, keep_alive: bool) -> None:
        t0_loop, t0_wall = conn.arrived or (self.loop.time(), time.time())
        assert conn.transport is not None
        try:
            req = json.loads(body)
            messages = req["messages"]
            prompt_n = sum(len(str(m.get("content", "")).split()) for m in messages)
        except (ValueError, KeyError, TypeError, AttributeError):
            conn.transport.write(http_error(400, "invalid_request_error", "bad request body", keep_alive))
            return
        self.requests += 1
        rid_bytes = headers.get(b"x-request-id")
        if rid_bytes is None:
            m = MARKER_RE.search(body)
            rid_bytes = m.group(1) if m else None
        rid = rid_bytes.decode("ascii", "replace").replace(",", "_") if rid_bytes else f"s{self.requests}"
        t = self.timing
        n = t.output_tokens or int(req.get("max_tokens") or req.get("n_predict") or DEFAULT_OUTPUT_TOKENS)
        n = max(1, n)
        n_chunks = math.ceil(n / t.tokens_per_chunk)
        times = [0.0]  # seconds after arrival: role, then each content chunk, then the end
        prev = 0.0
        for k in range(n_chunks):
            due = (t.ttft_ms + k * t.itl_ms) / 1000.0
            if t.jitter_ms:
                due += self.rng.uniform(-t.jitter_ms, t.jitter_ms) / 1000.0
            prev = max(prev, due)
            times.append(prev)
        times.append(prev)
        self.truth.add(rid, -1, "arrive", t0_wall, t0_wall)
        created = int(t0_wall)
        cid = f"chatcmpl-{rid}"
        tail = f',"created":{created},"id":"{cid}","model":"{MODEL_ID}","system_fingerprint":"synthetic",' \
               f'"object":"chat.completion.chunk"}}'
        predicted_ms = (times[-1] - times[1]) * 1000.0
        usage = {"completion_tokens": n, "prompt_tokens": prompt_n, "total_tokens": n + prompt_n}
        timings = {"cache_n": 0, "prompt_n": prompt_n, "prompt_ms": t.ttft_ms,
                   "prompt_per_second": prompt_n / t.ttft_ms * 1000.0 if t.ttft_ms else 0.0,
                   "predicted_n": n, "predicted_ms": predicted_ms,
                   "predicted_per_second": n / predicted_ms * 1000.0 if predicted_ms else 0.0}
        words = [WORDS[i % len(WORDS)] for i in range(n)]
        texts = ["".join(words[k * t.tokens_per_chunk:(k + 1) * t.tokens_per_chunk]) for k in range(n_chunks)]
        if not req.get("stream"):
            self._complete(conn, "".join(texts), usage, timings, cid, created, times[-1], keep_alive)
            return
        include_usage = bool((req.get("stream_options") or {}).get("include_usage"))
        head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                b"Transfer-Encoding: chunked\r\nConnection: %s\r\n\r\n" % (b"keep-alive" if keep_alive else b"close"))
        events: list[tuple[str, bytes]] = [("role", head + chunked(
            '{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}]' + tail))]
        for text in texts:
            events.append(("content", chunked('{"choices":[{"finish_reason":null,"index":0,"delta":{"content":'
                                               + json.dumps(text) + "}}]" + tail)))
        finish: dict[str, Any] = {"choices": [{"finish_reason": "length", "index": 0, "delta": {}}],
                                  "created": created, "id": cid, "model": MODEL_ID, "object": "chat.completion.chunk"}
        end = b""
        if include_usage:
            end += sse_event(finish)
            end += sse_event({"choices": [], "created": created, "id": cid, "model": MODEL_ID,
                           "object": "chat.completion.chunk", "usage": usage, "timings": timings})
        else:
            end += sse_event({**finish, "usage": usage, "timings": timings})
        events.append(("end", end + chunked_raw(b"data: [DONE]\n\n") + b"0\r\n\r\n"))
        stream = Stream(conn, rid, events, times, t0_loop, t0_wall, keep_alive)
        conn.stream = stream
        if self.timing.queue and len(self.holding) >= self.timing.slots:
            self.waiting.append(stream)  # its timeline starts when a slot frees
            return
        self._start(stream, now=False)

    def _start(self, stream: Stream, now: bool) -> None:
        """Give ``stream`` a slot and send its first event; ``now``: it waited, so its times count from here."""
        self.holding.add(stream)
        if now:
            stream.t0_loop, stream.t0_wall = self.loop.time(), time.time()
        if self.timing.queue:  # without a queue a request starts as it arrives
            self.truth.add(stream.rid, -2, "start", stream.t0_wall, stream.t0_wall)
        stream.step()

    def stream_done(self, stream: Stream) -> None:
        """Free the slot of a stream that held one, and start the longest-waiting stream whose client is still there."""
        if stream not in self.holding:  # a non-streamed reply: it never took a slot
            return
        self.holding.remove(stream)
        while self.waiting and len(self.holding) < self.timing.slots:
            waiting = self.waiting.popleft()
            transport = waiting.conn.transport
            if transport is not None and not transport.is_closing():
                self._start(waiting, now=True)

    def _complete(self, conn: HttpConnection, text: str, usage: dict[str, Any], timings: dict[str, Any], cid: str,
                  created: int, after_s: float, keep_alive: bool) -> None:
        body = json.dumps({"choices": [{"finish_reason": "length", "index": 0,
                                        "message": {"role": "assistant", "content": text}}],
                           "created": created, "id": cid, "model": MODEL_ID, "object": "chat.completion",
                           "usage": usage, "timings": timings}).encode()
        data = http_response(200, body, keep_alive)
        stream = Stream(conn, cid[len("chatcmpl-"):], [("end", data)], [after_s], self.loop.time(), time.time(),
                        keep_alive)
        conn.stream = stream
        self.loop.call_at(stream.t0_loop + after_s, stream.step)


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop when installed (its timers and writes are cheaper), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (the URL is printed)")
    p.add_argument("--ttft-ms", type=float, default=50.0, help="first content chunk this long after arrival")
    p.add_argument("--itl-ms", type=float, default=10.0, help="gap between content chunks")
    p.add_argument("--jitter-ms", type=float, default=0.0, help="uniform ± on every chunk's due time (seeded)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tokens-per-chunk", type=int, default=1)
    p.add_argument("--output-tokens", type=int, help="tokens per reply (default: the request's max_tokens)")
    p.add_argument("--slots", type=int, default=256, help="total_slots reported by /props")
    p.add_argument("--queue", action="store_true",
                   help="at most --slots streams at once: a request beyond them waits for a free slot (first come, "
                        "first served) and its --ttft-ms starts then, as llama.cpp's do")
    p.add_argument("--n-ctx", type=int, default=8192, help="per-slot n_ctx reported by /props")
    p.add_argument("--truth-file", help="CSV of the true send time of every chunk")
    p.add_argument("--close-after", type=int, default=0,
                   help="close a kept-alive connection silently after N responses (0: never), as llama.cpp may")


def serve_main(args: argparse.Namespace) -> int:
    """Run until SIGINT/SIGTERM; print the URL first (one line, flushed)."""
    import signal
    timing = Timing(args.ttft_ms, args.itl_ms, args.jitter_ms, args.tokens_per_chunk, args.output_tokens,
                    args.seed, args.slots, args.n_ctx, args.close_after, args.queue)
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    server = RefServer(timing, args.host, args.port, args.truth_file)
    stop = asyncio.Event()

    async def main() -> None:
        await server.start()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        print(f"serve-synthetic: listening on {server.url}", flush=True)
        await stop.wait()

    try:
        loop.run_until_complete(main())
    finally:
        server.close()
        loop.close()
        print(f"serve-synthetic: {server.requests} requests, {server.connections} connections, "
              f"{server.events_sent} events in {server.writes} writes", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="serve-synthetic", description=__doc__.splitlines()[0])
    add_arguments(parser)
    sys.exit(serve_main(parser.parse_args()))
