"""The interactive charts of ``report.html``: Plotly figures as plain dicts (``data`` and ``layout``).

Stage: report. Formatting only: the curves come from ``aggregates/series.py``, the figures from the
typed summaries and ``compare.json``. Every run is one trace, coloured by its variant and dashed by its
repeat, in a legend group by variant: a click on a legend entry hides or shows that variant's runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestrate.report.compare_report import effect_name, held_text
from orchestrate.report.plots import CURVES
from orchestrate.report.schema.capacity import Capacity
from orchestrate.report.schema.request import Images
from orchestrate.report.schema.sweep import Sweep
from orchestrate.report.schema.trace import Trace
from orchestrate.report.schema.tune import TuneResult
from orchestrate.report.schema.ui import UiSteps

Figure = dict[str, Any]
"""``{"title", "data": [traces], "layout": {...}}``, drawn by ``Plotly.newPlot`` as is."""

COLORS = ("#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb", "#000000")
"""Paul Tol's bright scheme (readable by colour-blind readers), then black."""
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
"""One dash per repeat of a variant."""


@dataclass
class RunCurves:
    """One run's curves: what ``series.py`` drew from its records and ``metrics.jsonl``."""

    label: str
    """As ``compare.md`` names it: ``repeat-2/flash-attn-on``, or the variant's name."""
    variant: str
    repeat: int
    """1 without repeats."""
    latency: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)
    """Per metric (``ttft``...): its distribution, (ms, percent ≤)."""
    timeline: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)
    """Per curve (``decode``, ``prefill``, ``in_flight``, ``server_memory``, ``gpu_memory``, ``power``, ``gpu_util``,
    ``gpu_temperature``, ``gpu_sm_clock``): (s since the first send, value)."""
    spans: dict[str, Any] = field(default_factory=dict)
    """The request timeline (``series.request_spans``): send, first token, end, status; sampled."""


LATENCY_CHARTS = (("ttft", "TTFT: time to first token"), ("ttfo", "TTFO: time to the answer's first token"),
                  ("tpot", "TPOT: time per output token"), ("e2e", "E2E: request latency"))
TIMELINE_CHARTS = (("decode", "decode tokens/s (counted as the chunks arrived)", "tokens/s", "hv"),
                   ("prefill", "prefill tokens/s (each request's spread over its prefill)", "tokens/s", "hv"),
                   ("in_flight", "requests in flight", "requests", "hv"),
                   ("server_memory", "server memory", "GiB", "linear"),
                   ("gpu_memory", "GPU memory (or the machine's, on unified memory)", "GiB", "linear"),
                   ("power", "power", "W", "linear"),
                   ("gpu_util", "GPU utilization (mean over the server's GPUs)", "%", "linear"),
                   ("gpu_temperature", "GPU temperature (the hottest)", "°C", "linear"),
                   ("gpu_sm_clock", "GPU SM clock (the slowest: a drop is a throttle)", "MHz", "linear"),
                   ("running", "requests running (the server's /metrics)", "requests", "hv"),
                   ("waiting", "requests waiting: the server's queue (its /metrics)", "requests", "hv"),
                   ("kv_usage", "KV cache in use (the server's /metrics)", "%", "hv"),
                   ("server_decode", "tokens generated/s by the server's count (its /metrics, per scrape)", "tokens/s",
                    "hv"))


def _style(runs: list[RunCurves]) -> dict[str, dict[str, Any]]:
    """Each run's trace style: its variant's colour and legend entry (one per variant: a click hides or
    shows all its repeats), its repeat's dash."""
    variants = list(dict.fromkeys(r.variant for r in runs))
    first = {r.variant: r.label for r in reversed(runs)}
    return {r.label: {"line": {"color": COLORS[variants.index(r.variant) % len(COLORS)],
                               "dash": DASHES[(r.repeat - 1) % len(DASHES)]},
                      "legendgroup": r.variant, "name": r.variant, "showlegend": first[r.variant] == r.label}
            for r in runs}


