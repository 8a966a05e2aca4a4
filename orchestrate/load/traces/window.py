"""A trace fitted to this server: its window, ``max_requests``, ``input_scale`` and the caps, each counted.

Stage: dataset. ``prompts.py`` builds the prompts of the requests this returns; the summary's ``trace`` block
reads the conditions back from ``trace.json`` (``report.schema.trace.TraceConditions``), so every transformation is on record.
``time_scale`` is not applied here: it only changes when a request is sent (Locust's ``--time-scale``), so a
capacity search can replay one set of prompts at several speeds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from orchestrate.load.traces.files import TraceFile
from orchestrate.scenario.spec import TraceSpec
from orchestrate.scenario.trace import TraceConditions


@dataclass(frozen=True)
class TraceRequest:
    """One request to build: the trace's row after the transformations."""

    line: int
    at_s: float
    """Trace seconds after the window's first request (before ``time_scale``)."""
    input_tokens: int | None
    """After ``input_scale`` and ``max_input_tokens``; None for a row that carries its text."""
    output_tokens: int
    """After ``max_output_tokens``: the request's ``max_tokens``."""
    blocks: tuple[int, ...] = ()
    """The ``hash_ids`` the scaled prompt spans (its last block partial)."""
    messages: tuple[dict[str, str], ...] = ()
    session: str | None = None
    """Requests of one session are turns of one conversation."""
    delay_s: float | None = None
    """A session's turn: sent this long after the previous turn's reply ended (trace seconds)."""


def fit_trace(trace: TraceFile, spec: TraceSpec) -> tuple[list[TraceRequest], TraceConditions]:
    """The requests to replay, and the conditions that made them."""
    rows = [row for row in trace.rows if row.at_s >= spec.start_s
            and (spec.duration_s is None or row.at_s < spec.start_s + spec.duration_s)]
    rows = rows[:spec.max_requests] if spec.max_requests is not None else rows
    block = max(1, round(spec.block_tokens * spec.input_scale)) if any(row.hash_ids for row in rows) else 0
    first = rows[0].at_s if rows else 0.0
    requests: list[TraceRequest] = []
    clipped_in = clipped_out = 0
    for row in rows:
        tokens = None if row.input_tokens is None else max(1, round(row.input_tokens * spec.input_scale))
        if tokens is not None and spec.max_input_tokens is not None and tokens > spec.max_input_tokens:
            tokens, clipped_in = spec.max_input_tokens, clipped_in + 1
        output = row.output_tokens
        if spec.max_output_tokens is not None and output > spec.max_output_tokens:
            output, clipped_out = spec.max_output_tokens, clipped_out + 1
        blocks = row.hash_ids[:math.ceil(tokens / block)] if block and tokens else ()
        requests.append(TraceRequest(row.line, row.at_s - first, tokens, output, blocks, row.messages, row.session_id,
                                     None if row.delay_ms is None else row.delay_ms / 1000.0))
    nodes: dict[tuple[int, int], int] = {}  # (prefix, next id) → that longer prefix: a trie of the prefixes seen
    ids: set[int] = set()
    again = reusable = 0
    for request in requests:
        again += sum(1 for h in request.blocks if h in ids)
        ids.update(request.blocks)
        node, lead, matching = 0, 0, True
        for h in request.blocks:  # a prefix cache serves the leading blocks seen before in this order
            known = nodes.get((node, h))
            if known is None:
                matching, known = False, len(nodes) + 1
                nodes[(node, h)] = known
            lead += matching
            node = known
        reusable += min(request.input_tokens or 0, lead * block)
    conditions = TraceConditions(
        path=str(trace.path), format=trace.format, rows=len(trace.rows), skipped=dict(trace.skipped),
        start_s=spec.start_s, duration_s=spec.duration_s, max_requests=spec.max_requests, requests=len(requests),
        span_s=requests[-1].at_s if requests else 0.0, time_scale=spec.time_scale, input_scale=spec.input_scale,
        block_tokens=block, max_input_tokens=spec.max_input_tokens, max_output_tokens=spec.max_output_tokens,
        clipped_input=clipped_in, clipped_output=clipped_out, blocks=sum(len(r.blocks) for r in requests),
        blocks_seen_before=again, reusable_tokens=reusable,
        input_tokens=sum(r.input_tokens or 0 for r in requests))
    return requests, conditions
