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
from orchestrate.report.schema.sweep import Knee, Sweep, SweepStep
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
    return Sweep(sweep.key, tuple(sweep.values), sweep.warmup_prompts, sweep.settle_s, tuple(rows), knee(rows))


KNEE_MIN_BEND = 0.1
"""A sweep whose normalized throughput curve never rises this far above the straight line from its first step to
its last has no knee: its throughput grows about in proportion to the load."""


def knee(steps: list[SweepStep] | tuple[SweepStep, ...]) -> Knee | None:
    """The knee of the throughput curve by Kneedle (Satopää et al., 2011): the load and the throughput each scaled
    to 0..1 over the completed steps, the knee is the step farthest above the straight line between the first and
    the last. Throughput is decode tok/s (prefill tok/s where nothing was decoded: embeddings); None for fewer than three
    completed numeric steps, or a curve that bends less than ``KNEE_MIN_BEND``."""
    done = sorted((s for s in steps if s.status == "completed" and isinstance(s.value, (int, float))),
                  key=lambda s: s.value)
    figure = "decode_tok_s" if any(s.decode_tok_s for s in done) else "prefill_tok_s"
    points = [(float(s.value), getattr(s, figure)) for s in done if getattr(s, figure) is not None]
    if len(points) < 3:
        return None
    xs, ys = [x for x, _ in points], [y for _, y in points]
    x_span, y_span = xs[-1] - xs[0], max(ys) - min(ys)
    if x_span <= 0 or y_span <= 0:
        return None
    bend = [(y - min(ys)) / y_span - (x - xs[0]) / x_span for x, y in points]
    best = max(range(len(points)), key=lambda i: bend[i])
    if bend[best] < KNEE_MIN_BEND:
        return None
    at = next(s for s in done if float(s.value) == xs[best])
    after = next((s for s in done if float(s.value) > xs[best]), None)
    return Knee(value=at.value, figure=figure, throughput=ys[best], share_of_best=ys[best] / max(ys),
                ttft_p50_after=_ratio(at.ttft_p50_ms, after.ttft_p50_ms) if after is not None else None)


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
