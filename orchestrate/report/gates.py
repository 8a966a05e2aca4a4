"""A run judged by its gates (``fail_if:``, ``--fail-if``): which held, which failed, with the figure that failed it.

Stage: report. Each gate's figure is read from each variant's ``summary.json`` (``figure``); the verdicts go to
``gates.json`` in the run folder and to one line each on the console, and a failed gate makes the run exit with
``GATE_FAILED`` (``commands/run.py``).

A gate against a baseline run (``decode_tok_s < 0.95 × baseline``) compares with the same variant of that run (or
its only one) and is judged with the two runs' 95 % intervals, so noise does not fail a build: it fails only when
the figure is past the limit (factor × the baseline's figure) by more than the noise of the difference,
√(h² + (factor · h_b)²) with h and h_b the two intervals' half widths. A figure without an interval is judged
as it is, and the line says so.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from orchestrate.report.formats import fmt_num
from orchestrate.report.jsontypes import lookup
from orchestrate.report.schema import Summary
from orchestrate.scenario.gates import LATENCIES, Gate

GATE_FAILED = 3
"""The exit code of a run whose every variant completed and a gate failed."""
GATES_FILE = "gates.json"
PATHS = {
    **{f"{metric}.{stat}": f"latency_ms.{metric.removesuffix('_ms')}.{stat}"
       for metric in LATENCIES for stat in ("p50", "p90", "p99", "mean", "max")},
    "completed": "requests.completed", "errors": "requests.errors", "decode_tok_s": "throughput.decode_tok_s",
    "prefill_tok_s": "throughput.prefill_tok_s", "requests_per_s": "throughput.requests_per_s",
    "slo_attainment": "goodput.share", "goodput_rps": "goodput.requests_per_s",
    "valid_share": "request.validity.share", "inputs_per_s": "request.inputs.per_s",
    "joules_per_output_token": "energy.joules_per_output_token", "capacity": "capacity.max_passing",
    **{f"steady.{key}": f"steady_state.{key}" for key in ("decode_tok_s", "prefill_tok_s", "ttft_ms.p50", "ttft_ms.p99",
                                                         "tpot_ms.p50", "tpot_ms.p99")},
}
"""Each gate figure's place in ``summary.json`` (``error_share`` is computed: errors ÷ sent)."""
INTERVALS = {
    **{f"{metric}.{stat}": f"intervals.{metric}.{stat}" for metric in LATENCIES for stat in ("p50", "p90", "p99", "mean")},
    **{key: f"intervals.{key}" for key in ("decode_tok_s", "prefill_tok_s", "requests_per_s")},
    "slo_attainment": "intervals.goodput_share",
    **{f"steady.{key}": f"steady_state.intervals.{key}" for key in ("decode_tok_s", "prefill_tok_s", "ttft_ms.p50",
                                                                   "ttft_ms.p99", "tpot_ms.p50", "tpot_ms.p99")},
}
"""Each gate figure's 95 % interval in ``summary.json``, where it has one."""


def figure(summary: Summary, name: str) -> float | None:
    """The value a gate's figure has in ``summary``; None where the summary has none (no SLO, no check)."""
    if name == "error_share":
        sent = summary.requests.sent
        return summary.requests.errors / sent if sent else None
    value = lookup(summary, PATHS[name])
    return None if value is None else float(value)


def half_width(summary: Summary, name: str) -> float | None:
    """Half the width of the figure's 95 % interval; None where it has none bounded on both sides."""
    found = lookup(summary, INTERVALS[name]) if name in INTERVALS else None
    if found is None or found.low is None or found.high is None:
        return None
    return (found.high - found.low) / 2


@dataclass(frozen=True)
class Verdict:
    """One gate on one variant; a baseline gate's ``limit`` (factor × the baseline's figure) and ``noise`` (the
    half width of the difference, None where a figure had no interval)."""

    gate: str
    variant: str
    value: float | None
    failed: bool
    limit: float | None = None
    noise: float | None = None
    why: str | None = None
    """Why the gate could not be judged (no figure, no baseline)."""

    def line(self) -> str:
        """``gate failed: ttft_ms.p99 > 2000 (default: ttft_ms.p99 = 2,412.3)``."""
        name = self.gate.split()[0]
        if self.why is not None:
            return f"gate failed: {self.gate} ({self.variant}: {self.why}, so it cannot hold)"
        if self.value is None:  # a gate that cannot be judged fails: a CI must not pass on a figure never measured
            return f"gate failed: {self.gate} ({self.variant}: no {name} in its summary, so it cannot hold)"
        said = f"{self.variant}: {name} = {_shown(self.value)}"
        if self.limit is not None:
            said += f"; limit {_shown(self.limit)}" + (
                f", noise ± {_shown(self.noise)}" if self.noise is not None else ", no interval: judged as measured")
        return f"gate {'failed' if self.failed else 'held'}: {self.gate} ({said})"


def _shown(value: float) -> str:
    return fmt_num(value, 4 if abs(value) < 1 else 1)


def judge(gates: tuple[Gate, ...], summaries: dict[str, Summary | None],
          baseline: dict[str, Summary | None] | None = None) -> list[Verdict]:
    """Every gate on every variant that has a summary; a relative gate against ``baseline``'s summaries."""
    out = []
    for gate in gates:
        for variant, summary in summaries.items():
            if summary is None:
                continue
            value = figure(summary, gate.figure)
            if gate.relative:
                out.append(_against(gate, variant, summary, value, _baseline_of(variant, baseline or {})))
            else:
                out.append(Verdict(str(gate), variant, value, value is None or gate.fails(value)))
    return out


def _baseline_of(variant: str, baseline: dict[str, Summary | None]) -> Summary | None:
    """The baseline run's variant of the same folder (``repeat-2/fa-on``), else of the same name, else its only one."""
    if variant in baseline:
        return baseline[variant]
    named = [s for key, s in baseline.items() if Path(key).name == Path(variant).name]
    if named:
        return named[0]
    return next(iter(baseline.values())) if len(baseline) == 1 else None


def _against(gate: Gate, variant: str, summary: Summary, value: float | None, base: Summary | None) -> Verdict:
    """A relative gate: fails when ``value`` is past factor × the baseline's figure by more than the noise."""
    if base is None:
        return Verdict(str(gate), variant, value, True, why="no such variant in the baseline run")
    reference = figure(base, gate.figure)
    if reference is None:
        return Verdict(str(gate), variant, value, True, why=f"no {gate.figure} in the baseline's summary")
    limit = gate.value * reference
    if value is None:
        return Verdict(str(gate), variant, None, True, limit=limit)
    mine, theirs = half_width(summary, gate.figure), half_width(base, gate.figure)
    noise = None if mine is None or theirs is None else math.hypot(mine, gate.value * theirs)
    margin = noise or 0.0
    if gate.op in ("<", "<="):
        failed = gate.fails(value + margin, limit)
    elif gate.op in (">", ">="):
        failed = gate.fails(value - margin, limit)
    else:
        failed = gate.fails(value, limit)
    return Verdict(str(gate), variant, value, failed, limit=limit, noise=noise)


def write_gates(run: Path, verdicts: list[Verdict]) -> Path:
    """``gates.json``: every verdict, and whether any failed."""
    path = run / GATES_FILE
    data: dict[str, Any] = {"failed": any(v.failed for v in verdicts), "verdicts": [asdict(v) for v in verdicts]}
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path
