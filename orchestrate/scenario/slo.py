"""A scenario's service-level objectives (``slo:``), validated once: the limits goodput is judged by.

Stage: scenario. ``slo`` is a top-level key and a variant key; a variant's values override the top
level's key by key. The limits do not change the measurement, so they are not part of
``settings.variant_settings`` (two variants that differ only in their SLO are still repeats of one
experiment); they reach ``summary.json`` as its ``slo`` key, where ``tokenswarm report`` finds them
again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from orchestrate.scenario.yamlsource import Checker

SLO_KEYS = ("ttft_ms", "tpot_ms", "e2e_ms")
"""The limits a scenario may set, in ms; each names the ``requests.jsonl`` field it limits."""


@dataclass(frozen=True)
class Slo:
    """Upper limits in ms; None: not limited. A request exactly at a limit meets it (vLLM's ``<=``)."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None

    def as_dict(self) -> dict[str, float]:
        """The limits that are set, as ``summary.json``'s ``slo`` (``{"ttft_ms": 2000.0}``)."""
        return {key: value for key in SLO_KEYS if (value := getattr(self, key)) is not None}


def parse_slo(check: Checker, top: Any, top_at: tuple[Any, ...], own: Any,
              own_at: tuple[Any, ...]) -> Slo | None:
    """The top level's ``slo`` overridden key by key by a variant's; None when neither sets a limit.

    Errors name the line of the value that is wrong, in whichever section holds it.
    """
    base = check.mapping(top, top_at, set(SLO_KEYS))
    override = check.mapping(own, own_at, set(SLO_KEYS))
    values: dict[str, float] = {}
    for key in SLO_KEYS:
        if key in override:
            raw, where = override[key], own_at + (key,)
        elif key in base:
            raw, where = base[key], top_at + (key,)
        else:
            continue
        value = check.number(raw, where, float, 0)
        if value <= 0 or not math.isfinite(value):
            raise check.fail(where, f"must be a limit in milliseconds > 0, got {raw!r}")
        values[key] = value
    return Slo(**values) if values else None


def meets_slo(record: dict[str, Any], limits: dict[str, float]) -> bool:
    """One request (a line of ``requests.jsonl``) by goodput's rule (``report.aggregates.goodput``, which
    applies it to every record at once): completed (``status: ok``), and every limit held; a missing TTFT
    misses a TTFT limit, a missing TPOT (one output token) meets a TPOT limit. For records read as they
    arrive (a capacity probe's early stop)."""
    if record.get("status") != "ok":
        return False
    for key, limit in limits.items():
        value = record.get(key)
        if value is None:
            if key != "tpot_ms":
                return False
        elif value > limit:
            return False
    return True
