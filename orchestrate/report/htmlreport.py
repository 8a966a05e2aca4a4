"""``report.html``: one self-contained, interactive page per run, to open, zoom and send.

Stage: report. It reads the run's result files only (every variant's ``summary.json``, records and
``metrics.jsonl``, the run's ``compare.json``), so ``tokenswarm report`` rebuilds it without a server.
The charts are Plotly's (``plotly.min.js`` from the ``plotly`` package, inlined: the page asks the
network for nothing); the figures in its tables are the summaries' own values, each cell carrying its
``summary.json`` path and value (``data-metric``, ``data-value``) so a program can read them back.
The PNGs and ``summary.md`` stay for readers of markdown.
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2
from markdown_it import MarkdownIt

from orchestrate import version
from orchestrate.report import charts, compare_report
from orchestrate.report.aggregates import series
from orchestrate.report.aggregates.chunkcolumn import without_offsets
from orchestrate.report.aggregates.recordsfile import forget_records, records_of
from orchestrate.report.aggregates.servermetrics import metrics_timeline
from orchestrate.report.compare import CAPACITY_EFFECT, EFFECT_METRICS, ENERGY_EFFECT, GOODPUT_EFFECT
from orchestrate.report.definitions import METRIC_DEFINITIONS
from orchestrate.report.formats import GIB, fmt_bytes, fmt_ms, fmt_num, fmt_pct
from orchestrate.report.intervallines import interval_text
from orchestrate.report.jsontypes import from_json, lookup
from orchestrate.report.markdown import summary_md
from orchestrate.report.schema import Summary
from orchestrate.report.schema.tune import TuneResult
from orchestrate.report.summary import read_summary
from orchestrate.report.tunereport import tune_markdown
from orchestrate.results import (
    VariantPaths,
    compare_json,
    file_stamp,
    read_json,
    report_html,
    tune_summary_json,
    variant_dirs,
)

TEMPLATE = "report.html.j2"
MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")
"""Summaries and notes are markdown; raw HTML in them (a server's log line) is shown as text."""
LINES = ("One line per run, coloured by variant and dashed by repeat (1 solid, 2 dashed, 3 dotted); a click on a "
         "variant in the legend hides or shows its runs. Hover for values; drag to zoom, double-click to reset.")


def prose(text: str) -> str:
    """A markdown document (``summary.md``, ``compare.md``) inside a section: its title dropped (the section
    names it), its headings three levels down."""
    body = "\n".join(text.split("\n")[1:]) if text.startswith("# ") else text
    return re.sub(r"<(/?)h([1-6])>", lambda m: f"<{m.group(1)}h{min(int(m.group(2)) + 2, 6)}>", MARKDOWN.render(body))


@dataclass(frozen=True)
class Figure:
    """A figure of the glance table: where it is in ``summary.json``, its heading, how it is written."""

    path: str
    label: str
    fmt: Callable[[Any], str]
    interval: str | None = None
    """Where its 95 % interval is (``intervals.decode_tok_s``): written beside it as ± half width or [low–high]."""


def _count(x: Any) -> str:
    return f"{x:,}"


GLANCE = (Figure("status", "status", str), Figure("requests.completed", "done", _count),
          Figure("planned_prompts", "of", _count), Figure("requests.errors", "errors", _count),
          Figure("requests.cancelled", "cancelled", _count), Figure("requests.unsent", "unsent", _count),
          Figure("duration_s", "duration s", lambda x: fmt_num(x)),
          Figure("throughput.prefill_tok_s", "prefill tok/s", fmt_num, "intervals.prefill_tok_s"),
          Figure("throughput.decode_tok_s", "decode tok/s", fmt_num, "intervals.decode_tok_s"),
          Figure("throughput.requests_per_s", "req/s", lambda x: fmt_num(x, 2), "intervals.requests_per_s"),
          Figure("latency_ms.ttft.p50", "TTFT p50", fmt_ms, "intervals.ttft_ms.p50"),
          Figure("latency_ms.ttft.p99", "TTFT p99", fmt_ms, "intervals.ttft_ms.p99"),
          Figure("latency_ms.tpot.p50", "TPOT p50", fmt_ms, "intervals.tpot_ms.p50"),
          Figure("latency_ms.tpot.p99", "TPOT p99", fmt_ms, "intervals.tpot_ms.p99"),
          Figure("latency_ms.e2e.p50", "E2E p50", fmt_ms, "intervals.e2e_ms.p50"),
          Figure("speculative.acceptance_rate", "draft accepted", fmt_pct),
          Figure("memory.peak_bytes", "server memory", fmt_bytes),
          Figure("memory.gpu_peak_bytes", "GPU memory", fmt_bytes),
          Figure("energy.joules_per_output_token", "J per output token", lambda x: fmt_num(x, 3)),
          Figure("goodput.share", "goodput", fmt_pct, "intervals.goodput_share"),
          Figure("request.inputs.per_s", "inputs/s", lambda x: fmt_num(x, 1)),
          Figure("request.validity.share", "valid", fmt_pct),
          Figure("request.images.ttft_ratio", "TTFT × images", lambda x: fmt_num(x, 2)),
          Figure("capacity.max_passing", "capacity", lambda x: f"{x:g}"))
"""The headline of every run, one row each: the reference study's figures first."""
STEADY = (Figure("steady_state.duration_s", "window s", fmt_num),
          Figure("steady_state.prefill_tok_s", "prefill tok/s", fmt_num, "steady_state.intervals.prefill_tok_s"),
          Figure("steady_state.decode_tok_s", "decode tok/s", fmt_num, "steady_state.intervals.decode_tok_s"),
          Figure("steady_state.ttft_ms.p50", "TTFT p50", fmt_ms, "steady_state.intervals.ttft_ms.p50"),
          Figure("steady_state.ttft_ms.p99", "TTFT p99", fmt_ms, "steady_state.intervals.ttft_ms.p99"),
          Figure("steady_state.tpot_ms.p50", "TPOT p50", fmt_ms, "steady_state.intervals.tpot_ms.p50"),
          Figure("steady_state.tpot_ms.p99", "TPOT p99", fmt_ms, "steady_state.intervals.tpot_ms.p99"),
          Figure("energy.steady_state.joules_per_output_token", "J per output token", lambda x: fmt_num(x, 3)))
"""The same inside each run's steady-state window."""


@dataclass
class Run:
    """One variant result on the page."""

    label: str
    paths: VariantPaths
    summary: Summary
    """Its ``summary.json``, read once."""


def _cell(summary: Summary, figure: Figure) -> dict[str, Any]:
    value = lookup(summary, figure.path)
    interval = lookup(summary, figure.interval) if figure.interval and value is not None else None
    return {"metric": figure.path, "value": json.dumps(value), "text": "–" if value is None else figure.fmt(value),
            "interval": interval_text(value, interval, figure.fmt) if interval is not None else ""}


def table(runs: list[Run], figures: tuple[Figure, ...], keep: Callable[[Run], bool] = lambda r: True
          ) -> dict[str, Any] | None:
    """A table of ``figures`` (columns some run has) for the runs ``keep`` picks, None when it is empty."""
    rows = [r for r in runs if keep(r)]
    shown = [f for f in figures if any(lookup(r.summary, f.path) is not None for r in rows)]
    if not rows or not shown:
        return None
    return {"columns": [f.label for f in shown],
            "rows": [{"label": r.label, "cells": [_cell(r.summary, f) for f in shown]} for r in rows]}


def curves(run: Run) -> charts.RunCurves:
    """A run's latency distributions and timelines, from its records and ``metrics.jsonl``."""
    repeat = run.summary.repeat.index if run.summary.repeat else 1
    out = charts.RunCurves(run.label, run.summary.variant or run.label, repeat)
    files = (run.paths.records, run.paths.metrics)
    latency, timeline, spans = _file_curves(files, tuple(file_stamp(f) for f in files), run.summary.reasoning is not None)
    out.latency.update(latency)
    out.timeline.update(timeline)
    out.spans.update(spans)
    return out


@functools.lru_cache(maxsize=256)
def _file_curves(files: tuple[Path, Path], stamps: tuple[tuple[int, int] | None, ...],
                 reasoning: bool) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The curves of one run's records and metrics files (cached by their stamps: a matrix rewrites the page
    after every variant, and reads each finished variant's records once, not once per page)."""
    records_path, metrics_path = files
    latency: dict[str, Any] = {}
    timeline: dict[str, Any] = {}
    spans: dict[str, Any] = {}
    records = records_of(records_path) if stamps[0] is not None else None
    if records is not None and not records.empty and "send_ts" in records:
        light = without_offsets(records)
        ok = light[light["status"] == "ok"]
        for key, _ in charts.LATENCY_CHARTS:
            if f"{key}_ms" in ok and (key != "ttfo" or reasoning):
                latency[key] = series.distribution(ok[f"{key}_ms"])
        width = series.bin_width(records)
        timeline.update(decode=series.decode_per_second(records, width),
                        prefill=series.prefill_per_second(records, width),
                        in_flight=series.in_flight_over_time(records))
        spans = series.request_spans(records)
        t0 = series.first_send(records)
        samples = metrics_timeline(metrics_path) if stamps[1] is not None else None
        if t0 is not None and samples is not None and not samples.empty:
            since = samples["t"] - t0
            for key, column, scale in (("server_memory", "server_memory_bytes", GIB),
                                       ("gpu_memory", "gpu_memory_used_bytes", GIB), ("power", "power_watts", 1),
                                       ("gpu_util", "gpu_util_pct", 1), ("gpu_temperature", "gpu_temperature_c", 1),
                                       ("gpu_sm_clock", "gpu_sm_clock_mhz", 1), ("running", "server_running", 1),
                                       ("waiting", "server_waiting", 1), ("kv_usage", "server_kv_usage", 0.01),
                                       ("server_decode", "server_generation_tok_s", 1)):
                timeline[key] = series.thin(since, samples[column] / scale)
    return latency, timeline, spans


def _rounded(x: Any) -> Any:
    """Figures' numbers to 5 significant digits: the page stays small, a chart shows no more."""
    if isinstance(x, float):
        return x if not math.isfinite(x) or x == 0 else float(f"{x:.5g}")
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    return x


def _section(key: str, title: str, figures: list[charts.Figure], html: str = "", intro: str = "") -> dict[str, Any]:
    """A section of the page: its charts' places and data, ``html`` after them, ``intro`` (markdown) before."""
    return {"id": key, "title": title, "intro": MARKDOWN.render(intro) if intro else "", "html": html,
            "figures": [{"id": f"{key}-{i}", "title": f["title"]} for i, f in enumerate(figures)],
            "data": {f"{key}-{i}": _rounded({"data": f["data"], "layout": f["layout"]}) for i, f in enumerate(figures)}}


def sections(run_dir: Path, runs: list[Run]) -> list[dict[str, Any]]:
    """The page's sections in reading order; a section with nothing to show is left out."""
    out = []
    tuned = read_json(tune_summary_json(run_dir))
    if isinstance(tuned, dict):  # a tune's answer leads: the best command line, then every candidate
        result = from_json(TuneResult, tuned, str(tune_summary_json(run_dir)))
        out.append(_section("tune", "Tune: the best settings", charts.tune_figures(result),
                            intro=tune_markdown(result)))
    glance, steady = table(runs, GLANCE), table(runs, STEADY, lambda r: bool(r.summary.steady_state
                                                                           and r.summary.steady_state.found))
    out.append({**_section("glance", "At a glance", [], intro="Every run's headline (the whole load) and, below "
                           "it, its steady-state window (where the load was what it was meant to be)."),
                "table": glance, "steady": steady})
    data = read_json(compare_json(run_dir))
    if data and len(runs) > 1:
        metrics = EFFECT_METRICS + (GOODPUT_EFFECT, ENERGY_EFFECT, CAPACITY_EFFECT)
        out.append(_section("comparison", "Comparison", charts.effect_figures(compare_report.clean_effects(data), metrics),
                            prose(compare_report.markdown(data)),
                            "Each clean effect as a ratio with its min–max over repeats (grey: within noise); "
                            "the tables and the confounded pairs follow."))
    for run in runs:
        found = run.summary.capacity
        if found:
            out.append(_section("capacity-" + re.sub(r"[^A-Za-z0-9_-]+", "-", run.label), f"Capacity: {run.label}",
                                charts.capacity_figures(run.label, found), intro=found.sentence))
    for run in runs:
        trace = run.summary.trace
        if trace:
            c = trace.conditions
            out.append(_section("trace-" + re.sub(r"[^A-Za-z0-9_-]+", "-", run.label), f"Trace: {run.label}",
                                charts.trace_figures(run.label, trace),
                                intro=f"{c.requests} requests of {Path(c.path).name} ({c.format}) replayed at "
                                      f"{c.time_scale:g}× its speed; the trace's prefix reuse "
                                      f"{fmt_pct(trace.ideal_cached_share)} of prompt tokens at most, the server "
                                      f"reported {fmt_pct(trace.server_cached_share)} cached."))
    for run in runs:
        images = run.summary.request.images if run.summary.request else None
        if images:
            out.append(_section("images-" + re.sub(r"[^A-Za-z0-9_-]+", "-", run.label), f"Images: {run.label}",
                                charts.image_figures(run.label, images),
                                intro=f"{images.images:,} images in {images.requests:,} requests; image tokens as the "
                                      "server counted them (its prompt tokens less the text's own count)."))
    swept = [(r.label, r.summary.sweep) for r in runs if r.summary.sweep]
    if swept:
        out.append(_section("sweep", "Sweep", charts.step_figures(swept, "sweep")))
    stepped = [(r.label, r.summary.ui_steps) for r in runs if r.summary.ui_steps]
    if stepped:
        out.append(_section("ui-steps", "Web UI steps", charts.step_figures(stepped, "web UI"),
                            intro="The user levels set in the web UI, each held as a step."))
    drawn = [curves(r) for r in runs]
    latency, timelines = charts.latency_figures(drawn), charts.timeline_figures(drawn)
    if latency:
        out.append(_section("latency", "Latency distributions", latency,
                            intro="Percent of completed requests within each latency. " + LINES))
    if timelines:
        out.append(_section("timelines", "Over time", timelines,
                            intro="From the records: tokens when they arrived, requests from send to end; memory "
                                  "and power as sampled. " + LINES))
    requests = [f for f in map(charts.request_timeline_figure, drawn) if f is not None]
    if requests:
        out.append(_section("requests", "Requests", requests,
                            intro="Each request a line from its send to its last token, in send order; the tick is "
                                  "its first token; blue completed, red failed, grey cancelled at the stop. A run "
                                  f"of more than {series.MAX_SPANS:,} requests shows every k-th (its title says)."))
    errors = {r.label: r.summary.requests.errors_by_class for r in runs}
    shown = charts.errors_figure(errors)
    if shown:
        out.append(_section("errors", "Errors by cause", [shown]))
    return out


def _runs(run_dir: Path, found: list[VariantPaths]) -> list[Run]:
    """The variants with a summary, each read once (one of the wrong shape: a ``ResultsError`` naming it)."""
    out = []
    for paths in found:
        summary = read_summary(paths)
        if summary is not None:
            label = str(paths.dir.relative_to(run_dir)) if paths.dir != run_dir else paths.dir.name
            out.append(Run(label, paths, summary))
    return out


@functools.cache
def plotly_packed() -> str:
    """Plotly's bundle gzipped and in base64, for the page to unpack (``DecompressionStream``): 4.6 MB of
    JavaScript becomes about 1.8 MB of page. Made once per Plotly version and kept in the cache folder."""
    import plotly  # only when a page is written: a large import
    from plotly.offline import get_plotlyjs

    from orchestrate.cache import cache_dir, cached

    def pack(tmp: Path) -> None:
        tmp.write_text(base64.b64encode(gzip.compress(get_plotlyjs().encode(), compresslevel=9, mtime=0)).decode())

    return cached(cache_dir("plotly") / f"plotly-{plotly.__version__}.js.gz.b64", pack).read_text()


def _script_json(data: Any) -> str:
    """JSON to sit inside a ``<script>`` element: no ``</script>`` can end it early."""
    return json.dumps(data, separators=(",", ":"), default=str).replace("</", "<\\/")


def render(run_dir: Path, found: list[VariantPaths]) -> str:
    """The page of the results in ``found`` (variant folders of ``run_dir``)."""
    runs = _runs(run_dir, found)
    parts = sections(run_dir, runs)
    details = [{"label": r.label, "html": prose(summary_md(r.summary))} for r in runs]
    scenario = next((r.summary.scenario for r in runs if r.summary.scenario), run_dir.name)
    env = jinja2.Environment(loader=jinja2.PackageLoader("orchestrate.report", "templates"),
                             autoescape=jinja2.select_autoescape(["j2"]))
    return env.get_template(TEMPLATE).render(
        scenario=scenario, run=run_dir.name, n_runs=len(runs), sections=parts, details=details,
        definitions=MARKDOWN.render(METRIC_DEFINITIONS), tokenswarm=version(),
        written=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        figures=_script_json({k: v for s in parts for k, v in s["data"].items()}), plotly_packed=plotly_packed())


def write_html_report(run_dir: Path, found: list[VariantPaths] | None = None) -> Path | None:
    """Write ``report.html`` into ``run_dir`` (atomically: a reader never sees half a page); None when no
    variant has a summary yet.

    :param found: the variant folders to show (default: the run's, as ``variant_dirs`` lists them).
    """
    found = variant_dirs(run_dir) if found is None else found
    if not any(p.summary_json.is_file() for p in found):
        return None
    target = report_html(run_dir)
    tmp = target.with_suffix(".tmp")
    try:
        tmp.write_text(render(run_dir, found), encoding="utf-8")
    finally:
        forget_records()  # the summary's frame, drawn here: no longer needed
    tmp.replace(target)
    return target
