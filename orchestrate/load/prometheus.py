"""Any inference server's Prometheus ``/metrics`` in one vocabulary: llama.cpp (``llamacpp:``), vLLM (``vllm:``),
SGLang (``sglang:``) and TGI (``tgi_``) name the same things differently; ``DIALECTS`` maps each to the names the
report reads (``SERIES`` and ``HISTOGRAMS``).

Stage: load (the sampler keeps each scrape's ``read_server`` in ``metrics.jsonl``'s ``server``). Raw values only:
counters as read (the report takes their deltas), gauges as read, histograms as their cumulative buckets (the
report subtracts the first sample's from the last's and reads percentiles from the difference). A metric a
server does not export is absent, never zero. ``extra`` names more metrics to keep as they are (a user's own).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import TypedDict

SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?\s+(\S+)(?:\s+-?\d+)?\s*$')
"""One Prometheus text sample: ``name{label="v",...} value [timestamp]``."""
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')

SERIES = ("running", "waiting", "kv_usage", "prompt_tokens", "generation_tokens", "prefix_queries", "prefix_hits",
          "prefix_hit_rate")
"""Gauges and counters, by the report's name: requests running and waiting, the KV cache's share in use (0–1),
prompt and generated tokens (counters), prefix-cache queries and hits (counters) or a hit rate (a gauge)."""
HISTOGRAMS = ("ttft_s", "itl_s", "tpot_s", "queue_s", "e2e_s")
"""The servers' own latency histograms, seconds: time to first token, between tokens, per output token, in the
queue, end to end."""

DIALECTS: dict[str, dict[str, tuple[str, ...]]] = {
    "llama.cpp": {"running": ("llamacpp:requests_processing",), "waiting": ("llamacpp:requests_deferred",),
                  "kv_usage": ("llamacpp:kv_cache_usage_ratio",), "prompt_tokens": ("llamacpp:prompt_tokens_total",),
                  "generation_tokens": ("llamacpp:tokens_predicted_total",)},
    "vllm": {"running": ("vllm:num_requests_running",), "waiting": ("vllm:num_requests_waiting",),
             "kv_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
             "prompt_tokens": ("vllm:prompt_tokens_total",), "generation_tokens": ("vllm:generation_tokens_total",),
             "prefix_queries": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
             "prefix_hits": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
             "ttft_s": ("vllm:time_to_first_token_seconds",), "itl_s": ("vllm:inter_token_latency_seconds",),
             "tpot_s": ("vllm:request_time_per_output_token_seconds", "vllm:time_per_output_token_seconds"),
             "queue_s": ("vllm:request_queue_time_seconds",), "e2e_s": ("vllm:e2e_request_latency_seconds",)},
    "sglang": {"running": ("sglang:num_running_reqs",), "waiting": ("sglang:num_queue_reqs",),
               "kv_usage": ("sglang:token_usage",), "prompt_tokens": ("sglang:prompt_tokens_total",),
               "generation_tokens": ("sglang:generation_tokens_total",), "prefix_hit_rate": ("sglang:cache_hit_rate",),
               "ttft_s": ("sglang:time_to_first_token_seconds",), "itl_s": ("sglang:inter_token_latency_seconds",),
               "tpot_s": ("sglang:time_per_output_token_seconds",), "queue_s": ("sglang:queue_time_seconds",),
               "e2e_s": ("sglang:e2e_request_latency_seconds",)},
    "tgi": {"running": ("tgi_batch_current_size",), "waiting": ("tgi_queue_size",),
            "tpot_s": ("tgi_request_mean_time_per_token_duration",), "queue_s": ("tgi_request_queue_duration",),
            "e2e_s": ("tgi_request_duration",)},
}
"""Per server, the report's name → the server's metric (the first one it exports, for names that changed)."""
PREFIXES = {"llamacpp:": "llama.cpp", "vllm:": "vllm", "sglang:": "sglang", "tgi_": "tgi"}


class Histogram(TypedDict):
    """A cumulative histogram as read: ``buckets`` [[upper bound, count], ...] (+inf as None), ``sum``, ``count``."""

    buckets: list[list[float | None]]
    sum: float | None
    count: float | None


class ServerReading(TypedDict):
    """One scrape in the report's names (``metrics.jsonl``'s ``server``)."""

    dialect: str
    series: dict[str, float]
    histograms: dict[str, Histogram]
    extra: dict[str, float]


def samples(text: str) -> Iterable[tuple[str, dict[str, str], float]]:
    """Every sample of Prometheus text: (name, labels, value); comments, blank lines, non-numbers skipped."""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        if not match:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        yield match.group(1), dict(LABEL.findall(match.group(2) or "")), value


def dialect_of(names: Iterable[str]) -> str | None:
    """The server that exports these metric names, by the prefix most of its names carry; None for none."""
    counts: dict[str, int] = {}
    for name in names:
        for prefix, dialect in PREFIXES.items():
            if name.startswith(prefix):
                counts[dialect] = counts.get(dialect, 0) + 1
    return max(counts, key=lambda d: counts[d]) if counts else None


def read_server(text: str, extra: tuple[str, ...] = ()) -> ServerReading | None:
    """A scrape in the report's names; None when no server this knows exports here (and no ``extra`` either).

    Samples of one name with several label sets (one per model, per engine) are summed; NaN and ±Inf are left
    out. A histogram's buckets are summed per upper bound the same way."""
    values: dict[str, float] = {}
    buckets: dict[str, dict[float, float]] = {}
    for name, labels, value in samples(text):
        if not math.isfinite(value) and not (name.endswith("_bucket") and value == math.inf):
            continue
        if name.endswith("_bucket") and "le" in labels:
            bound = float(labels["le"])
            family = buckets.setdefault(name[:-len("_bucket")], {})
            family[bound] = family.get(bound, 0.0) + value
        else:
            values[name] = values.get(name, 0.0) + value
    dialect = dialect_of(list(values) + list(buckets))
    kept = {name: values[name] for name in extra if name in values}
    if dialect is None:
        return ServerReading(dialect="unknown", series={}, histograms={}, extra=kept) if kept else None
    series, histograms = {}, {}
    for key, names in DIALECTS[dialect].items():
        found = next((n for n in names if n in values or n in buckets), None)
        if found is None:
            continue
        name = found
        if key in HISTOGRAMS and name in buckets:
            histograms[key] = Histogram(
                buckets=[[None if math.isinf(b) else b, count] for b, count in sorted(buckets[name].items())],
                sum=values.get(name + "_sum"), count=values.get(name + "_count"))
        elif key not in HISTOGRAMS:
            series[key] = values[name]
    return ServerReading(dialect=dialect, series=series, histograms=histograms, extra=kept)
