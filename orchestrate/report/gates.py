"""A run judged by its gates (``fail_if:``, ``--fail-if``): which held, which failed, with the figure that failed it.

Stage: report. Each gate's figure is read from each variant's ``summary.json`` (``figure``); the verdicts go to
``gates.json`` in the run folder and to one line each on the console, and a failed gate makes the run exit with
``GATE_FAILED`` (``commands/run.py``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from orchestrate.report.formats import fmt_num
from orchestrate.report.htmlreport import lookup
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


def figure(summary: Summary, name: str) -> float | None:
    """The value a gate's figure has in ``summary``; None where the summary has none (no SLO, no check)."""
    if name == "error_share":
        sent = summary.requests.sent
        return summary.requests.errors / sent if sent else None
    value = lookup(summary, PATHS[name])
    return None if value is None else float(value)


@dataclass(frozen=True)
class Verdict:
    """One gate on one variant."""

    gate: str
    variant: str
    value: float | None
    failed: bool

    def line(self) -> str:
        """``gate failed: ttft_ms.p99 > 2000 (default: ttft_ms.p99 = 2,412.3)``."""
        name = self.gate.split()[0]
        if self.value is None:  # a gate that cannot be judged fails: a CI must not pass on a figure never measured
            return f"gate failed: {self.gate} ({self.variant}: no {name} in its summary, so it cannot hold)"
        shown = fmt_num(self.value, 4 if abs(self.value) < 1 else 1)
        return f"gate {'failed' if self.failed else 'held'}: {self.gate} ({self.variant}: {name} = {shown})"


def judge(gates: tuple[Gate, ...], summaries: dict[str, Summary | None]) -> list[Verdict]:
    """Every gate on every variant that has a summary."""
    out = []
    for gate in gates:
        for variant, summary in summaries.items():
            if summary is None:
                continue
            value = figure(summary, gate.figure)
            out.append(Verdict(str(gate), variant, value, value is None or gate.fails(value)))
    return out


def write_gates(run: Path, verdicts: list[Verdict]) -> Path:
    """``gates.json``: every verdict, and whether any failed."""
    path = run / GATES_FILE
    data: dict[str, Any] = {"failed": any(v.failed for v in verdicts), "verdicts": [asdict(v) for v in verdicts]}
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path
