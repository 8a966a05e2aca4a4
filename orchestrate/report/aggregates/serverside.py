"""``summary.json``'s ``server_side``: the server's own view of the run from its ``/metrics`` scrapes
(``metrics.jsonl``'s ``server``), in one vocabulary for any server, beside the client's.

Stage: records → report. Gauges (queue, running, KV-cache use) are averaged over the scrapes; counters grow by
Prometheus' ``increase`` over every scrape (``servermetrics.counter_increase``), histograms are the last scrape
less the first (the sampler takes one just before the load and one just after).
A histogram's percentiles are interpolated within their bucket as Prometheus' ``histogram_quantile`` does; the
bucket is all the server can say, so the client's median is compared with it: inside (or above by at most
``NETWORK_MS`` plus ``NETWORK_SHARE``: the client's clock also runs over the network) agrees.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import replace
from typing import Any

import pandas as pd

from orchestrate.report.aggregates.servermetrics import counter_increase
from orchestrate.report.aggregates.stats import numeric_column
from orchestrate.report.formats import fmt_ms
from orchestrate.report.schema.serverside import GaugeOverRun, ServerHistogram, ServerSide, ServerWindow
from orchestrate.report.schema.steady import SteadyState

GAUGES = ("running", "waiting", "kv_usage")
CLIENT = {"ttft_s": "ttft_ms", "tpot_s": "tpot_ms", "e2e_s": "e2e_ms"}
"""The client's per-request figure each server histogram is compared with."""
NETWORK_MS = 5.0
NETWORK_SHARE = 0.10


def _delta(first: Any, last: Any) -> float | None:
    if not isinstance(first, (int, float)) or not isinstance(last, (int, float)) or last < first:
        return None  # a counter that went down: the server restarted
    return float(last - first)


def quantile(buckets: list[tuple[float, float]], q: float) -> tuple[float, float, float] | None:
    """(value, bucket low, bucket high) of the q-quantile of cumulative ``buckets`` [(upper bound, count)], linear
    within the bucket (``histogram_quantile``); the open last bucket answers its lower bound. None when empty."""
    total = buckets[-1][1] if buckets else 0.0
    if total <= 0:
        return None
    rank, low, below = q * total, 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return low, low, low
            inside = count - below
            return (low + (bound - low) * ((rank - below) / inside) if inside > 0 else bound), low, bound
        low, below = bound, count
    return None


def _histogram(name: str, first: dict[str, Any], last: dict[str, Any], client: pd.Series | None) -> ServerHistogram:
    before = {b: c for b, c in first.get("buckets") or []}
    buckets = [(float("inf") if b is None else float(b), float(c) - float(before.get(b, 0.0)))
               for b, c in last.get("buckets") or []]
    count = buckets[-1][1] if buckets else 0.0
    total = _delta(first.get("sum", 0.0), last.get("sum"))  # a histogram the first scrape lacked had seen nothing
    median, p90, p99 = (quantile(buckets, q) for q in (0.5, 0.9, 0.99))
    out = ServerHistogram(name=name, count=count, mean_ms=1000 * total / count if total is not None and count else None,
                          p50_ms=_ms(median), p90_ms=_ms(p90), p99_ms=_ms(p99))
    clean = client.dropna() if client is not None else None
    if median is None or clean is None or clean.empty:
        return out
    low, high = 1000 * median[1], 1000 * median[2]
    mine = float(clean.median())
    return replace(out, client_p50_ms=mine, p50_bucket_ms=(low, high),
                   agrees=low <= mine <= high * (1 + NETWORK_SHARE) + NETWORK_MS)


def _ms(found: tuple[float, float, float] | None) -> float | None:
    return None if found is None else 1000 * found[0]


