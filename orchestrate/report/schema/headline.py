"""The headline blocks of ``summary.json``: what became of the requests, the tokens, throughput, latency,
reasoning, llama.cpp's own timings, the drafter's acceptance, the connections, and when the server went down.

Stage: report. ``aggregates/headline.py:summarize_records`` computes all but the last three from
``requests.jsonl``; ``aggregates/accounting.py`` gives ``requests.unsent``, ``connections`` and
``server_down``. Definitions: ``docs/metrics.md`` (``report/definitions.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from orchestrate.report.jsontypes import KEYS, mapping
from orchestrate.report.schema.common import Stats


@dataclass(frozen=True)
class Requests:
    """``requests``: every request sent and how it ended; completed + errors + cancelled + unsent = planned."""

    sent: int = 0
    """Requests sent (records in ``requests.jsonl``)."""
    completed: int = 0
    """Requests that ended in a complete stream (``status: ok``)."""
    errors: int = 0
    """Requests that did not end in a complete stream (``status: error``), by class in ``errors_by_class``."""
    cancelled: int = 0
    """Requests in flight when the run was stopped (time cap, Ctrl-C, Stop): not errors, not in the token totals."""
    no_content: int = 0
    """Completed replies that carried no content (EOS first): they have no TTFT or TPOT."""
    short_replies: int = 0
    """Completed replies with fewer output tokens than their ``max_tokens`` (EOS, or ``ignore_eos`` ignored)."""
    errors_by_class: dict[str, int] = mapping("class", doc="An error class (`http_<status>:<error.type>`, `connection_reset`, `timeout`, `stream_cut`, `bad_chunk`, `client_error`; docs/metrics.md) and how many requests ended in it.")
    """Errors per class (``http_<status>:<error.type>``, ``connection_reset``, ``connection_closed``,
    ``timeout``, ``stream_cut``, ``bad_chunk``, ``client_error``), sorted by class."""
    unsent: int = 0
    """Requests planned and never sent (server lost, time cap, web UI stop); a lost worker's count as sent."""
    first_error: dict[str, str] = mapping("class", omit=True, doc="An error class and the first message a request of it got (the server's error message, or the client's exception), cut to 200 characters.")
    """Per error class, the first message a request of it got: what the server said; absent without errors."""


@dataclass(frozen=True)
class Tokens:
    """``tokens``: token totals over the completed requests."""

    prompt: int = 0
    """Σ prompt tokens (``usage.prompt_tokens``), cached ones included."""
    cached: int = 0
    """Σ prompt tokens served from the server's cache (``usage.prompt_tokens_details.cached_tokens`` or
    ``timings.cache_n``)."""
    output: int = 0
    """Σ output tokens (``usage.completion_tokens``, else ``timings.predicted_n``, else content events)."""


@dataclass(frozen=True)
class TokenSources:
    """``token_sources``: where each kind of token count came from, over the completed requests."""

    output: tuple[str, ...] = ()
    """Sources of the output counts, sorted: ``usage``, ``timings``, ``chunks``."""
    cached: tuple[str, ...] = ()
    """Sources of the cached-token counts, sorted (``usage``, ``timings``)."""
    reasoning: tuple[str, ...] = ()
    """Sources of the reasoning-token counts, sorted: ``usage``, or ``chunks`` (one per reasoning event)."""


@dataclass(frozen=True)
class Throughput:
    """``throughput``: the headline rates, over ``duration_s`` (first send to last end), every slot together."""

    prefill_tok_s: float | None = None
    """Σ prompt tokens of completed requests ÷ ``duration_s``; None without a window."""
    decode_tok_s: float | None = None
    """Σ output tokens of completed requests ÷ ``duration_s``; None without a window."""
    requests_per_s: float | None = None
    """Completed requests ÷ ``duration_s``; None without a window."""


@dataclass(frozen=True)
class LatencyMs:
    """``latency_ms``: per-request latencies of the completed requests, in ms; a key is None when no
    completed request has the value."""

    ttft: Stats | None = None
    """Time to first token: send → the first event carrying output of any kind (reasoning included)."""
    ttfo: Stats | None = None
    """Time to first output token of the answer: send → the first non-empty ``delta.content``."""
    tpot: Stats | None = None
    """Time per output token: (E2E − TTFT) / (output_tokens − 1), for replies of more than one token."""
    itl: Stats | None = None
    """Gaps between consecutive content events, pooled over requests, each weighted by its tokens per chunk."""
    e2e: Stats | None = None
    """Send → the end of the stream (``data: [DONE]``)."""


@dataclass(frozen=True)
class Reasoning:
    """``reasoning``: a reasoning model's thinking apart from its answer (``headline.reasoning``); the block is
    None when no completed reply reasoned."""

    requests: int = 0
    """Completed replies that reasoned (more than 0 reasoning tokens)."""
    tokens: int = 0
    """Σ reasoning tokens."""
    tokens_per_request: Stats | None = None
    """Reasoning tokens per completed reply that reports a count."""
    share_of_output: float | None = None
    """Σ reasoning tokens ÷ Σ output tokens (0–1)."""
    tokens_source: tuple[str, ...] = ()
    """Where the counts came from, sorted: ``usage`` or ``chunks`` (one per reasoning event)."""
    ttfo_ms: Stats | None = None
    """Time to the answer's first token (TTFO), ms."""
    answer_tpot_ms: Stats | None = None
    """The answer's own TPOT: (E2E − TTFO) / (answer tokens − 1), ms."""


