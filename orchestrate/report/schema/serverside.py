"""``server_side``: what the server itself reported over the run, in one vocabulary for llama.cpp, vLLM, SGLang and
TGI (``load/prometheus.py``): its queue, running requests and KV-cache use, its token counters, and its own
latency histograms beside the client's figures.

Stage: report (``aggregates/serverside.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrate.report.jsontypes import omitted


@dataclass(frozen=True)
class GaugeOverRun:
    """A gauge over the run's samples."""

    name: str = ""
    """``running``, ``waiting`` (the queue), ``kv_usage`` (0–1)."""
    mean: float | None = None
    """Its mean over the samples."""
    max: float | None = None
    """Its largest sample."""


@dataclass(frozen=True)
class ServerHistogram:
    """One of the server's latency histograms over the run: the last scrape's buckets less the first's."""

    name: str = ""
    """``ttft_s``, ``itl_s``, ``tpot_s``, ``queue_s``, ``e2e_s``."""
    count: float = 0
    """Observations in the run."""
    mean_ms: float | None = None
    """Their mean (the sum's increase over the count's), ms."""
    p50_ms: float | None = None
    """The median, interpolated within its bucket as Prometheus' ``histogram_quantile`` does, ms."""
    p90_ms: float | None = None
    """The 90th percentile, ms."""
    p99_ms: float | None = None
    """The 99th percentile, ms."""
    client_p50_ms: float | None = omitted()
    """The client's own median of the same latency (TTFT, ITL, TPOT or E2E), ms."""
    p50_bucket_ms: tuple[float, ...] = omitted(())
    """[low, high] of the bucket the server's median falls in, ms: all its histogram can say."""
    agrees: bool | None = omitted()
    """The client's median is inside that bucket (a little above allowed: the client also counts the network);
    None when there is nothing to compare."""


@dataclass(frozen=True)
class ServerWindow:
    """The server's counters between its first and last scrape inside the steady-state window."""

    start_s: float = 0.0
    """The first scrape inside the window, s after the first request was sent."""
    end_s: float = 0.0
    """The last scrape inside it, s after the first request was sent."""
    samples: int = 0
    """Scrapes inside the window."""
    prompt_tokens: float | None = None
    """Its prompt token counter's increase between them."""
    generation_tokens: float | None = None
    """Its generated token counter's increase between them."""
    prompt_tok_s: float | None = None
    """``prompt_tokens`` over ``end_s`` − ``start_s``."""
    generation_tok_s: float | None = None
    """``generation_tokens`` over ``end_s`` − ``start_s``: the server's decode rate."""
    client_decode_tok_s: float | None = None
    """The client's decode rate over the window (``steady_state.decode_tok_s``), to compare."""


@dataclass(frozen=True)
class ServerSide:
    """``server_side``; absent when the server exported none of the metrics ``load/prometheus.py`` knows."""

    dialect: str = ""
    """Whose names: ``llama.cpp``, ``vllm``, ``sglang``, ``tgi``."""
    samples: int = 0
    """Scrapes read."""
    gauges: tuple[GaugeOverRun, ...] = ()
    """Its queue, running requests and KV-cache use, where exported."""
    prompt_tokens: float | None = None
    """Its prompt token counter's increase over the run."""
    generation_tokens: float | None = None
    """Its generated token counter's increase over the run."""
    prefix_hit_rate: float | None = None
    """Prefix-cache hits ÷ queries over the run (vLLM), or its own hit-rate gauge's mean (SGLang)."""
    histograms: tuple[ServerHistogram, ...] = ()
    """Its own latency histograms."""
    disagrees: tuple[str, ...] = ()
    """The histograms whose median the client's does not fall within."""
    extra: tuple[GaugeOverRun, ...] = omitted(())
    """The metrics the scenario named (``server.metrics_extra``), each's mean and max over the scrapes."""
    window: ServerWindow | None = omitted()
    """The same counters within the steady-state window, as rates beside the client's; absent without a window
    holding two scrapes."""
