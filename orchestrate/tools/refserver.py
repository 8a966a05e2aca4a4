"""``tokenswarm serve-synthetic``: a scripted llama.cpp-compatible streaming server with exact timing.

Stage: tools (calibration; also a stand-in server for tests). It imports stdlib; ``uvloop`` when installed.

It answers ``POST /v1/chat/completions`` (stream true/false) exactly as llama.cpp streams: the role
chunk at once, then content chunks of ``tokens_per_chunk`` words at ``ttft_ms`` after the request
arrived and every ``itl_ms`` after that (± ``jitter_ms``, uniform, seeded), then the finish chunk,
the usage chunk (``choices: []``, ``usage`` and ``timings``) and ``data: [DONE]``. ``GET /health``,
``/v1/models``, ``/props``, ``/slots``, ``POST /tokenize`` (one token per whitespace-separated
word; ``with_pieces``: each word with the whitespace before it) and ``/apply-template`` make tokenswarm's pre-flight work against it.

Other servers and models, so a client's handling of each can be tested without them (defaults: none of
this, the bytes above unchanged). ``--dialect``: ``vllm`` and ``openai`` 404 the four llama.cpp-only
endpoints, send no ``timings`` and send ``usage`` only with ``stream_options.include_usage`` (in a
``choices: []`` chunk of its own), as those servers do; ``openai``'s usage always has
``prompt_tokens_details.cached_tokens`` and ``completion_tokens_details.reasoning_tokens``, ``vllm``'s the
former when some are cached. ``--reasoning-tokens N``: a reply's first N tokens are reasoning, on the same
timeline as content and in chunks of their own, under the delta key ``reasoning_content`` (llama.cpp) or
``reasoning`` (vLLM >= 0.10); ``openai`` streams none of it (OpenAI hides it) but its time still passes before
the first content. ``completion_tokens`` counts both; llama.cpp reports no reasoning count. ``--eos-after
N``: a reply stops (``finish_reason`` ``stop``) after N tokens, unless the request says ``"ignore_eos":
true`` (not honoured with ``--ignore-ignore-eos``): a client asking for a fixed length sees whether it got
it. ``--cached-tokens N``: every request reports min(N, prompt - 1) prompt tokens cached, in
``timings.cache_n`` (``timings.prompt_n`` the rest) or ``usage.prompt_tokens_details.cached_tokens``. A streamed
request with ``tools`` gets one tool call instead of content, on the same timeline (its name first, then its
arguments in pieces; ``finish_reason: tool_calls``), the required arguments filled by type. What it plays, and
its cost in time and memory per slot (a stand-in for llama-server that a tune starts), is ``refserver_timing.Timing``.

The truth file (``--truth-file``, CSV, buffered and flushed every 0.5 s and at exit) has one line
per event the server wrote: ``request_id,index,kind,ts,scheduled_ts``, with ``kind`` ``arrive``
(index -1: the request's body was complete), ``start`` (index -2, with ``--queue`` only: it got a
slot, later than its arrival when every slot was busy), ``role``, ``reasoning`` (streamed reasoning
only), ``content``, ``end`` (finish + usage + ``[DONE]``, written at once) and ``ts``/``scheduled_ts`` as
``time.time()`` seconds: when the write was made and when it was due. The request id is the
``X-Request-Id`` header, else the first ``[req:ID]`` marker in the body (calibration puts one in every
prompt), else ``s<N>``.

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

import asyncio
import collections
import json
import random
import re
import time
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

from orchestrate.tools.refserver_calls import tool_call, tool_call_deltas
from orchestrate.tools.refserver_timing import MIB, MODEL_ID, SlotMemoryError, Timing, due_times
from orchestrate.tools.refserver_wire import (
    FLUSH_S,
    HttpConnection,
    Stream,
    Truth,
    chunked,
    chunked_raw,
    http_error,
    http_response,
    sse_event,
)

MARKER_RE = re.compile(rb"\[req:([A-Za-z0-9_.\-]+)\]")
"""``[req:ID]`` anywhere in the request body names the request in the truth file."""
DEFAULT_OUTPUT_TOKENS = 16
"""Output length when neither ``--output-tokens`` nor the request's ``max_tokens`` says."""
WORDS = tuple(f" w{i}" for i in range(64))
REASONING_WORDS = tuple(f" r{i}" for i in range(64))
REASONING_KEY = {"llama.cpp": "reasoning_content", "vllm": "reasoning", "openai": None}
"""The delta (and message) key a dialect streams reasoning under; None: not streamed (OpenAI hides it)."""
LLAMA_CPP_ONLY = (b"/props", b"/slots", b"/tokenize", b"/apply-template")
"""Pre-flight endpoints only llama.cpp answers; the other dialects 404 them."""


