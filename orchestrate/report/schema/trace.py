"""A trace replay's block (``trace``): what was replayed, every transformation, and the figures a trace asks for.

Stage: report. ``TraceConditions`` (``scenario/trace.py``: the load stage writes it and this one reads it) is
written before the load, when the prompts are built (``load/traces/window.py`` → ``trace.json``); ``aggregates/trace.py`` reads it back with the records and the
schedule (``arrivals.json``) and makes the ``Trace`` block.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrate.report.schema.common import Stats
from orchestrate.scenario.trace import TraceConditions


@dataclass(frozen=True)
class InputBucket:
    """``trace.by_input_length[]``: the requests whose prompt length (as sent) falls in ``[low, high)`` tokens."""

    low: int = 0
    """The bucket's shortest prompt, tokens."""
    high: int | None = None
    """The bucket's end (excluded), tokens; None: no end."""
    requests: int = 0
    """Requests sent in it."""
    completed: int = 0
    """Of those, completed."""
    ttft_ms: Stats | None = None
    """TTFT of its completed requests, ms."""
    tpot_ms: Stats | None = None
    """TPOT of its completed requests, ms."""
    e2e_ms: Stats | None = None
    """E2E of its completed requests, ms."""


@dataclass(frozen=True)
class ArrivalsPerSecond:
    """``trace.arrivals_per_s``: requests in each second of the schedule (second 0 is its start)."""

    scheduled: tuple[int, ...] = ()
    """Requests due in each second."""
    sent: tuple[int, ...] = ()
    """Requests sent in each second."""


@dataclass(frozen=True)
class Trace:
    """``trace`` (``dataset: trace`` only): the trace as replayed against what it asked (``aggregates/trace.py``)."""

    conditions: TraceConditions = field(default_factory=TraceConditions)
    """What was replayed of the file and how it was transformed."""
    ideal_prefix_reuse: float | None = None
    """Blocks seen before ÷ all blocks: the trace's own prefix reuse; None without blocks."""
    ideal_cached_share: float | None = None
    """Reusable tokens ÷ input tokens: the most of the prompts a prefix cache could serve; None without blocks."""
    server_cached_share: float | None = None
    """Cached tokens ÷ prompt tokens of the completed requests, as the server reported them; None when it reports
    no cached tokens."""
    arrivals_per_s: ArrivalsPerSecond = field(default_factory=ArrivalsPerSecond)
    """Scheduled against sent, second by second."""
    by_input_length: tuple[InputBucket, ...] = ()
    """Latency by prompt length: one p99 over 1k- and 30k-token prompts says little."""
