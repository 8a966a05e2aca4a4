"""A sweep's figures step by step (the ``sweep`` block), and where one variant stops beating another.

Stage: report. Every number comes from a step's own ``summary.json`` (``steps/<key>-<value>/``): nothing is
re-aggregated here. ``sweep_block`` keeps each step's ``formats.py:summary_numbers``; ``speedups`` divides two
variants' steps, for ``compare.json`` (``compare_report.py`` says it in words, ``markdown.py`` tabulates the
block, ``plots.py`` draws it).
"""

from __future__ import annotations

from typing import Any

from orchestrate.report.formats import summary_numbers
from orchestrate.report.jsontypes import from_json
from orchestrate.report.schema.summary import Summary
from orchestrate.report.schema.sweep import Sweep, SweepStep
from orchestrate.results import VariantPaths, read_json
from orchestrate.scenario.spec import Sweep as SweepSpec


def step_summary(paths: VariantPaths) -> Summary | None:
    """A step's ``summary.json`` as the typed ``Summary``; None when it has none (or half of one). What
    ``summary.py:read_summary`` does: that module imports this one, so it cannot be imported here."""
    data = read_json(paths.summary_json)
    return from_json(Summary, data, str(paths.summary_json)) if isinstance(data, dict) else None


def sweep_block(paths: VariantPaths, sweep: SweepSpec) -> Sweep:
    """The ``sweep`` block of a variant's summary, from its steps' own summaries.

    A step that never ran (the server died before it, or the run was stopped) is listed as
    ``not_run``; the warm-up counts nowhere. A step's summary of the wrong shape is a ``ResultsError``
    naming it.
    """
    rows = []
    for value in sweep.values:
        label = sweep.label(value)
        summary = step_summary(VariantPaths(paths.dir / "steps" / label))
        row: dict[str, Any] = {"value": value, "label": label, "status": "not_run"} if summary is None else \
            {"value": value, "label": label, "status": summary.status or "completed", **summary_numbers(summary)}
        rows.append(from_json(SweepStep, row, str(paths.dir / "steps" / label)))
    return Sweep(sweep.key, tuple(sweep.values), sweep.warmup_prompts, sweep.settle_s, tuple(rows))


def speedups(a: Sweep, b: Sweep) -> dict[str, Any] | None:
    """Step by step, b's figures over a's (decode tok/s: above 1.0, b is faster), and the crossover.

    ``crossover`` is the first swept value at which b's decode speedup falls below 1.0 after being at
    or above it; ``below_from`` the first value at which it is below 1.0 at all (the same value, or
    the first step when b never led). None when the sweeps differ in key or values. Plain data: it goes
    into ``compare.json`` as it is.
    """
    if a.key != b.key or a.values != b.values:
        return None
    steps, led, crossover, below_from = [], False, None, None
    for x, y in zip(a.steps, b.steps):
        decode = _ratio(x.decode_tok_s, y.decode_tok_s)
        steps.append({"value": x.value, "decode_tok_s": [x.decode_tok_s, y.decode_tok_s],
                      "speedup": decode, "ttft_p50_ratio": _ratio(x.ttft_p50_ms, y.ttft_p50_ms),
                      "tpot_p50_ratio": _ratio(x.tpot_p50_ms, y.tpot_p50_ms)})
        if decode is None:
            continue
        if decode >= 1.0:
            led = True
        elif below_from is None:
            below_from = x.value
            if led and crossover is None:
                crossover = x.value
    return {"key": a.key, "steps": steps, "crossover": crossover, "below_from": below_from}


def _ratio(x: float | None, y: float | None) -> float | None:
    return y / x if x and y is not None else None