def chunk_texts(vocab: tuple[str, ...], n: int, per_chunk: int) -> list[str]:
    """``n`` tokens of ``vocab`` (token i is ``vocab[i % len]``) as the texts of chunks of ``per_chunk``."""
    words = [vocab[i % len(vocab)] for i in range(n)]
    return ["".join(words[k:k + per_chunk]) for k in range(0, n, per_chunk)]


class Pending(NamedTuple):
    """A streamed reply before it has a slot: its timeline and end event wait on the gap it gets then."""

    stream: Stream
    jitter_s: list[float]
    """Each chunk's jitter in seconds, drawn (seeded) when the request arrived."""
    shown_from: int
    """The first chunk written: the chunks before it are hidden reasoning, whose time passes unwritten."""
    end: Callable[[float], bytes]
    """The end event (finish, usage, timings) given the reply's ``predicted_ms``."""


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
        """Streams holding a slot: every stream in flight (at most ``slots`` with ``Timing.queue``)."""
        self.waiting: collections.deque[Pending] = collections.deque()
        self.slot_memory: list[bytearray] = []
        """``Timing.slot_memory_mib`` per slot, written so that it is resident."""
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        self._server: asyncio.base_events.Server | None = None
        self._flusher: asyncio.TimerHandle | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        """Allocate the slots' memory (``SlotMemoryError`` over the limit), then listen."""
        shortfall = self.timing.memory_shortfall()
        if shortfall is not None:
            raise SlotMemoryError(shortfall)
        size = int(self.timing.slot_memory_mib * MIB)
        if size:  # a one-byte array repeated: every page written, so the memory is resident
            self.slot_memory = [bytearray(b"\x01") * size for _ in range(self.timing.slots)]
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
        elif path in LLAMA_CPP_ONLY and self.timing.dialect != "llama.cpp":
            write(self._not_found(method, path, keep_alive))
        elif path == b"/props":
            write(http_response(200, json.dumps({
                "total_slots": self.timing.slots, "model_path": self.timing.model_path,
                "build_info": "tokenswarm-synthetic",
                "default_generation_settings": {"n_ctx": self.timing.n_ctx}}).encode(), keep_alive))
        elif path == b"/slots":
            write(http_response(200, json.dumps([{"id": 0, "speculative": False}]).encode(), keep_alive))
        elif path in (b"/tokenize", b"/apply-template") and method == b"POST":
            try:
                req = json.loads(body or b"{}")
            except ValueError:
                write(http_error(400, "invalid_request_error", "bad JSON", keep_alive))
                return
            if path == b"/tokenize":  # a token a word; with_pieces: each word with the whitespace before it
                words = re.findall(r"\s*\S+", str(req.get("content", "")))
                tokens = [{"id": i, "piece": w} for i, w in enumerate(words)] if req.get("with_pieces") else \
                    list(range(len(words)))
                write(http_response(200, json.dumps({"tokens": tokens}).encode(), keep_alive))
            else:
                text = " ".join(str(m.get("content", "")) for m in req.get("messages", []) if isinstance(m, dict))
                write(http_response(200, json.dumps({"prompt": text}).encode(), keep_alive))
        else:
            write(self._not_found(method, path, keep_alive))

    def _not_found(self, method: bytes, path: bytes, keep_alive: bool) -> bytes:
        """The dialect's 404: llama.cpp's error, FastAPI's (vLLM's) detail, or OpenAI's invalid URL."""
        dialect = self.timing.dialect
        if dialect == "vllm":
            return http_response(404, b'{"detail":"Not Found"}', keep_alive)
        if dialect == "openai":
            message = f"Invalid URL ({method.decode('ascii', 'replace')} {path.decode('ascii', 'replace')})"
            return http_response(404, json.dumps({"error": {"message": message, "type": "invalid_request_error",
                                                            "param": None, "code": None}}).encode(), keep_alive)
        return http_error(404, "not_found_error", "File Not Found", keep_alive)

    def _usage(self, prompt_n: int, cached: int, n: int, reasoning: int) -> dict[str, Any]:
        """The dialect's ``usage``: ``prompt_tokens`` is the whole prompt, ``completion_tokens`` counts reasoning."""
        dialect = self.timing.dialect
        if dialect == "llama.cpp":  # cached tokens go in timings.cache_n; no reasoning count
            return {"completion_tokens": n, "prompt_tokens": prompt_n, "total_tokens": n + prompt_n}
        if dialect == "vllm":
            usage: dict[str, Any] = {"prompt_tokens": prompt_n, "total_tokens": prompt_n + n, "completion_tokens": n}
            if cached:
                usage["prompt_tokens_details"] = {"cached_tokens": cached}
            return usage
        return {"prompt_tokens": prompt_n, "completion_tokens": n, "total_tokens": prompt_n + n,
                "prompt_tokens_details": {"cached_tokens": cached},
                "completion_tokens_details": {"reasoning_tokens": reasoning}}

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
        if self.timing.fail_status is not None:
            status = self.timing.fail_status
            conn.transport.write(http_error(status, "server_error", f"synthetic failure: every request gets {status}",
                                            keep_alive))
            return
        rid_bytes = headers.get(b"x-request-id")
        if rid_bytes is None:
            m = MARKER_RE.search(body)
            rid_bytes = m.group(1) if m else None
        rid = rid_bytes.decode("ascii", "replace").replace(",", "_") if rid_bytes else f"s{self.requests}"
        t = self.timing
        limit = max(1, t.output_tokens or int(req.get("max_tokens") or req.get("n_predict") or DEFAULT_OUTPUT_TOKENS))
        ignore_eos = t.honour_ignore_eos and req.get("ignore_eos") is True
        if t.eos_after is not None and t.eos_after < limit and not ignore_eos:
            n, finish_reason = t.eos_after, "stop"  # the model's EOS came first
        else:
            n, finish_reason = limit, "length"
        n_reasoning = min(t.reasoning_tokens, n)
        reasonings = chunk_texts(REASONING_WORDS, n_reasoning, t.tokens_per_chunk)
        contents = chunk_texts(WORDS, n - n_reasoning, t.tokens_per_chunk)  # never in a reasoning chunk
        r_chunks = len(reasonings)
        n_chunks = r_chunks + len(contents)  # reasoning then content, hidden or not
        jitter_s = [self.rng.uniform(-t.jitter_ms, t.jitter_ms) / 1000.0 if t.jitter_ms else 0.0
                    for _ in range(n_chunks)]
        reasoning_key = REASONING_KEY[t.dialect]
        self.truth.add(rid, -1, "arrive", t0_wall, t0_wall)
        created = int(t0_wall)
        cid = f"chatcmpl-{rid}"
        tail = f',"created":{created},"id":"{cid}","model":"{MODEL_ID}","system_fingerprint":"synthetic",' \
               f'"object":"chat.completion.chunk"}}'
        cached = max(0, min(t.cached_tokens, prompt_n - 1))
        usage = self._usage(prompt_n, cached, n, n_reasoning)
        if not req.get("stream"):  # it takes no slot: its gap is itl_ms
            due_s = due_times(t.ttft_ms, t.itl_ms, jitter_s)
            timings = self._timings(prompt_n, cached, n, (due_s[-1] - due_s[0]) * 1000.0)
            self._complete(conn, "".join(contents), "".join(reasonings), finish_reason, usage, timings, cid, created,
                           due_s[-1], keep_alive)
            return
        include_usage = bool((req.get("stream_options") or {}).get("include_usage"))
        head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                b"Transfer-Encoding: chunked\r\nConnection: %s\r\n\r\n" % (b"keep-alive" if keep_alive else b"close"))
        events: list[tuple[str, bytes]] = [("role", head + chunked(
            '{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}]' + tail))]
        if reasoning_key:
            for text in reasonings:
                events.append(("reasoning", chunked('{"choices":[{"finish_reason":null,"index":0,"delta":{"'
                                                     + reasoning_key + '":' + json.dumps(text) + "}}]" + tail)))
        call = tool_call(req, rid)
        deltas = ([json.dumps(delta, separators=(",", ":")) for delta in tool_call_deltas(call, len(contents))]
                  if call else ['{"content":' + json.dumps(text) + "}" for text in contents])
        for delta in deltas:
            events.append(("content", chunked('{"choices":[{"finish_reason":null,"index":0,"delta":'
                                               + delta + "}]" + tail)))
        if call:
            finish_reason = "tool_calls"
        finish: dict[str, Any] = {"choices": [{"finish_reason": finish_reason, "index": 0, "delta": {}}],
                                  "created": created, "id": cid, "model": MODEL_ID, "object": "chat.completion.chunk"}
        end = partial(self._end_event, finish, usage, (prompt_n, cached, n), include_usage)
        stream = Stream(conn, rid, events, [], t0_loop, t0_wall, keep_alive)  # timed when it gets a slot
        conn.stream = stream
        pending = Pending(stream, jitter_s, 0 if reasoning_key else r_chunks, end)
        if self.timing.queue and len(self.holding) >= self.timing.slots:
            self.waiting.append(pending)  # its timeline starts when a slot frees
            return
        self._start(pending, now=False)

    def _timings(self, prompt_n: int, cached: int, n: int, predicted_ms: float) -> dict[str, Any] | None:
        """llama.cpp's ``timings`` (None for the other dialects): the prompt took ``ttft_ms``, the reply
        ``predicted_ms`` from its first chunk to its last."""
        if self.timing.dialect != "llama.cpp":
            return None
        ttft_ms = self.timing.ttft_ms
        prompt_done = prompt_n - cached
        return {"cache_n": cached, "prompt_n": prompt_done, "prompt_ms": ttft_ms,
                "prompt_per_second": prompt_done / ttft_ms * 1000.0 if ttft_ms else 0.0,
                "predicted_n": n, "predicted_ms": predicted_ms,
                "predicted_per_second": n / predicted_ms * 1000.0 if predicted_ms else 0.0}

    def _end_event(self, finish: dict[str, Any], usage: dict[str, Any], counts: tuple[int, int, int],
                   include_usage: bool, predicted_ms: float) -> bytes:
        """A stream's last event: the finish chunk, usage (and llama.cpp's timings) as the dialect sends them,
        ``[DONE]`` and the end of the chunked body."""
        timings = self._timings(*counts, predicted_ms)
        usage_chunk = {"choices": [], "created": finish["created"], "id": finish["id"], "model": MODEL_ID,
                       "object": "chat.completion.chunk", "usage": usage}
        end = b""
        if timings is None:  # vLLM and OpenAI send usage only when asked, in a last chunk of its own
            end += sse_event(finish)
            if include_usage:
                end += sse_event(usage_chunk)
        elif include_usage:
            end += sse_event(finish)
            end += sse_event({**usage_chunk, "timings": timings})
        else:
            end += sse_event({**finish, "usage": usage, "timings": timings})
        return end + chunked_raw(b"data: [DONE]\n\n") + b"0\r\n\r\n"

    def _start(self, pending: Pending, now: bool) -> None:
        """Give a stream a slot, time it and send its first event; ``now``: it waited, so its times count from
        here. Its gap is ``itl_ms`` plus ``slot_cost_ms`` for each other stream holding a slot now."""
        stream, t = pending.stream, self.timing
        due_s = due_times(t.ttft_ms, t.itl_ms + t.slot_cost_ms * len(self.holding), pending.jitter_s)
        # role, then each chunk written (hidden reasoning: its time passes, nothing is written), then the end
        stream.times = [0.0, *due_s[pending.shown_from:], due_s[-1]]
        stream.events.append(("end", pending.end((due_s[-1] - due_s[0]) * 1000.0)))
        self.holding.add(stream)
        if now:
            stream.t0_loop, stream.t0_wall = self.loop.time(), time.time()
        if t.queue:  # without a queue a request starts as it arrives
            self.truth.add(stream.rid, -2, "start", stream.t0_wall, stream.t0_wall)
        stream.step()

    def stream_done(self, stream: Stream) -> None:
        """Free the slot of a stream that held one, and start the longest-waiting stream whose client is still there."""
        if stream not in self.holding:  # a non-streamed reply: it never took a slot
            return
        self.holding.remove(stream)
        while self.waiting and len(self.holding) < self.timing.slots:
            waiting = self.waiting.popleft()
            transport = waiting.stream.conn.transport
            if transport is not None and not transport.is_closing():
                self._start(waiting, now=True)

    def _complete(self, conn: HttpConnection, text: str, reasoning: str, finish_reason: str, usage: dict[str, Any],
                  timings: dict[str, Any] | None, cid: str, created: int, after_s: float, keep_alive: bool) -> None:
        """The non-streamed reply, sent whole when the stream would have ended."""
        message = {"role": "assistant", "content": text}
        reasoning_key = REASONING_KEY[self.timing.dialect]
        if reasoning and reasoning_key:
            message[reasoning_key] = reasoning
        reply: dict[str, Any] = {"choices": [{"finish_reason": finish_reason, "index": 0, "message": message}],
                                 "created": created, "id": cid, "model": MODEL_ID, "object": "chat.completion",
                                 "usage": usage}
        if timings is not None:
            reply["timings"] = timings
        body = json.dumps(reply).encode()
        data = http_response(200, body, keep_alive)
        stream = Stream(conn, cid[len("chatcmpl-"):], [("end", data)], [after_s], self.loop.time(), time.time(),
                        keep_alive)
        conn.stream = stream
        self.loop.call_at(stream.t0_loop + after_s, stream.step)
