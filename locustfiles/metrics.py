"""Per-request metrics, computed here and nowhere else (docs/metrics.md).

Stage: load. Aggregates (percentiles, throughput) live in ``orchestrate/report/aggregates/``; this
module turns one ``StreamResult`` into one ``RequestRecord``.
"""

from __future__ import annotations

from locustfiles.endpoints import JsonReply
from locustfiles.records import ERROR, OK, RequestRecord
from locustfiles.sse import StreamResult

MS = 1000.0


def ttft_ms(send_t: float, content_times: list[float]) -> float | None:
    """Send → first chunk with output text (answer or reasoning). None when none arrived."""
    return (content_times[0] - send_t) * MS if content_times else None


def tpot_ms(ttft: float | None, e2e: float, output_tokens: int | None) -> float | None:
    """(E2E − TTFT) / (output_tokens − 1), only when output_tokens > 1 (vLLM's TPOT)."""
    if ttft is None or not output_tokens or output_tokens <= 1:
        return None
    return (e2e - ttft) / (output_tokens - 1)


def reasoning_tokens(usage: dict | None, reasoning_chunks: int) -> tuple[int | None, str | None]:
    """The server's count (``usage.completion_tokens_details.reasoning_tokens``), else one token per reasoning
    event (llama.cpp and vLLM send one per decoded token; an event of several undercounts); (None, None) for a
    reply with no reasoning the client could see."""
    details = (usage or {}).get("completion_tokens_details") or {}
    if details.get("reasoning_tokens") is not None:
        return int(details["reasoning_tokens"]), "usage"
    if reasoning_chunks:
        return reasoning_chunks, "chunks"
    return None, None


def output_tokens(usage: dict | None, timings: dict | None, n_chunks: int) -> tuple[int, str]:
    """The server's count when it gives one (``usage``, then ``timings``), else the chunk count."""
    if usage and usage.get("completion_tokens") is not None:
        return int(usage["completion_tokens"]), "usage"
    if timings and timings.get("predicted_n") is not None:
        return int(timings["predicted_n"]), "timings"
    return n_chunks, "chunks"


def build_record(record: RequestRecord, send_t: float, stream: StreamResult) -> RequestRecord:
    """Fill ``record`` from a finished stream; ``send_t`` is the ``perf_counter()`` at send."""
    times = stream.content_times
    record.n_chunks = len(times)
    record.bytes_received = stream.bytes_read
    record.chunk_offsets_ms = [round((t - send_t) * MS, 4) for t in times]
    record.e2e_ms = (stream.end_time - send_t) * MS
    record.ttft_ms = ttft_ms(send_t, times)
    usage, timings = stream.usage, stream.timings
    n_out, source = output_tokens(usage, timings, len(times))
    record.output_tokens, record.output_tokens_source = n_out, source
    record.tokens_per_chunk = n_out / len(times) if times else None
    record.tpot_ms = tpot_ms(record.ttft_ms, record.e2e_ms, n_out)
    if stream.first_answer_time is not None:
        record.ttfo_ms = (stream.first_answer_time - send_t) * MS
    record.reasoning_tokens, record.reasoning_tokens_source = reasoning_tokens(usage, stream.reasoning_chunks)
    if record.reasoning_tokens:
        record.answer_tpot_ms = tpot_ms(record.ttfo_ms, record.e2e_ms, n_out - record.reasoning_tokens)
    record.finish_reason = stream.finish_reason
    if usage:
        record.prompt_tokens = usage.get("prompt_tokens")
        details = usage.get("prompt_tokens_details") or {}
        record.cached_tokens = details.get("cached_tokens")
        if record.cached_tokens is not None:
            record.cached_tokens_source = "usage"
    if timings:
        record.prefill_tokens = timings.get("prompt_n")
        record.prompt_ms = timings.get("prompt_ms")
        record.predicted_ms = timings.get("predicted_ms")
        record.draft_tokens = timings.get("draft_n")
        record.draft_accepted = timings.get("draft_n_accepted")
        if record.cached_tokens is None and timings.get("cache_n") is not None:
            record.cached_tokens, record.cached_tokens_source = timings["cache_n"], "timings"
        if record.prompt_tokens is None and record.prefill_tokens is not None:
            record.prompt_tokens = record.prefill_tokens + (record.cached_tokens or 0)
    record.tool_calls = len(stream.tool_calls) or None
    record.image_tokens = image_tokens(record)
    if stream.error_class:
        record.status, record.error_class, record.error_detail = ERROR, stream.error_class, stream.error_detail
    else:
        record.status = OK
    return record


def image_tokens(record: RequestRecord) -> int | None:
    """The server's prompt tokens less the text's own count (measured before the run without the images):
    what the prompt's images cost as the server counts them; None without images or either count."""
    if not record.images or record.prompt_tokens is None or record.expected_prompt_tokens is None:
        return None
    return record.prompt_tokens - record.expected_prompt_tokens


def build_json_record(record: RequestRecord, send_t: float, end_t: float, reply: JsonReply) -> RequestRecord:
    """Fill ``record`` from a one-body reply (embeddings, rerank): E2E to its last byte, no TTFT or TPOT, the
    server's prompt tokens, no output."""
    record.e2e_ms = (end_t - send_t) * MS
    record.prompt_tokens = record.prefill_tokens = reply.prompt_tokens  # no prompt cache: every token is processed
    record.output_tokens, record.output_tokens_source = 0, "usage"
    if reply.error_class:
        record.status, record.error_class, record.error_detail = ERROR, reply.error_class, reply.error_detail
    else:
        record.status = OK
    return record


def stamp_schedule(record: RequestRecord, scheduled: float | None) -> None:
    """Open loop: the record's send delay (actual − scheduled send, ≥ 0) and its latencies counted from
    the schedule (``arrivals.py`` sets the schedule); nothing in a closed loop (``scheduled`` None)."""
    if scheduled is None:
        return
    record.scheduled_ts = scheduled
    delay = max(0.0, (record.send_ts - scheduled) * MS)  # a wake-up a hair early is on time
    record.send_delay_ms = delay
    record.ttft_from_schedule_ms = None if record.ttft_ms is None else delay + record.ttft_ms
    record.e2e_from_schedule_ms = None if record.e2e_ms is None else delay + record.e2e_ms


def itl_gaps_ms(chunk_offsets_ms: list[float]) -> list[float]:
    """Gaps between consecutive content chunks (each weighted by tokens per chunk when pooled)."""
    return [b - a for a, b in zip(chunk_offsets_ms, chunk_offsets_ms[1:])]