def server_side(samples: list[dict[str, Any]], records: pd.DataFrame,
                steady: SteadyState | None = None, first_send: float | None = None) -> ServerSide | None:
    """The block; None when no scrape was read in a known vocabulary. ``steady``: the steady-state window (its
    times after ``first_send``), whose scrapes give the counters' rates within it."""
    scraped = [s for s in samples if isinstance(s.get("server"), dict)]
    every = [s["server"] for s in scraped]
    named: dict[str, list[float]] = {}
    for r in every:
        for key, value in (r.get("extra") or {}).items():
            named.setdefault(key, []).append(float(value))
    extra = tuple(GaugeOverRun(name=k, mean=statistics.fmean(v), max=max(v)) for k, v in sorted(named.items()))
    readings = [r for r in every if r.get("dialect") not in (None, "unknown")]
    if not readings:
        return ServerSide(dialect="unknown", samples=len(every), extra=extra) if extra else None
    dialect = Counter(r["dialect"] for r in readings).most_common(1)[0][0]
    timed = [(s.get("t"), s["server"]) for s in scraped if s["server"].get("dialect") == dialect]
    readings = [r for _, r in timed]
    first, last = readings[0], readings[-1]
    gauges = []
    for name in GAUGES:
        values = [float(r["series"][name]) for r in readings if isinstance(r["series"].get(name), (int, float))]
        if values:
            gauges.append(GaugeOverRun(name=name, mean=statistics.fmean(values), max=max(values)))
    hits, queries = _increase(readings, "prefix_hits"), _increase(readings, "prefix_queries")
    rates = [float(r["series"]["prefix_hit_rate"]) for r in readings
             if isinstance(r["series"].get("prefix_hit_rate"), (int, float))]
    ok = records[records["status"] == "ok"] if "status" in records else records
    histograms = tuple(_histogram(name, first["histograms"].get(name) or {}, last["histograms"][name],
                                  numeric_column(ok, CLIENT[name]) if name in CLIENT else None)
                       for name in sorted(last["histograms"]))
    return ServerSide(dialect=dialect, samples=len(readings), gauges=tuple(gauges),
                      prompt_tokens=_increase(readings, "prompt_tokens"),
                      generation_tokens=_increase(readings, "generation_tokens"),
                      prefix_hit_rate=hits / queries if hits is not None and queries else
                      statistics.fmean(rates) if rates else None,
                      histograms=histograms, disagrees=tuple(h.name for h in histograms if h.agrees is False),
                      extra=extra, window=_window(timed, steady, first_send))


def _increase(readings: list[dict[str, Any]], key: str) -> float | None:
    """A counter's growth over the scrapes (Prometheus' ``increase``: a restart's drop counted); None if never seen."""
    return counter_increase(pd.Series([r["series"].get(key) for r in readings], dtype=float))


def _window(timed: list[tuple[Any, dict[str, Any]]], steady: SteadyState | None,
            first_send: float | None) -> ServerWindow | None:
    """The counters' increase between the first and last scrape inside the steady-state window, over their span."""
    if steady is None or first_send is None or steady.start_s is None or steady.end_s is None:
        return None  # no window: too few requests, or none in a steady state
    start, end = first_send + steady.start_s, first_send + steady.end_s
    inside = [(float(t), r) for t, r in timed if isinstance(t, (int, float)) and start <= t <= end]
    if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
        return None
    span = inside[-1][0] - inside[0][0]
    readings = [r for _, r in inside]
    prompt, generation = _increase(readings, "prompt_tokens"), _increase(readings, "generation_tokens")
    return ServerWindow(start_s=inside[0][0] - first_send, end_s=inside[-1][0] - first_send, samples=len(inside),
                        prompt_tokens=prompt, generation_tokens=generation,
                        prompt_tok_s=None if prompt is None else prompt / span,
                        generation_tok_s=None if generation is None else generation / span,
                        client_decode_tok_s=steady.decode_tok_s)


LABELS = {"running": "running", "waiting": "queue", "kv_usage": "KV cache", "ttft_s": "TTFT", "itl_s": "ITL",
          "tpot_s": "TPOT", "queue_s": "queue time", "e2e_s": "E2E"}


def server_side_line(block: ServerSide | None) -> str | None:
    """``the server's own /metrics (vllm, 62 scrapes): queue mean 2.1, max 8; ...; its TTFT p50 120 ms (bucket
    100–250 ms), the client's 131 ms: agrees``."""
    if block is None:
        return None
    parts = []
    for g in block.gauges:
        pct = g.name == "kv_usage"
        shown = (lambda x: f"{100 * x:.0f} %") if pct else (lambda x: f"{x:.1f}")
        parts.append(f"{LABELS[g.name]} mean {shown(g.mean) if g.mean is not None else '–'}, "
                     f"max {shown(g.max) if g.max is not None else '–'}")
    if block.prefix_hit_rate is not None:
        parts.append(f"prefix-cache hits {100 * block.prefix_hit_rate:.0f} %")
    parts += [f"{g.name} mean {g.mean:,.4g}, max {g.max:,.4g}" for g in block.extra
              if g.mean is not None and g.max is not None]
    for h in block.histograms:
        said = f"its {LABELS.get(h.name, h.name)} p50 {fmt_ms(h.p50_ms)}"
        if h.agrees is not None and len(h.p50_bucket_ms) == 2:
            low, high = h.p50_bucket_ms
            said += (f" (bucket {fmt_ms(low)}–{fmt_ms(high)}), the client's {fmt_ms(h.client_p50_ms)}: "
                     + ("agrees" if h.agrees else "**differs**"))
        parts.append(said)
    w = block.window
    if w is not None and w.generation_tok_s is not None:
        parts.append(f"in the steady window it generated {w.generation_tok_s:,.1f} tok/s"
                     + (f" (the client received {w.client_decode_tok_s:,.1f})" if w.client_decode_tok_s is not None
                        else ""))
    return f"the server's own /metrics ({block.dialect}, {block.samples} scrapes): " + "; ".join(parts)
