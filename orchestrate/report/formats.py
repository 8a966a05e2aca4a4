"""How numbers are written for a person, and the flat figures results are compared by.

Stage: report. Shared by the renderers (``console.py``, ``markdown.py``, ``plots.py``, ``compare_report.py``,
``charts.py``), by ``compare.py`` and by the aggregates that write a sentence (``aggregates/capacity.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orchestrate.report.schema.intervals import Interval, PercentileIntervals
from orchestrate.report.schema.summary import Summary
from orchestrate.scenario.slo import SLO_KEYS

GIB = 1024 ** 3
MIB = 1024 ** 2
SLO_LABELS = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "e2e_ms": "E2E"}
"""An SLO limit's key as a person reads it."""


def fmt_ms(ms: float | None) -> str:
    """``105 ms`` below a second, ``1.3 s`` above, ``–`` for none."""
    if ms is None:
        return "–"
    if round(ms) >= 1000:
        return f"{ms / 1000:.1f} s"
    return f"{ms:.0f} ms" if round(ms, 2) >= 10 else f"{ms:.2f} ms"


def fmt_num(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:,.{digits}f}"


def fmt_pct(share: float | None) -> str:
    """A share (0.213) as ``21.3 %``; ``–`` when unknown."""
    return "–" if share is None else f"{100 * share:.1f} %"


def fmt_bytes(n: float | None) -> str:
    """``1.25 GiB`` from 1 GiB up, ``412.3 MiB`` below, ``–`` for none."""
    if n is None:
        return "–"
    return f"{n / GIB:,.2f} GiB" if n >= GIB else f"{n / MIB:,.1f} MiB"


def fmt_figure(key: str, x: float | None) -> str:
    """A figure by its key: a duration for ``*_ms`` (``fmt_ms``), else a number (``fmt_num``)."""
    return fmt_ms(x) if key.endswith("_ms") else fmt_num(x)


def slo_text(slo: dict[str, float]) -> str:
    """``TTFT ≤ 2.0 s, TPOT ≤ 100 ms``."""
    return ", ".join(f"{SLO_LABELS[key]} ≤ {fmt_ms(slo[key])}" for key in SLO_KEYS if key in slo)


def summary_numbers(summary: Summary) -> dict[str, Any]:
    """The figures variants and sweep steps are compared by, flat, from a typed ``summary.json``.

    A comparison row, not a summary block: ``compare.py`` reads it by name (its columns, the ``steady_`` figures
    swapped in on a steady-state basis), spreads it into ``compare.json``'s rows and divides two of them; a sweep
    step's row (``schema/sweep.py:StepFigures``) has the same keys. The ``steady_*`` keys are there only with a
    steady-state window, the ``capacity*`` ones only with a capacity search, the request's (``valid_share``,
    ``inputs_per_s``, ``image_ttft_ratio``) only when the requests were more than plain text chat."""
    req, thr, lat, mem = summary.requests, summary.throughput, summary.latency_ms, summary.memory
    out: dict[str, Any] = {
        "completed": req.completed, "errors": req.errors, "sent": req.sent,
        "prefill_tok_s": thr.prefill_tok_s, "decode_tok_s": thr.decode_tok_s,
        "acceptance": summary.speculative.acceptance_rate if summary.speculative else None,
        "peak_memory_bytes": mem.peak_bytes, "memory_source": mem.source}
    for metric, stats in (("ttft", lat.ttft), ("tpot", lat.tpot)):
        out[f"{metric}_p50_ms"], out[f"{metric}_p99_ms"] = (stats.p50, stats.p99) if stats else (None, None)
    steady = summary.steady_state if summary.steady_state and summary.steady_state.found else None
    if steady:  # the same figures inside the steady-state window
        out.update({"steady_prefill_tok_s": steady.prefill_tok_s, "steady_decode_tok_s": steady.decode_tok_s})
        for metric, window in (("ttft", steady.ttft_ms), ("tpot", steady.tpot_ms)):
            out[f"steady_{metric}_p50_ms"], out[f"steady_{metric}_p99_ms"] = \
                (window.p50, window.p99) if window else (None, None)
    found = summary.capacity  # compared only under one SLO, attainment and load axis
    if found:
        out.update({"capacity": found.max_passing, "capacity_sentence": found.sentence,
                    "capacity_slo": {"slo": found.slo, "attainment": found.attainment, "over": found.over}})
    power = summary.energy  # J per output token: measured only where the host reads power
    out["joules_per_output_token"] = power.joules_per_output_token
    per_joule = power.steady_state.output_tokens_per_joule if power.steady_state else None
    if steady and per_joule:
        out["steady_joules_per_output_token"] = 1 / per_joule
    if summary.cost is not None:  # priced: dollars per million tokens, under these prices
        out.update({"usd_per_mtok_output": summary.cost.usd_per_mtok_output,
                    "usd_per_mtok_input": summary.cost.usd_per_mtok_input})
    kind = summary.request  # what each request was: only when not plain text chat
    if kind is not None:
        out.update({"valid_share": kind.validity.share if kind.validity else None,
                    "inputs_per_s": kind.inputs.per_s if kind.inputs else None,
                    "inputs_unit": kind.inputs.unit if kind.inputs else None,
                    "image_ttft_ratio": kind.images.ttft_ratio if kind.images else None})
    good = summary.goodput  # the limits too: goodput of two variants compares only under one SLO
    out.update({"goodput_slo": good.slo if good else None, "goodput_requests": good.requests_meeting if good else None,
                "goodput_share": good.share if good else None, "goodput_rps": good.requests_per_s if good else None,
                "goodput_tok_s": good.output_tokens_per_s if good else None})
    return out


def fmt_interval(interval: Interval | None, fmt: Callable[[float], str]) -> str:
    """" [92.1–101.7]": an interval after its figure, ``?`` for a side it cannot bound; "" without one."""
    if interval is None:
        return ""
    ends = ["?" if x is None else fmt(x) for x in (interval.low, interval.high)]
    return f" [{ends[0]}–{ends[1]}]"


def fmt_percentile_intervals(block: PercentileIntervals | None) -> str:
    """" (p50 [1.1 s–1.3 s], p99 [2.0 s–?])": the p50 and p99 intervals of a latency."""
    if block is None:
        return ""
    return f" (p50{fmt_interval(block.p50, fmt_ms)}, p99{fmt_interval(block.p99, fmt_ms)})"