@dataclass(frozen=True)
class ServerTimings:
    """``server_timings``: llama.cpp's per-slot speeds from the completed requests' ``timings`` (one stream's
    speed, not the aggregate); the block is None when no request carried timings."""

    per_slot_prefill_tok_s: float | None = None
    """Σ ``prompt_n`` ÷ Σ ``prompt_ms`` × 1000; None when Σ ``prompt_ms`` is 0."""
    per_slot_decode_tok_s: float | None = None
    """Σ ``predicted_n`` ÷ Σ ``predicted_ms`` × 1000; None when Σ ``predicted_ms`` is 0."""


@dataclass(frozen=True)
class Speculative:
    """``speculative``: the draft model's acceptance (``headline.speculative``); the block is None without a
    drafter (no request carried draft counts)."""

    draft_tokens: int = 0
    """Σ ``timings.draft_n``: tokens the drafter proposed."""
    accepted_tokens: int = 0
    """Σ ``timings.draft_n_accepted``: proposed tokens the model kept."""
    acceptance_rate: float | None = None
    """``accepted_tokens`` ÷ ``draft_tokens``; None when nothing was drafted."""
    per_request_acceptance: Stats | None = None
    """Each request's accepted ÷ drafted (requests that drafted)."""


@dataclass(frozen=True)
class Connections:
    """``connections``: the TCP connections the users opened (``accounting.connections``); the block is None
    for records that do not say."""

    opened: int = 0
    """Connections opened (each before its request's clock started)."""
    reconnects: int = 0
    """Connections reopened mid-run after the server closed the last one."""
    connect_ms: Stats | None = None
    """Time to open a connection, ms."""
    refused_retries: int = 0
    """Refused connections retried (not errors)."""


@dataclass(frozen=True)
class LastMetricsSample:
    """The last ``metrics.jsonl`` sample at or before the server went down (a pick of its keys)."""

    t: float | None = None
    """Its wall clock (``time.time()``)."""
    elapsed_s: float | None = None
    """Seconds since the sampler started."""
    server_memory_bytes: int | None = None
    """The server's memory then, bytes; None when unknown."""
    gpu_memory_used_bytes: int | None = None
    """GPU memory in use then, bytes; None without a GPU reading."""
    metrics: dict[str, float | None] | None = field(default=None, metadata={KEYS: "metric"})
    """llama.cpp's ``/metrics`` values then, by name without ``llamacpp:``; None when the scrape failed."""


@dataclass(frozen=True)
class ServerDown:
    """``server_down`` (status ``crashed`` or ``server_lost`` only): when the server went down, the streams it
    cut, the requests it dropped (``accounting.server_down``); None when the moment is not known."""

    at_ts: float | None = None
    """Wall clock it went down: its first cut stream after its last completed one, or the liveness watch's
    first unanswered probe, whichever came first."""
    at_s: float | None = None
    """The same, seconds after the first send (3 decimals)."""
    streams_cut: int = 0
    """Requests that ended as ``stream_cut``."""
    dropped_before_response: int = 0
    """Requests closed before any response (``connection_reset``, ``connection_closed``)."""
    last_metrics_sample: LastMetricsSample | None = None
    """The last metrics sample before it; None when there was none."""


@dataclass(frozen=True)
class Headline:
    """The headline blocks of ``summary.json`` (``aggregates/headline.py:summarize_records``, from the records):
    ``requests.unsent`` is 0 until ``build_summary`` counts it against the plan (``accounting.unsent``)."""

    requests: Requests = field(default_factory=Requests)
    """What became of every request sent, and of those never sent."""
    duration_s: float = 0.0
    """First request sent to last response ended, s (0 without requests)."""
    tokens: Tokens = field(default_factory=Tokens)
    """Token totals of the completed requests."""
    throughput: Throughput = field(default_factory=Throughput)
    """The headline rates over ``duration_s``."""
    latency_ms: LatencyMs = field(default_factory=LatencyMs)
    """Latencies of the completed requests, ms."""
    reasoning: Reasoning | None = None
    """A reasoning model's thinking apart from its answer; None when no reply reasoned."""
    tokens_per_chunk: float | None = None
    """Σ output tokens ÷ Σ content events of the completed requests (1.00 for llama.cpp); None without chunks."""
    output_tokens_source: tuple[str, ...] = ()
    """Where the output counts came from, sorted (``usage``, ``timings``, ``chunks``); ``token_sources.output``."""
    token_sources: TokenSources = field(default_factory=TokenSources)
    """Where each kind of token count came from."""
    server_timings: ServerTimings | None = None
    """llama.cpp's per-slot speeds from the replies' ``timings``; None without timings."""
    speculative: Speculative | None = None
    """The drafter's acceptance; None without a drafter."""
    completed_prompts: tuple[int, ...] = ()
    """The prompt indices of the completed requests, sorted (compare's common prompts)."""

    def blocks(self) -> dict[str, Any]:
        """Each block by its field's name: ``Summary(**headline.blocks(), ...)``."""
        return {f.name: getattr(self, f.name) for f in fields(Headline)}
