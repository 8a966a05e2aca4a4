"""Read one streamed chat completion into timestamped chunks, and classify how it ended.

Stage: load (inside a Locust worker). It imports stdlib, and ``orjson`` when installed (a dependency
of the project, optional on a bare worker host). The per-chunk path does no more than take
``perf_counter()`` once per network read, split it into lines, parse each event and look at its
delta; everything else waits for the end.
Parsing is most of the per-chunk cost: 5.5 µs with ``json``, 1.4 µs with ``orjson`` for a
llama.cpp event (measured here), so one process ingests about 2.5× more chunks with it.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from locustfiles.validity import ToolCall

_loads: Callable[[bytes], Any]
try:
    from orjson import loads as _loads
except ImportError:  # a worker host without orjson still works, at about 40 % of the speed
    _loads = json.loads

CLOSED_BEFORE_RESPONSE = ("connection_closed", "connection_reset")
"""The connection was closed before any response: a kept-alive one the server had closed (reopened once),
or a request the server took and dropped as it went down (cut, when it did)."""
DATA_PREFIX = b"data:"
DONE = b"[DONE]"


@dataclass
class StreamResult:
    """What one stream delivered. Times are ``perf_counter()`` seconds, as taken on arrival."""

    content_times: list[float] = field(default_factory=list)
    """Arrival time of every event that carried output text: the answer's ``content`` or a reasoning model's
    thinking (``reasoning_content`` from llama.cpp, ``reasoning`` from vLLM)."""
    first_answer_time: float | None = None
    """Arrival of the first event with ``content`` (the answer), after any reasoning."""
    reasoning_chunks: int = 0
    """Events that carried reasoning and no answer ``content``."""
    end_time: float = 0.0
    done: bool = False
    """True when ``data: [DONE]`` arrived."""
    usage: dict | None = None
    timings: dict | None = None
    finish_reason: str | None = None
    error_class: str | None = None
    """None for a complete stream; else a fixed class name (``classify_exception``, ``classify_stream_exception``)."""
    error_detail: str | None = None
    bytes_read: int = 0
    content: list[str] | None = None
    """The ``delta.content`` pieces in order, only when ``read_stream`` was asked for them."""
    tool_calls: list[ToolCall] = field(default_factory=list)
    """The tool calls the reply made, each call's streamed pieces joined by its ``index``."""

    @property
    def text(self) -> str | None:
        """The reply's text, when it was collected."""
        return None if self.content is None else "".join(self.content)


def add_tool_calls(calls: list[ToolCall], pieces: list[dict[str, Any]]) -> None:
    """Fold one event's ``delta.tool_calls`` into ``calls``: a piece names its call by ``index`` (OpenAI's
    stream), the first piece of a call carries its name, the rest more of its arguments."""
    for piece in pieces:
        index = piece.get("index", len(calls) - 1 if calls else 0)
        while len(calls) <= index:
            calls.append(ToolCall())
        function = piece.get("function") or {}
        if function.get("name"):
            calls[index].name += function["name"]
        if function.get("arguments"):
            calls[index].arguments.append(function["arguments"])


def classify_exception(exc: BaseException) -> str:
    """A fixed class name for a request that got no response at all (before any header)."""
    name = type(exc).__name__
    if isinstance(exc, (socket.timeout, TimeoutError)) or "Timeout" in name:
        return "timeout"
    if isinstance(exc, ConnectionRefusedError):
        return "connection_refused"
    if isinstance(exc, (ConnectionResetError, BrokenPipeError)):
        return "connection_reset"
    if "Closed" in name or isinstance(exc, ConnectionError):
        return "connection_closed"
    return "client_error"


def classify_stream_exception(exc: BaseException) -> str:
    """A failure after the response's headers: the server (or the network) cut the stream.

    Once headers have arrived, a reset, a close or an HTTP framing error (geventhttpclient's
    ``HTTPParseError: Incomplete response`` when the connection ends inside a chunked body) is the
    server's cut, not a client bug; only a read that waited too long is a ``timeout``.
    """
    if isinstance(exc, (socket.timeout, TimeoutError)) or "Timeout" in type(exc).__name__:
        return "timeout"
    if isinstance(exc, (OSError, http.client.HTTPException)):
        return "stream_cut"
    return "client_error"


