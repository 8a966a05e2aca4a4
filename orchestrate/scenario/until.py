"""``load.until``: stop a run once its figures are known to the precision asked, like GuideLLM's ``target_moe``.

Stage: scenario. ``until: {ttft_ms.p99: 0.05, decode_tok_s: 0.02}`` maps a figure of the steady-state window to
the relative half width of its 95 % interval that is precise enough (0.05: ±5 % of the figure). The run stops as
soon as every target holds inside the window (``load/precisionwatch.py`` checks as the records arrive);
``num_prompts`` and ``max_seconds`` still cap it, and the summary's ``until`` block says which targets held and
when, or why not. A run without a steady window (stages, a web UI run, a sweep's or a search's steps) cannot
take it: refused here, in one line.

```yaml
load:
  num_prompts: 5000          # the cap
  until: {ttft_ms.p99: 0.05, decode_tok_s: 0.02}
```
"""

from __future__ import annotations

from typing import Any

UNTIL = "until"
"""``stopped_by`` of a run stopped because every target held."""
FIGURES = ("decode_tok_s", "prefill_tok_s", "requests_per_s", "slo_attainment",
           *(f"{metric}.{stat}" for metric in ("ttft_ms", "tpot_ms") for stat in ("p50", "p90", "p99")))
"""The steady-state figures with an interval a target may name."""


def parse_until(raw: Any) -> dict[str, float]:
    """``{figure: relative half width}``, each checked; ``ValueError`` (one line) names what is wrong."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f"must map figures to a relative half width, e.g. {{ttft_ms.p99: 0.05}}, got {raw!r}")
    found = {}
    for figure, width in raw.items():
        if figure not in FIGURES:
            raise ValueError(f"unknown figure {figure!r}; one of: {', '.join(FIGURES)}")
        if isinstance(width, bool) or not isinstance(width, (int, float)) or not 0 < width < 1:
            raise ValueError(f"{figure}: a relative half width between 0 and 1 (0.05: ±5 %), got {width!r}")
        found[str(figure)] = float(width)
    return found


def parse_until_flag(text: str) -> dict[str, float]:
    """``--until 'ttft_ms.p99=0.05,decode_tok_s=0.02'`` → the targets."""
    pairs = [part.split("=", 1) for part in text.split(",") if part.strip()]
    if not pairs or any(len(pair) != 2 for pair in pairs):
        raise ValueError(f"must be FIGURE=WIDTH,..., e.g. 'ttft_ms.p99=0.05,decode_tok_s=0.02', got {text!r}")
    try:
        return parse_until({key.strip(): float(value) for key, value in pairs})
    except ValueError as exc:
        if "could not convert" in str(exc):
            raise ValueError(f"must be FIGURE=WIDTH,... with numbers, got {text!r}") from None
        raise
