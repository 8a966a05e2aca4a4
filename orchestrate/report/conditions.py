"""The conditions of a comparison beside its settings: the host's own load and the prompts completed.

Stage: report (``orchestrate.report.compare``'s confound check). Two variants one setting apart still
give no clean effect when the host was busy during either (a foreign load is never the same twice), when they
completed different prompts (a time cap ends a slow variant on the early, short ones), or when a GPU of either
throttled (a hot GPU is a slower machine): each such condition is named in ``confounded_by``.
"""

from __future__ import annotations

from collections.abc import Set
from pathlib import Path
from typing import Any

from orchestrate.report.aggregates.headline import summarize_records
from orchestrate.report.aggregates.recordsfile import read_records
from orchestrate.report.aggregates.stats import numeric_column
from orchestrate.report.formats import summary_numbers
from orchestrate.report.jsontypes import from_json, to_json
from orchestrate.report.notes import busy_reasons
from orchestrate.report.schema.machine import Host
from orchestrate.report.schema.summary import Summary
from orchestrate.results import VariantPaths

HostBlock = Host | None
"""A summary's ``host`` block (``orchestrate.report.aggregates.host.summarize_host``), or None before it existed."""


def busy_text(host: HostBlock) -> str | None:
    """What kept the host busy (foreign CPU, steal, GPU users), or None when it was quiet."""
    return "; ".join(busy_reasons(host)) or None


def common_prompts(a: Set[int] | None, b: Set[int] | None) -> int | None:
    """How many prompts both completed (None when a summary does not say)."""
    return None if a is None or b is None else len(a & b)


def conditions(host_a: HostBlock, host_b: HostBlock, prompts_a: Set[int] | None,
               prompts_b: Set[int] | None, throttled: tuple[bool, bool] = (False, False)) -> list[str]:
    """``host_load``, ``prompt_set`` and ``gpu_throttle`` (a GPU of either slowed down: thermal, hardware, power
    brake), for those that make the pair unfair (empty: a fair pair)."""
    busy = bool(host_a and host_a.busy) or bool(host_b and host_b.busy)
    other = prompts_a is not None and prompts_b is not None and prompts_a != prompts_b
    return ["host_load"] * busy + ["prompt_set"] * other + ["gpu_throttle"] * any(throttled)


def numbers_over(variant_dir: Path, prompts: Set[int]) -> dict[str, Any] | None:
    """A variant's figures recomputed from its records of these prompts only (``summary_numbers``'s keys);
    None without such records. Aggregates (decode tok/s) then cover the span those requests took,
    which overlapped others'."""
    records = read_records(VariantPaths(variant_dir).records)
    if not records.empty:
        records = records[numeric_column(records, "prompt_index").isin(list(prompts))]
    return None if records.empty else summary_numbers(from_json(Summary, to_json(summarize_records(records))))
