"""A sweep's figures step by step (the ``sweep`` block), and where one variant stops beating another.

Stage: report. Every number comes from a step's own ``summary.json`` (``steps/<key>-<value>/``): nothing is
re-aggregated here. ``sweep_block`` keeps each step's ``formats.py:summary_numbers``; ``speedups`` divides two
variants' steps, for ``compare.json`` (``compare_report.py`` says it in words, ``markdown.py`` tabulates the
block, ``plots.py`` draws it).
"""

from __future__ import annotations

import json
from typing import Any

from orchestrate.report.formats import summary_numbers
from orchestrate.report.jsontypes import from_json
from orchestrate.report.schema.summary import Summary
from orchestrate.results import VariantPaths
from orchestrate.scenario.spec import Sweep


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
                     **summary_numbers(from_json(Summary, summary, str(paths.dir / 'steps' / label)))})
    return {"key": sweep.key, "values": list(sweep.values), "warmup_prompts": sweep.warmup_prompts,
            "settle_s": sweep.settle_s, "steps": rows}


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
