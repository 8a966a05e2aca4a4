"""A sweep's figures step by step: the table, the curves, and where one variant stops beating another.

Stage: report. Every number comes from a step's own ``summary.json`` (``steps/<key>-<value>/``): nothing
is re-aggregated here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrate.report.formats import fmt_ms, fmt_num, summary_numbers
from orchestrate.results import VariantPaths
from orchestrate.scenario.spec import Sweep

CURVES = (("decode_tok_s", "decode tok/s"), ("ttft_p50_ms", "TTFT p50 (ms)"), ("ttft_p99_ms", "TTFT p99 (ms)"),
          ("tpot_p50_ms", "TPOT p50 (ms)"))
"""What is plotted against the swept value, one panel each."""


def sweep_block(paths: VariantPaths, sweep: Sweep) -> dict[str, Any]:
    """The ``sweep`` block of a variant's summary, from its steps' own summaries.

    A step that never ran (the server died before it, or the run was stopped) is listed as
    ``not_run``; the warm-up counts nowhere.
    """
    rows = []
    for value in sweep.values:
        label = sweep.label(value)
        try:
            summary = json.loads(VariantPaths(paths.dir / "steps" / label).summary_json.read_text())
        except (OSError, ValueError):
            rows.append({"value": value, "label": label, "status": "not_run"})
            continue
        rows.append({"value": value, "label": label, "status": summary.get("status", "completed"),
                     **summary_numbers(summary)})
    return {"key": sweep.key, "values": list(sweep.values), "warmup_prompts": sweep.warmup_prompts,
            "settle_s": sweep.settle_s, "steps": rows}


def markdown(block: dict[str, Any]) -> list[str]:
    """The step table of ``summary.md``."""
    return [f"## Sweep over `{block['key']}`", "",
            f"Each step ran against the same server start after a warm-up of {block['warmup_prompts']} "
            f"prompts (not counted), {block['settle_s']:g} s apart; each has its own folder under `steps/`.", "",
            *step_table(block)]


def step_table(block: dict[str, Any]) -> list[str]:
    """One row per step: status, counts, decode and prefill tok/s, TTFT p50/p99, TPOT p50."""
    key = block["key"]
    lines = [f"| {key} | status | completed / sent | errors | decode tok/s | prefill tok/s | TTFT p50 | TTFT p99 "
             "| TPOT p50 |", "|---" * 9 + "|"]
    for row in block["steps"]:
        if row["status"] == "not_run":
            lines.append(f"| {row['value']} | not run |" + " – |" * 7)
            continue
        lines.append(f"| {row['value']} | {row['status']} | {row.get('completed')} / {row.get('sent')} | "
                     f"{row.get('errors')} | {fmt_num(row.get('decode_tok_s'))} | {fmt_num(row.get('prefill_tok_s'))} | "
                     f"{fmt_ms(row.get('ttft_p50_ms'))} | {fmt_ms(row.get('ttft_p99_ms'))} | "
                     f"{fmt_ms(row.get('tpot_p50_ms'))} |")
    return lines


def speedups(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any] | None:
    """Step by step, b's figures over a's (decode tok/s: above 1.0, b is faster), and the crossover.

    ``crossover`` is the first swept value at which b's decode speedup falls below 1.0 after being at
    or above it; ``below_from`` the first value at which it is below 1.0 at all (the same value, or
    the first step when b never led). None when the sweeps differ in key or values.
    """
    if a.get("key") != b.get("key") or a.get("values") != b.get("values"):
        return None
    steps, led, crossover, below_from = [], False, None, None
    for x, y in zip(a["steps"], b["steps"]):
        decode = _ratio(x.get("decode_tok_s"), y.get("decode_tok_s"))
        steps.append({"value": x["value"], "decode_tok_s": [x.get("decode_tok_s"), y.get("decode_tok_s")],
                      "speedup": decode, "ttft_p50_ratio": _ratio(x.get("ttft_p50_ms"), y.get("ttft_p50_ms")),
                      "tpot_p50_ratio": _ratio(x.get("tpot_p50_ms"), y.get("tpot_p50_ms"))})
        if decode is None:
            continue
        if decode >= 1.0:
            led = True
        elif below_from is None:
            below_from = x["value"]
            if led and crossover is None:
                crossover = x["value"]
    return {"key": a["key"], "steps": steps, "crossover": crossover, "below_from": below_from}


def _ratio(x: float | None, y: float | None) -> float | None:
    return y / x if x and y is not None else None


def crossover_sentence(key: str, result: dict[str, Any], a: str, b: str, setting: str) -> str:
    """One plain sentence naming where ``b`` (``setting`` changed) stops beating ``a``."""
    if result["crossover"] is not None:
        return (f"{b} decodes faster than {a} until {key} = {result['crossover']}, where its speedup falls "
                f"below 1.0 (changed: {setting}).")
    if result["below_from"] is not None:
        return f"{b} never decodes faster than {a} from {key} = {result['below_from']} on (changed: {setting})."
    if any(s["speedup"] is not None for s in result["steps"]):
        return f"{b} decodes at least as fast as {a} at every {key} (changed: {setting}); no crossover."
    return f"no decode figures to compare {a} and {b} by."


def plot(series: list[tuple[str, dict[str, Any]]], path: Path) -> Path | None:
    """Decode tok/s, TTFT p50/p99 and TPOT p50 against the swept value, one line per variant."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    series = [(label, block) for label, block in series if block.get("steps")]
    if not series:
        return None
    key = series[0][1]["key"]
    numeric = all(isinstance(v, (int, float)) and v > 0 for _, block in series for v in block["values"])
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    for ax, (metric, title) in zip(axes.flat, CURVES):
        for label, block in series:
            points = [(s["value"], s.get(metric)) for s in block["steps"] if s.get(metric) is not None]
            if points:
                ax.plot([p[0] if numeric else str(p[0]) for p in points], [p[1] for p in points], "o-", label=label)
        ax.set_title(title)
        ax.set_xlabel(key)
        if numeric and max(v for _, b in series for v in b["values"]) / min(v for _, b in series for v in b["values"]) >= 8:
            ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(f"sweep over {key}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
