"""``ChatStreamUser``: one prompt → one streamed chat completion → one record.

Stage: load. The user measures and fires ``LlmRun.record``; it never writes files or computes aggregates
(``events.py`` and the orchestrator do).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import gevent
from gevent import GreenletExit
from geventhttpclient.response import HTTPConnectionClosed
from locust import constant
from locust.contrib.fasthttp import FastHttpUser
from locust.exception import StopUser

from locustfiles import arrivals
from locustfiles.connection import Connection
from locustfiles.dataset import Prompt
from locustfiles.endpoints import CHAT, read_json_reply, request_body, request_shape
from locustfiles.metrics import build_json_record, build_record, stamp_schedule
from locustfiles.records import CANCELLED, ERROR, OK, RequestRecord
from locustfiles.runstate import llm_run
from locustfiles.serverwatch import ServerLost, backoff_s
from locustfiles.sse import CLOSED_BEFORE_RESPONSE, StreamResult, classify_exception, classify_http_error, read_stream

RECV_BYTES = 65536
"""Most bytes one read takes: when a fast server is ahead, one read brings hundreds of events
(geventhttpclient's own 4 KB would take about 25)."""
SETTLE_S = 0.01
"""Between opening a user's connection and its first request: the server accepts it meanwhile."""


def body_reader(stream: Any) -> Callable[[], bytes]:
    """Whatever body bytes the next network read brings, or ``b""`` at the end of the body.

    geventhttpclient offers ``readline()`` (a Python call, a search and a copy per line, two per
    SSE event) and ``read(n)`` (which waits for n bytes). This takes the parser's whole decoded
    buffer after each ``recv``, so one read costs one call however many events it carries
    (profiled: ``readline`` was a fifth of the worker's CPU at 256 streams). It uses the response's
    internals (``_body_buffer``, ``_sock``, ``feed``, as ``readline`` does in geventhttpclient 2.x);
    a version without them gets ``readline``.
    """
    if not all(hasattr(stream, a) for a in ("_body_buffer", "_sock", "feed", "message_complete", "release")):
        return lambda: stream.readline(b"\n")

    def recv() -> bytes:
        while not stream._body_buffer:
            if stream.message_complete:
                return b""
            sock = stream._sock
            if sock is None:
                raise HTTPConnectionClosed("connection closed.")
            try:
                stream.feed(sock.recv(RECV_BYTES))
            except BaseException:
                stream.release()
                raise
        buffer = stream._body_buffer
        data = bytes(buffer)
        del buffer[:]
        return data

    return recv


class ChatStreamUser(FastHttpUser):
    """Replays prompts from the run's dispenser over ``POST /v1/chat/completions`` with streaming, or the endpoint
    ``--endpoint`` names (``endpoints.py``)."""

    abstract = True
    wait_time = constant(0)
    connection_timeout = 10.0
    """Seconds to establish a TCP connection."""
    network_timeout = 600.0
    """Seconds any one read may wait; set from ``--read-timeout`` (Locust's default 60 s is too short
    for long prefills)."""
    path = "/v1/chat/completions"

    def __init__(self, environment: Any) -> None:
        self._reading: tuple[float, StreamResult] | None = None
        """The stream being read and its send time, while it is read (for a cancelled record)."""
        self._waiting = False
        """Pausing before retrying a refused connection: the request has not been sent yet."""
        opts = environment.parsed_options
        if opts is not None:
            self.network_timeout = opts.read_timeout
        super().__init__(environment)
        self.llm = llm_run(environment)
        self.shape = request_shape(opts.endpoint, opts.request_extra, opts.check) if opts is not None \
            else request_shape(CHAT, "", "")
        self.path = self.shape.endpoint.path
        key = os.environ.get(opts.api_key_env, "") if opts is not None else ""
        # identity: a compressed event stream cannot be timed chunk by chunk (Locust asks for gzip)
        self.headers = {"Accept": "text/event-stream", "Content-Type": "application/json",
                        "Accept-Encoding": "identity"}
        if key:
            self.headers["Authorization"] = f"Bearer {key}"
        self.connection = Connection(self.client, (self.host or "") + self.path)

    def request_body(self, prompt: Prompt) -> dict[str, Any]:
        """The request of ``prompt`` to the run's endpoint (``endpoints.request_body``) and the run's options."""
        opts = self.environment.parsed_options
        body = request_body(self.shape.endpoint, prompt, self.shape.extra)
        if opts is not None and opts.model:
            body["model"] = opts.model
        if opts is not None and opts.no_cache_prompt:
            body["cache_prompt"] = False
        if opts is not None and opts.ignore_eos and self.shape.endpoint.streams:  # llama.cpp, vLLM and SGLang read it
            body["ignore_eos"] = True
        return body

    collect_text = False
    """Keep each reply's text (``StreamResult.content``), for a subclass that sends replies back."""

    def next_prompt(self) -> Prompt | None:
        """The dispenser's next prompt, None once they are spent; a multi-turn user
        (``multiturn.py``) plays a conversation's remaining turns first."""
        dispenser = self.llm.dispenser
        return dispenser.take() if dispenser is not None else None

    def wait_until_due(self, prompt: Prompt) -> float | None:
        """Open loop: sleep until ``prompt`` is due and return that time; None (at once) in a closed loop."""
        return arrivals.wait_until_due(self.llm, prompt)

    def on_start(self) -> None:
        """Open the connection before the first request, and let the server accept it."""
        self.connection.open()
        gevent.sleep(SETTLE_S)

    def chat(self) -> None:
        """One streamed chat completion of the next prompt: timed chunk by chunk, recorded, fired as
        ``LlmRun.record``. The locustfile's ``@task`` calls it (this base class has no task of its own)."""
        prompt = self.next_prompt()
        if prompt is None:
            raise StopUser()
        scheduled = self.wait_until_due(prompt)  # open loop: sleep until it is due
        record = RequestRecord(request_id=self.llm.next_request_id(), prompt_index=prompt.index,
                               worker=self.llm.worker, send_ts=time.time(),
                               max_tokens=prompt.max_tokens,
                               expected_prompt_tokens=prompt.prompt_tokens, target_users=self.llm.target_users,
                               endpoint=self.shape.endpoint.name, inputs=len(prompt.inputs) or None,
                               images=len(prompt.image_sizes) or None, image_size="+".join(prompt.image_sizes) or None)
        self._reading = None
        self._waiting = False
        sent = True
        try:
            self.stream_chat(prompt, record)
        except ServerLost:
            sent = False  # never reached the server: no record, the prompt counts as unsent
            raise StopUser() from None
        except GreenletExit:
            sent = not self._waiting  # stopped while waiting for a refused connection: never sent
            if self._reading is not None:  # killed mid-stream: keep what had arrived
                send_t, partial = self._reading
                partial.end_time = time.perf_counter()
                build_record(record, send_t, partial)
            record.status, record.error_class = CANCELLED, "cancelled"
            raise
        finally:
            if sent:
                stamp_schedule(record, scheduled)
                self.llm.record.fire(record=record)

    def stream_chat(self, prompt: Prompt, record: RequestRecord) -> StreamResult | None:
        """Send one request and fill ``record``; the stream read, or None when no body came.

        A refused connection never reached the server: the same request is sent again after a
        back-off until the run's ``RefusalWatch`` judges the server lost (then ``ServerLost``).
        A kept-alive connection the server had closed is reopened once.
        """
        body = self.request_body(prompt)
        headers = {**self.headers, "X-Request-Id": record.request_id}  # to match server and proxy logs
        watch = self.llm.server_watch
        reconnected = False
        while True:
            self.connection.begin()
            record.send_ts = time.time()
            send_t = time.perf_counter()
            streams = self.shape.endpoint.streams
            resp = self.client.request("POST", self.path, json=body, headers=headers,
                                       stream=streams, catch_response=True)
            status = resp.status_code
            sent_at = self.connection.sent_at
            if sent_at is not None:  # the clock starts when the request left, not before Locust's own work
                record.send_ts += sent_at - send_t
                send_t = sent_at
            connect_ms = self.connection.take_connect_ms()
            if connect_ms is not None:
                record.connect_ms = round(connect_ms, 4)
                record.reconnect = self.connection.opened > 1
            if status == 0:  # no response at all: refused, reset, timed out before headers
                error = getattr(resp, "error", None) or ConnectionError("no response")
                error_class = classify_exception(error)
                if error_class == "connection_refused":
                    if watch.refused():
                        raise ServerLost()
                    self._waiting = True
                    gevent.sleep(backoff_s(record.refused_retries))
                    self._waiting = False
                    record.refused_retries += 1
                    continue
                if not reconnected and error_class in CLOSED_BEFORE_RESPONSE:  # a kept-alive one the server closed
                    reconnected = True
                    continue
                self._fail(record, send_t, error_class, f"{type(error).__name__}: {error}")
                return None
            watch.answered()
            record.http_status = status
            if status >= 400:
                error_class, message = classify_http_error(status, resp.content or b"")
                self._fail(record, send_t, error_class, message)
                return None
            if not streams:  # embeddings, rerank: one body, read in full by the request itself
                build_json_record(record, send_t, time.perf_counter(),
                                  read_json_reply(self.shape.endpoint, resp.content or b"", len(prompt.inputs)))
                return None
            check = self.shape.check
            stream = StreamResult()
            self._reading = (send_t, stream)
            read_stream(body_reader(resp.stream), collect_text=self.collect_text or check is not None, result=stream)
            self._reading = None
            build_record(record, send_t, stream)
            if check is not None and record.status == OK:
                record.invalid_reason = check.reason(stream.text, stream.tool_calls, stream.finish_reason)
                record.valid = record.invalid_reason is None
            return stream

    @staticmethod
    def _fail(record: RequestRecord, send_t: float, error_class: str, detail: str) -> None:
        build_record(record, send_t, StreamResult(end_time=time.perf_counter(),
                                                  error_class=error_class, error_detail=detail[:200]))
        record.status = ERROR