def classify_http_error(status: int, body: bytes) -> tuple[str, str]:
    """``("http_400:exceed_context_size_error", message)`` from llama.cpp's JSON error body.

    A 503 "Loading model" is its own class (``http_503:loading_model``), apart from a 503 with
    every slot busy.

    Errors are plain JSON even for stream requests: ``{"error": {"code", "message", "type"}}``.
    A body that is not that shape (an HTML page, a proxy's text) is classed by status alone.
    """
    try:
        error = json.loads(body)["error"]
        kind, message = error.get("type"), str(error.get("message", ""))
    except (ValueError, KeyError, TypeError, AttributeError):
        kind, message = None, body[:200].decode("utf-8", "replace")
    if status == 503 and "loading model" in message.lower():
        kind = "loading_model"  # the server restarted or is still loading: not the same as slots full
    return (f"http_{status}:{kind}" if kind else f"http_{status}"), message


def read_stream(recv: Callable[[], bytes], clock: Callable[[], float] = time.perf_counter,
                collect_text: bool = False, result: StreamResult | None = None) -> StreamResult:
    """Consume an SSE body piece by piece until ``[DONE]``, the end of the body, or a failure.

    Every event in one piece gets the piece's arrival time: the moment it could first be seen,
    which a line-by-line reader would overstate by the time spent on the lines before it.

    :param recv: returns the next piece of the (de-chunked) body, any length, or ``b""`` at its end.
    :param clock: the timestamp source (``perf_counter`` in real runs).
    :param collect_text: keep the content pieces (``result.content``), for a caller that sends the
        reply back (multi-turn replay with the server's own history). Off, it costs one test per chunk.
    :param result: the object to fill (default: a new one); a caller that may be interrupted (a user
        killed at the time cap) keeps what had arrived by holding it.
    """
    result = result if result is not None else StreamResult()
    texts: list[str] | None = None
    if collect_text:
        texts = result.content = []
    loads = _loads
    partial = bytearray()  # an unfinished line carried to the next piece (bytearray: O(n) growth)
    ended = False
    try:
        while not ended:
            data = recv()
            now = clock()
            result.bytes_read += len(data)
            if not data:
                if not partial:
                    break
                ended, data = True, b"\n"  # a last line without its newline still counts
            cut = data.rfind(b"\n")
            if cut < 0:
                partial += data
                continue
            if partial:
                partial += data[:cut]
                block, partial = bytes(partial), bytearray(data[cut + 1:])
            else:
                block = data[:cut]
                if cut + 1 < len(data):
                    partial += data[cut + 1:]
            for line in block.split(b"\n"):
                if not line.startswith(DATA_PREFIX):
                    continue  # blank separators, ": ping" keep-alives, "event:" lines
                payload = line[len(DATA_PREFIX):].strip()
                if payload == DONE:
                    result.done = True
                    result.end_time = now
                    return result
                event = loads(payload)
                choices = event["choices"]
                if choices:
                    choice = choices[0]
                    delta = choice.get("delta")
                    if delta is None:  # /v1/completions: the text is the choice's own
                        delta, content = {}, choice.get("text")
                    else:
                        content = delta.get("content")
                    if content:
                        result.content_times.append(now)
                        if result.first_answer_time is None:
                            result.first_answer_time = now
                        if texts is not None:
                            texts.append(content)
                    elif delta.get("reasoning_content") or delta.get("reasoning"):
                        result.content_times.append(now)
                        result.reasoning_chunks += 1
                    elif delta.get("tool_calls"):  # a call's name and arguments, streamed like tokens
                        result.content_times.append(now)
                        if result.first_answer_time is None:
                            result.first_answer_time = now
                    if delta.get("tool_calls"):  # kept whatever else the delta carried (timed once, above)
                        add_tool_calls(result.tool_calls, delta["tool_calls"])
                    if choice.get("finish_reason"):
                        result.finish_reason = choice["finish_reason"]
                if "usage" in event and event["usage"]:
                    result.usage = event["usage"]
                if "timings" in event and event["timings"]:
                    result.timings = event["timings"]
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        result.error_class, result.error_detail = "bad_chunk", f"{type(exc).__name__}: {exc}"[:200]
    except Exception as exc:  # transport: timeouts, resets, closed connections
        result.error_class = classify_stream_exception(exc)
        result.error_detail = f"{type(exc).__name__}: {exc}"[:200]
    result.end_time = clock()
    if result.error_class is None:
        result.error_class, result.error_detail = "stream_cut", "stream ended before [DONE]"
    return result
