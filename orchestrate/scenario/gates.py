"""A scenario's gates (``fail_if:``, and ``--fail-if`` on the command line): what must hold, or the run fails with
its own exit code, for CI.

Stage: scenario. A gate is ``FIGURE OP NUMBER`` (``ttft_ms.p99 > 2000``, ``error_share > 0.01``,
``slo_attainment < 0.99``): the run fails when the condition is true for any variant. The figures a gate may name
are ``FIGURES`` (``orchestrate/report/gates.py`` reads each from a summary); a figure a variant does not have (no
SLO, no reply check) fails its gate, and the line says why: a CI must not pass on a figure never measured. Parsed
here, once: a bad gate is one line naming it.

A gate may compare with an earlier run (``--baseline RUN``): ``decode_tok_s < 0.95 x baseline`` (``×`` or ``*``
too) fails when the figure is below 0.95 times the baseline's beyond the two runs' noise
(``report/gates.py``).

```yaml
fail_if:
  - error_share > 0.01
  - ttft_ms.p99 > 2000
  - slo_attainment < 0.99
  - decode_tok_s < 0.95 x baseline
```
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import Any, Callable

LATENCIES = ("ttft_ms", "ttfo_ms", "tpot_ms", "itl_ms", "e2e_ms")
STATS = ("p50", "p90", "p99", "mean", "max")
FIGURES = (
    *(f"{metric}.{stat}" for metric in LATENCIES for stat in STATS),
    "error_share", "completed", "errors", "decode_tok_s", "prefill_tok_s", "requests_per_s", "slo_attainment",
    "goodput_rps", "valid_share", "inputs_per_s", "joules_per_output_token", "capacity",
    "steady.decode_tok_s", "steady.prefill_tok_s", "steady.ttft_ms.p50", "steady.ttft_ms.p99", "steady.tpot_ms.p50",
    "steady.tpot_ms.p99",
)
"""The figures a gate may name (``report/gates.py`` reads them from ``summary.json``)."""
OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt}
_GATE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(<=|>=|==|!=|<|>)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
                   r"\s*(?:([x×*])\s*(baseline))?\s*$")


@dataclass(frozen=True)
class Gate:
    """``figure op value``: the run fails when it is true for any variant."""

    figure: str
    op: str
    value: float
    relative: bool = False
    """``value`` is a factor of the baseline run's figure (``--baseline``)."""

    def __str__(self) -> str:
        return f"{self.figure} {self.op} {self.value:g}" + (" × baseline" if self.relative else "")

    def fails(self, found: float, limit: float | None = None) -> bool:
        """True when ``found`` makes the condition true (the run fails); ``limit`` in place of the value (a
        relative gate's value × the baseline)."""
        return OPERATORS[self.op](found, self.value if limit is None else limit)


def parse_gate(text: Any) -> Gate:
    """``"ttft_ms.p99 > 2000"`` → a ``Gate``; ``ValueError`` (one line) names what is wrong."""
    match = _GATE.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"must be FIGURE OP NUMBER, e.g. 'ttft_ms.p99 > 2000' (OP one of {', '.join(OPERATORS)}), "
                         f"or FIGURE OP FACTOR x baseline, e.g. 'decode_tok_s < 0.95 x baseline', got {text!r}")
    figure, op, value, _, baseline = match.groups()
    if figure not in FIGURES:
        raise ValueError(f"unknown figure {figure!r}; one of: {', '.join(FIGURES)}")
    return Gate(figure, op, float(value), relative=baseline is not None)
