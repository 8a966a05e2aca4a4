"""``RequestRecord``: the schema of ``requests.jsonl``, one line per request, exact floats.

Stage: load → records. It imports stdlib, and ``orjson`` when installed (8× faster to write a record
with 200 chunk offsets). This is the contract between the Locust side and the
report: the orchestrator reads these fields and nothing else about a request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

_orjson_dumps: Callable[[Any], bytes] | None
try:
    from orjson import dumps as _orjson_dumps
except ImportError:  # a bare worker host: the standard library, slower
    _orjson_dumps = None

OK = "ok"
ERROR = "error"
CANCELLED = "cancelled"
"""In flight when the run was stopped (time cap or Ctrl-C): neither completed nor a server error."""

REQUEST_TYPE = "POST"
REQUEST_NAME = "/v1/chat/completions"
"""Locust's row of a chat run's requests (response time = E2E, length = output tokens); the row of a run of another
endpoint is named by that endpoint's path (``endpoints.ENDPOINTS``)."""
METRIC = "METRIC"
"""Locust's request type of the derived rows (``TTFT``: length = prompt tokens; ``TPOT``)."""
INPUT = "INPUT"
"""The METRIC row of a one-body reply (embeddings, rerank: no TTFT): time = E2E, length = prompt tokens."""
NO_CONTENT = "NO_CONTENT"
"""The METRIC row of a completed reply without content (no TTFT): time = E2E, length = prompt tokens."""


@dataclass
class RequestRecord:
    """One request as the client saw it. Times in ms relative to ``send_ts`` unless named ``_ts``."""

    request_id: str
    prompt_index: int
    worker: str
    send_ts: float
    """Wall-clock send time (``time.time()``), for lining requests up across processes."""
    status: str = OK
    error_class: str | None = None
    error_detail: str | None = None
    http_status: int | None = None
    ttft_ms: float | None = None
    """Send → the first output token of any kind: a reasoning model's thinking counts (AIPerf's TTFT)."""
    ttfo_ms: float | None = None
    """Send → the first token of the answer (``content``), after any reasoning (AIPerf's TTFO)."""
    e2e_ms: float | None = None
    tpot_ms: float | None = None
    """Over every output token, reasoning included."""
    answer_tpot_ms: float | None = None
    """Over the answer's tokens alone: (E2E − TTFO) / (answer tokens − 1); None without reasoning."""
    chunk_offsets_ms: list[float] = field(default_factory=list)
    """Arrival of every content chunk, ms after send; ITL gaps are their differences."""
    n_chunks: int = 0
    connect_ms: float | None = None
    """Time to open the connection this request used, taken before its clock started; None when it
    reused a kept-alive one."""
    reconnect: bool = False
    """The user had to open a new connection mid-run (the server closed the last one)."""
    refused_retries: int = 0
    """Connections refused before this request got through (retried after a back-off, not errors)."""
    bytes_received: int | None = None
    """Body bytes the stream delivered (what a ``stream_cut`` request got before the cut)."""
    tokens_per_chunk: float | None = None
    max_tokens: int | None = None
    """The ``max_tokens`` the request asked for (``requested_max_tokens`` in files written before 2026-12)."""
    expected_prompt_tokens: int | None = None
    """Prompt length measured before the run (``/tokenize`` of the chat-templated prompt, or an estimate)."""
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    cached_tokens_source: str | None = None
    """``usage`` (``prompt_tokens_details.cached_tokens``: OpenAI, vLLM) or ``timings`` (llama.cpp's ``cache_n``)."""
    prefill_tokens: int | None = None
    """``timings.prompt_n``: prompt tokens actually processed (not served from the prompt cache)."""
    output_tokens: int | None = None
    output_tokens_source: str | None = None
    """``usage``, ``timings`` or ``chunks`` (the count of content chunks: the weakest source)."""
    reasoning_tokens: int | None = None
    """Output tokens spent thinking; None when the reply had no reasoning (or the server hid it and said nothing)."""
    reasoning_tokens_source: str | None = None
    """``usage`` (``completion_tokens_details.reasoning_tokens``) or ``chunks`` (one token per reasoning event)."""
    finish_reason: str | None = None
    prompt_ms: float | None = None
    predicted_ms: float | None = None
    draft_tokens: int | None = None
    draft_accepted: int | None = None
    scheduled_ts: float | None = None
    """Open loop (``--rate``): wall-clock time the request was due; None in a closed loop (``arrivals.py``)."""
    send_delay_ms: float | None = None
    """Open loop: actual send − scheduled time (≥ 0): how long the request waited for a free user."""
    ttft_from_schedule_ms: float | None = None
    """Open loop: TTFT counted from the scheduled time (send delay + TTFT): what a user would wait."""
    e2e_from_schedule_ms: float | None = None
    conversation: str | None = None
    """Multi-turn replay: the conversation's dataset id (``prompt_index`` is its place in the sample)."""
    turn: int | None = None
    """Multi-turn replay: the 0-based user turn within the conversation; None for a single request."""
    target_users: int | None = None
    """The user count the run was set to when this request was sent (the web UI's form, a ramp stage's;
    Locust's ``target_user_count``), so a web UI ramp's steps hold exactly the requests sent under them. On a
    worker of a distributed run, the total the web UI's form set (``--ui-target-users``); None on a worker of
    a headless run, which knows only its share."""

    endpoint: str = "chat"
    """What the request was (``endpoints.ENDPOINTS``): ``chat`` and ``completions`` stream; ``embeddings`` and
    ``rerank`` answer once and have no TTFT or TPOT."""
    inputs: int | None = None
    """Embeddings: the texts the request embedded; rerank: the documents it ranked. None for chat and completions."""
    images: int | None = None
    """Images the prompt carried (``image_url`` parts); None for a text-only one."""
    image_size: str | None = None
    """Their sizes, ``WIDTHxHEIGHT`` joined by ``+`` (``256x256``, ``256x256+512x384``)."""
    image_tokens: int | None = None
    """The server's prompt tokens less the text's own count before the run: what its images cost, as the server
    counted them (None without images, or without both counts)."""
    tool_calls: int | None = None
    """Tool calls the reply made (streamed ``delta.tool_calls``); None when it made none."""
    valid: bool | None = None
    """A checked run (a JSON schema, tools): the reply parsed and matched (``validity.py``); None when unchecked."""
    invalid_reason: str | None = None
    """Why it did not (``validity.REASONS``)."""

    def to_json(self) -> str:
        """One line of ``requests.jsonl``; floats in their shortest exact form either way."""
        if _orjson_dumps is not None:
            return _orjson_dumps(self).decode()
        return json.dumps(vars(self), separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RequestRecord":
        return cls(**data)