def _layout(title: str, x: str, y: str, **extra: Any) -> Figure:
    return {"title": {"text": title, "font": {"size": 14}, "y": 0.98, "yanchor": "top", "x": 0.01, "xanchor": "left"}, "xaxis": {"title": {"text": x}},
            "yaxis": {"title": {"text": y}}, "hovermode": "closest", "margin": {"t": 80, "r": 10, "b": 45, "l": 60},
            "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0}, "height": 360, **extra}


def latency_figures(runs: list[RunCurves]) -> list[Figure]:
    """One distribution chart per latency metric that some run has: percent of requests within x ms."""
    style, out = _style(runs), []
    for key, title in LATENCY_CHARTS:
        traces = [{"type": "scatter", "mode": "lines", "x": r.latency[key][0], "y": r.latency[key][1],
                   "hovertemplate": f"%{{x:.1f}} ms: %{{y:.1f}} % of requests<extra>{r.label}</extra>",
                   **style[r.label]} for r in runs if r.latency.get(key) and r.latency[key][0]]
        if traces:
            out.append({"title": title, "data": traces,
                        "layout": _layout(title, "ms", "% of completed requests ≤ x")})
    return out


def timeline_figures(runs: list[RunCurves]) -> list[Figure]:
    """The load over time, one chart per curve that some run has."""
    style, out = _style(runs), []
    for key, title, unit, shape in TIMELINE_CHARTS:
        traces = [{"type": "scatter", "mode": "lines", "x": r.timeline[key][0], "y": r.timeline[key][1],
                   "line": {**style[r.label]["line"], "shape": shape},
                   "hovertemplate": f"%{{x:.2f}} s: %{{y:,.3~f}} {unit}<extra>{r.label}</extra>",
                   **{k: v for k, v in style[r.label].items() if k != "line"}}
                  for r in runs if r.timeline.get(key) and r.timeline[key][0]]
        if traces:
            out.append({"title": title, "data": traces, "layout": _layout(title, "s since the first request", unit)})
    return out


def step_figures(blocks: Sequence[tuple[str, Sweep | UiSteps]], what: str) -> list[Figure]:
    """Decode tok/s, TTFT and TPOT against the stepped value (a sweep's, or the web UI's user levels), one
    line per variant, a sweep's knee marked on it.

    :param blocks: (label, a summary's ``sweep`` or ``ui_steps`` block).
    """
    blocks = [(label, block) for label, block in blocks if block.steps]
    if not blocks:
        return []
    key = blocks[0][1].key
    values = sorted({v for _, block in blocks for v in block.values}, key=str)
    numeric = all(isinstance(v, (int, float)) and v > 0 for v in values)
    axis: dict[str, Any] = {"title": {"text": key}}
    if numeric and max(values) / min(values) >= 8:  # 1, 2, 4 … 32 users: evenly spaced, as the PNG
        axis.update(type="log", tickvals=sorted(values))
    out: list[Figure] = []
    for metric, title in CURVES:
        traces: list[dict[str, Any]] = []
        for i, (label, block) in enumerate(blocks):
            points = [(s.value, getattr(s, metric)) for s in block.steps if getattr(s, metric) is not None]
            if points:
                traces.append({"type": "scatter", "mode": "lines+markers", "name": label,
                               "x": [p[0] for p in points], "y": [p[1] for p in points],
                               "line": {"color": COLORS[i % len(COLORS)]},
                               "hovertemplate": f"{key} %{{x}}: %{{y:,.1f}}<extra>%{{fullData.name}}</extra>"})
                knee = getattr(block, "knee", None)  # a sweep's knee: marked on each of its curves
                at = next((p for p in points if knee is not None and p[0] == knee.value), None)
                if at is not None:
                    traces.append({"type": "scatter", "mode": "markers", "name": f"{label}: knee",
                                   "x": [at[0]], "y": [at[1]], "showlegend": False,
                                   "marker": {"symbol": "diamond-open", "size": 14, "color": COLORS[i % len(COLORS)]},
                                   "hovertemplate": f"the knee: {key} %{{x}}<extra>{label}</extra>"})
        if traces:
            out.append({"title": f"{what}: {title}", "data": traces,
                        "layout": {**_layout(f"{title} against {key}", key, title), "xaxis": axis}})
    return out


def trace_figures(label: str, block: Trace) -> list[Figure]:
    """A trace replay: requests due and sent each second, and latency percentiles by prompt length."""
    out: list[Figure] = []
    per_s = block.arrivals_per_s
    if per_s.scheduled:
        out.append({"title": f"{label}: arrivals", "data": [
            {"type": "scatter", "mode": "lines", "name": name, "x": list(range(len(counts))), "y": list(counts),
             "line": {"color": COLORS[i], "shape": "hv", "dash": "dot" if i else "solid"},
             "hovertemplate": f"second %{{x}}: %{{y}} {name}<extra></extra>"}
            for i, (name, counts) in enumerate((("scheduled", per_s.scheduled), ("sent", per_s.sent)))],
            "layout": _layout("Requests per second: as the trace scheduled them and as sent",
                              "s since the schedule's start", "requests")})
    buckets = [b for b in block.by_input_length if b.completed]
    if buckets:
        names = [f"{b.low:,}–{'' if b.high is None else f'{b.high:,}'}" for b in buckets]
        out.append({"title": f"{label}: latency by prompt length", "data": [
            {"type": "bar", "name": f"{metric} {p}", "x": names, "y": [getattr(getattr(b, key), p) for b in buckets],
             "marker": {"color": COLORS[i % len(COLORS)]},
             "hovertemplate": f"%{{x}} tokens: %{{y:,.1f}} ms<extra>{metric} {p}</extra>"}
            for i, (metric, key, p) in enumerate((("TTFT", "ttft_ms", "p50"), ("TTFT", "ttft_ms", "p99"),
                                                  ("E2E", "e2e_ms", "p99")))],
            "layout": _layout("Latency by prompt length (tokens)", "prompt tokens", "ms", barmode="group")})
    return out


def image_figures(label: str, block: Images) -> list[Figure]:
    """Images: TTFT p50 and p99 by image size beside the text-only requests', and image tokens by size."""
    rows = [(b.size, b.ttft_ms, b.image_tokens) for b in block.by_size]
    if block.ttft_ms_text_only is not None:
        rows.append(("text only", block.ttft_ms_text_only, None))
    names = [name for name, _, _ in rows]
    ttft = {"title": f"{label}: TTFT by image size", "data": [
        {"type": "bar", "name": f"TTFT {p}", "x": names, "y": [getattr(t, p) if t else None for _, t, _ in rows],
         "marker": {"color": COLORS[i]}, "hovertemplate": f"%{{x}}: %{{y:,.1f}} ms<extra>TTFT {p}</extra>"}
        for i, p in enumerate(("p50", "p99"))], "layout": _layout("TTFT by image size", "images", "ms", barmode="group")}
    tokens = {"title": f"{label}: image tokens by size", "data": [
        {"type": "bar", "name": "image tokens p50", "x": [b.size for b in block.by_size],
         "y": [b.image_tokens.p50 if b.image_tokens else None for b in block.by_size], "marker": {"color": COLORS[2]},
         "hovertemplate": "%{x}: %{y:,.0f} tokens<extra></extra>"}],
        "layout": _layout("Image tokens as the server counted them", "images", "tokens")}
    return [ttft, tokens]


def capacity_figures(label: str, block: Capacity) -> list[Figure]:
    """A capacity search: each probe's attainment (green passed, red failed) against the load, and its
    steady-state decode tok/s."""
    axis = block.over if block.over == "users" else f"{block.over} ({block.unit})"
    done = [p for p in block.probes if p.attainment is not None]
    attain = {"type": "scatter", "mode": "markers", "name": "probes", "x": [p.value for p in done],
              "y": [100 * p.attainment for p in done if p.attainment is not None],
              "marker": {"size": 10, "color": ["#228833" if p.passed else "#ee6677" for p in done]},
              "text": [p.label for p in done],
              "hovertemplate": "%{x}: %{y:.1f} % met the SLO (%{text})<extra></extra>"}
    attainment = 100 * (block.attainment or 0.0)
    target = {"type": "scatter", "mode": "lines", "name": f"attainment {attainment:g} %",
              "x": [min(p.value for p in done), max(p.value for p in done)] if done else [],
              "y": [attainment] * (2 if done else 0), "line": {"color": "#888", "dash": "dash"}}
    decode = [p for p in block.probes if p.steady_state.decode_tok_s is not None]
    speed = {"type": "scatter", "mode": "markers", "name": "steady-state decode tok/s",
             "x": [p.value for p in decode], "y": [p.steady_state.decode_tok_s for p in decode],
             "marker": {"size": 9, "color": "#4477aa",
                        "symbol": ["circle-open" if p.stopped_early else "circle" for p in decode]},
             "hovertemplate": "%{x}: %{y:,.1f} tok/s<extra></extra>"}
    return [{"title": f"{label}: attainment", "data": [attain, target],
             "layout": _layout(f"{label}: requests within the SLO (steady state)", axis, "%")},
            {"title": f"{label}: decode", "data": [speed],
             "layout": _layout(f"{label}: decode tok/s (steady state; hollow: stopped early)", axis, "tokens/s")}]


def tune_figures(block: TuneResult) -> list[Figure]:
    """A tune: each measured candidate's capacity against its peak memory and, with energy, its joules per output
    token; the frontier's candidates filled, the best in green."""
    out = []
    for key, what, unit, ahead in (("peak_memory_gib", "peak memory", "GiB", block.frontier_memory),
                                   ("joules_per_output_token", "energy per output token", "J/token",
                                    block.frontier_energy)):
        shown = [c for c in block.candidates if c.capacity is not None and getattr(c, key) is not None]
        if not shown:
            continue
        out.append({"title": f"capacity against {what}", "data": [{
            "type": "scatter", "mode": "markers", "name": "candidates", "x": [getattr(c, key) for c in shown],
            "y": [c.capacity for c in shown], "text": [c.name for c in shown],
            "marker": {"size": 11, "color": ["#228833" if c.name == block.best else "#4477aa" for c in shown],
                       "symbol": ["circle" if c.name in ahead else "circle-open" for c in shown]},
            "hovertemplate": "%{text}: %{y} at %{x:.3g} " + unit + "<extra></extra>"}],
            "layout": _layout(f"Capacity against {what} (filled: the frontier; green: the best)", unit, "capacity")})
    return out


def effect_figures(effects: list[dict[str, Any]], metrics: tuple[tuple[str, str], ...]) -> list[Figure]:
    """Each clean effect's ratio (b / a) per metric, with its min–max over repeats (or one run's 95 % interval) as
    an error bar, and the line of no change at 1.0; an effect within noise is drawn grey."""
    out: list[Figure] = []
    for metric, title in metrics:
        shown = [e for e in effects if (e.get("ratios") or {}).get(metric) is not None]
        if not shown:
            continue
        labels = effect_labels(shown)
        ratio = [e["ratios"][metric] for e in shown]
        ranges = [_error_bar(e, metric, r) for e, r in zip(shown, ratio)]
        noise = [bool((e.get("within_noise") or {}).get(metric)) for e in shown]
        trace = {"type": "scatter", "mode": "markers", "orientation": "h", "name": title, "x": ratio, "y": labels,
                 "error_x": {"type": "data", "symmetric": False, "array": [hi - r for (_, hi), r in zip(ranges, ratio)],
                             "arrayminus": [r - lo for (lo, _), r in zip(ranges, ratio)]},
                 "marker": {"size": 11, "color": ["#bbbbbb" if n else "#4477aa" for n in noise]},
                 "customdata": [[lo, hi, "95 % interval" if (e.get("interval") or {}).get(metric) else
                                 f"min–max over {e.get('n_repeats', 1)} repeat(s)",
                                 "within noise" if n else "beyond noise", held_text(e) or "nothing else varied"]
                                for (lo, hi), e, n in zip(ranges, shown, noise)],
                 "hovertemplate": "×%{x:.3f} (%{customdata[2]} ×%{customdata[0]:.3f}–×%{customdata[1]:.3f}; "
                                  "%{customdata[3]})<br>with %{customdata[4]}<extra></extra>"}
        out.append({"title": f"effect on {title}", "data": [trace],
                    "layout": _layout(f"effect on {title}: to / from (1 = no change)", "ratio", "",
                                      shapes=[{"type": "line", "xref": "x", "x0": 1, "x1": 1, "yref": "paper",
                                               "y0": 0, "y1": 1, "line": {"color": "#888", "dash": "dot"}}],
                                      height=max(220, 90 + 40 * len(shown)), margin={"l": 330, "t": 40, "r": 10, "b": 45},
                                      showlegend=False)})
    return out


def _error_bar(effect: dict[str, Any], metric: str, ratio: float) -> list[float]:
    """An effect's error bar: its min–max over repeats, or one run's 95 % interval of the ratio, or none."""
    spread = (effect.get("range") or {}).get(metric)
    if spread and spread[0] != spread[1]:
        return spread
    return (effect.get("interval") or {}).get(metric) or [ratio, ratio]


HELD_CHARS = 36
"""An effect's label on its chart keeps this much of what was held (the hover has it all)."""


def effect_labels(effects: list[dict[str, Any]]) -> list[str]:
    """``drafter none → draft (flash-attn=on)``: what changed and what it was held with, short enough for an
    axis, each label distinct (a chart's category axis would draw two equal labels on one line)."""
    out: list[str] = []
    for e in effects:
        held = held_text(e).replace("server.flags.", "")
        held = held if len(held) <= HELD_CHARS else held[:HELD_CHARS - 1] + "…"
        label = effect_name(e) + (f" ({held})" if held else "")
        out.append(label if label not in out else f"{label} #{len(out) + 1}")
    return out


def errors_figure(errors: dict[str, dict[str, int]]) -> Figure | None:
    """Errors by cause, stacked per run. :param errors: per run label, its ``errors_by_class``."""
    causes = list(dict.fromkeys(c for by_class in errors.values() for c in by_class))
    if not causes:
        return None
    runs = list(errors)
    traces = [{"type": "bar", "name": cause, "x": runs, "y": [errors[r].get(cause, 0) for r in runs],
               "marker": {"color": COLORS[i % len(COLORS)]},
               "hovertemplate": f"{cause}: %{{y}}<extra>%{{x}}</extra>"} for i, cause in enumerate(causes)]
    return {"title": "errors by cause", "data": traces,
            "layout": _layout("errors by cause", "", "requests", barmode="stack")}


STATUS_COLORS = {"ok": "#4477aa", "error": "#ee6677", "cancelled": "#bbbbbb"}


def request_timeline_figure(run: RunCurves) -> Figure | None:
    """One run's requests, each a line from send to end at its place in send order, its first token a tick,
    coloured by status; None without requests."""
    spans = run.spans
    if not spans or not spans["send"]:
        return None
    traces: list[dict[str, Any]] = []
    for status in sorted(set(spans["status"]), key=lambda s: (s not in STATUS_COLORS, s)):
        x: list[float | None] = []
        y: list[int | None] = []
        for i, (start, end, found) in enumerate(zip(spans["send"], spans["end"], spans["status"])):
            if found == status:
                x += [start, end, None]
                y += [i * spans["every"], i * spans["every"], None]
        traces.append({"type": "scattergl", "mode": "lines", "name": status, "x": x, "y": y, "connectgaps": False,
                       "line": {"color": STATUS_COLORS.get(status, "#000000"), "width": 2},
                       "hoverinfo": "skip"})
    firsts = [(t, i * spans["every"]) for i, t in enumerate(spans["first"]) if t is not None]
    traces.append({"type": "scattergl", "mode": "markers", "name": "first token", "x": [t for t, _ in firsts],
                   "y": [i for _, i in firsts], "marker": {"symbol": "line-ns-open", "size": 5, "color": "#444444"},
                   "hovertemplate": "request %{y}: first token at %{x:.3f} s<extra></extra>"})
    sampled = f" (every {spans['every']}th of {spans['of']:,})" if spans["every"] > 1 else ""
    title = f"{run.label}: each request from send to end{sampled}"
    return {"title": title, "data": traces,
            "layout": _layout(title, "s since the first request", "request (in send order)",
                              height=min(900, max(300, 120 + len(spans["send"]) // 4)))}
