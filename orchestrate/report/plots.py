"""Every PNG of a result, drawn with matplotlib (its Agg backend, imported here and nowhere else in the report
stage; ``tools/calibrate.py`` draws its own ``calibration.png``): a variant's ``latency.png`` and
``throughput.png``, a capacity search's ``capacity.png``, a sweep's ``sweep.png``, a web UI ramp's
``ui_steps.png``, and the run's ``compare.png`` and ``compare_sweep.png``.

Stage: report (drawing only; every figure comes from the typed ``Summary`` and its blocks, the records,
``metrics.jsonl`` or ``compare.json``). A plot is skipped, None, without matplotlib or without data to draw;
``report.html`` draws its own interactive charts (``charts.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrate.report.aggregates.capacity import decode_by_load
from orchestrate.report.aggregates.series import bin_width, decode_per_second
from orchestrate.report.aggregates.servermetrics import metrics_timeline
from orchestrate.report.formats import GIB, MIB, fmt_figure, slo_text
from orchestrate.report.schema import Summary
from orchestrate.report.schema.capacity import Capacity
from orchestrate.report.schema.sweep import Sweep
from orchestrate.report.schema.ui import UiSteps

CURVES = (("decode_tok_s", "decode tok/s"), ("ttft_p50_ms", "TTFT p50 (ms)"), ("ttft_p99_ms", "TTFT p99 (ms)"),
          ("tpot_p50_ms", "TPOT p50 (ms)"))
"""What is plotted against a sweep's value, one panel each (``report.html``'s step charts too)."""
PLOTTED = (("decode_tok_s", "decode tok/s"), ("prefill_tok_s", "prefill tok/s"), ("ttft_p50_ms", "TTFT p50 (ms)"),
           ("tpot_p50_ms", "TPOT p50 (ms)"))
"""What ``compare.png`` shows, a panel of bars each."""


STRIP = {"left": 0.05, "right": 0.99, "bottom": 0.15, "top": 0.84, "wspace": 0.2}
"""The margins of a strip of three panels (``latency.png``, ``throughput.png``): every variant and step draws two."""


def _pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (files, no display); None without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def latency(summary: Summary, records: Any, path: Path) -> Path | None:
    """``latency.png``: TTFT and TPOT histograms and output tokens/s over time; skipped without matplotlib or data."""
    if records is None or records.empty or "ttft_ms" not in records or not (records["status"] == "ok").any():
        return None
    plt = _pyplot()
    if plt is None:
        return None
    ok = records.loc[records["status"] == "ok", ["ttft_ms", "tpot_ms"]]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    for ax, column, title in ((axes[0], "ttft_ms", "TTFT (ms)"), (axes[1], "tpot_ms", "TPOT (ms)")):
        values = ok[column].dropna()
        ax.hist(values, bins=40, color="#4477aa")
        ax.set_title(title)
        ax.set_ylabel("requests")
    times, rates = decode_per_second(records, bin_width(records))  # the page's curve, binned once for both
    axes[2].step(times, rates, where="post", color="#228833")
    axes[2].set_title("output tokens received per second")
    axes[2].set_xlabel("s since first request")
    fig.suptitle(f"{summary.scenario} / {summary.variant}")
    fig.subplots_adjust(**STRIP)  # fixed margins: tight_layout costs 0.15 s a figure
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def throughput(summary: Summary, metrics_path: Path, path: Path) -> Path | None:
    """``throughput.png``: server-side prefill/decode tok/s, requests in flight and memory over time, from
    ``metrics.jsonl``; skipped without matplotlib or with fewer than two samples."""
    timeline = metrics_timeline(metrics_path)
    if len(timeline) < 2:
        return None
    plt = _pyplot()
    if plt is None:
        return None
    mem = summary.memory
    t = timeline["elapsed_s"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    if timeline[["prefill_tok_s", "decode_tok_s"]].notna().any().any():
        axes[0].step(t, timeline["prefill_tok_s"], where="pre", color="#4477aa", label="prefill")
        axes[0].step(t, timeline["decode_tok_s"], where="pre", color="#228833",
                     label="decode (counted as requests end)")
        axes[0].legend()
    axes[0].set_title("server tok/s (/metrics deltas)")
    for column, color in (("requests_processing", "#ee6677"), ("requests_deferred", "#ccbb44")):
        if timeline[column].notna().any():
            axes[1].step(t, timeline[column], where="post", color=color, label=column.replace("_", " "))
            axes[1].legend()
    axes[1].set_title("requests in the server")
    peak = timeline[["server_memory_bytes", "gpu_memory_used_bytes"]].max().max()
    unit, unit_name = (GIB, "GiB") if peak >= GIB else (MIB, "MiB")
    for column, color, label in (("server_memory_bytes", "#aa3377", f"server ({mem.source})"),
                                 ("gpu_memory_used_bytes", "#66ccee", f"GPU ({mem.gpu_source})")):
        if timeline[column].notna().any():
            axes[2].plot(t, timeline[column] / unit, color=color, label=label)
            axes[2].legend()
    axes[2].set_title(f"memory ({unit_name})")
    for ax in axes:
        ax.set_xlabel("s since sampling began")
    fig.suptitle(f"{summary.scenario} / {summary.variant}")
    fig.subplots_adjust(**STRIP)  # fixed margins: tight_layout costs 0.15 s a figure
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def capacity(block: Capacity, path: Path) -> Path | None:
    """``capacity.png``: attainment and steady-state decode tok/s against the load, every probe a point."""
    plt = _pyplot()
    if plt is None:
        return None
    probes = [p for p in block.probes if p.attainment is not None or p.steady_state.decode_tok_s]
    if not probes:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for p in probes:
        if p.attainment is not None:
            left.plot(p.value, 100 * p.attainment, "o", color="tab:green" if p.passed else "tab:red")
    attainment = 100 * (block.attainment or 0)
    left.axhline(attainment, color="gray", linestyle="--", label=f"attainment {attainment:g} %")
    left.set_title(f"requests meeting {slo_text(block.slo)} (steady state)")
    left.set_ylabel("%")
    for p in probes:
        decode = p.steady_state.decode_tok_s
        if decode is not None:
            right.plot(p.value, decode, "o", color="tab:blue", fillstyle="none" if p.stopped_early else "full")
    medians = decode_by_load(probes)
    right.plot(list(medians), list(medians.values()), "-", color="tab:blue", alpha=0.6)
    right.set_title("decode tok/s (steady state; hollow: stopped early)")
    for ax in (left, right):
        ax.set_xlabel(block.over if block.over == "users" else f"{block.over} ({block.unit})")
        if block.max_passing is not None:
            ax.axvline(block.max_passing, color="tab:green", alpha=0.4)
        ax.grid(alpha=0.3)
    left.legend(fontsize=8)
    fig.suptitle(block.sentence, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def sweep(series: Sequence[tuple[str, Sweep | UiSteps]], path: Path) -> Path | None:
    """``sweep.png``, ``ui_steps.png``, ``compare_sweep.png``: decode tok/s, TTFT p50/p99 and TPOT p50 against the
    swept value, one line per variant (or per web UI ramp)."""
    plt = _pyplot()
    if plt is None:
        return None
    drawn = [(label, block) for label, block in series if block.steps]
    if not drawn:
        return None
    key = drawn[0][1].key
    values = [v for _, block in drawn for v in block.values]
    numeric = all(isinstance(v, (int, float)) and v > 0 for v in values)
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    for ax, (metric, title) in zip(axes.flat, CURVES):
        for label, block in drawn:
            points = [(s.value, getattr(s, metric)) for s in block.steps if getattr(s, metric) is not None]
            if points:
                ax.plot([p[0] if numeric else str(p[0]) for p in points], [p[1] for p in points], "o-", label=label)
        ax.set_title(title)
        ax.set_xlabel(key)
        if numeric and max(values) / min(values) >= 8:
            ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(f"sweep over {key}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def comparison(data: dict[str, Any], path: Path) -> Path | None:
    """``compare.png`` from ``compare.json``'s data: bars per variant of decode and prefill tok/s, TTFT and TPOT
    p50; skipped without matplotlib or numbers."""
    rows = data["variants"]
    if not any(r.get("decode_tok_s") is not None for r in rows):
        return None
    plt = _pyplot()
    if plt is None:
        return None
    labels = [r["label"] for r in rows]
    fig, axes = plt.subplots(2, 2, figsize=(2 * (3 + 0.9 * len(rows)), 8.5))
    for ax, (key, title) in zip(axes.flat, PLOTTED):
        values = [r.get(key) if r["status"] == "completed" else None for r in rows]
        bars = ax.bar(range(len(rows)), [v or 0 for v in values], color="#4477aa")
        ax.bar_label(bars, labels=["" if v is None else fmt_figure(key, v) for v in values], fontsize=7, padding=2)
        ax.margins(y=0.12)  # room for the values above the bars
        for i, (v, r) in enumerate(zip(values, rows)):
            if v is None:
                ax.text(i, 0, r["status"], rotation=90, ha="center", va="bottom", fontsize=8, color="#aa3377")
        ax.set_title(title)
        ax.set_xticks(range(len(rows)), labels, rotation=30, ha="right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
