"""Steps of one server start (a sweep's, a capacity search's probes), once they have run: the variant's
``requests.jsonl`` is its steps' records in order, and each step's ``metrics.jsonl`` is the server's samples
across it.

Stage: load. Each step writes its own records (``steps/<label>/requests.jsonl``); the variant's own file,
which the report reads like any other variant's, is rebuilt from them here. The warm-up's records stay
in ``steps/warmup`` and count nowhere. The sampler runs once for the variant; a step's own samples (one
taken right before it, one right after, and those between) let its summary compare the server's
``/metrics`` token counts with its own records.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from orchestrate.results import VariantPaths


def merge_step_records(paths: VariantPaths, labels: Iterable[str]) -> None:
    """Rewrite ``paths.records`` as the records of every step (``steps/<label>``) that ran, in order."""
    with paths.records.open("w", encoding="utf-8") as merged:
        for label in labels:
            step = VariantPaths(paths.dir / "steps" / label)
            if step.records.exists():
                with step.records.open(encoding="utf-8") as f:
                    for line in f:
                        merged.write(line if line.endswith("\n") else line + "\n")


def write_step_metrics(variant: VariantPaths, step: VariantPaths, start: float, end: float) -> None:
    """``step``'s ``metrics.jsonl``: the variant's samples taken from ``start`` to ``end`` (wall clock)."""
    try:
        lines = variant.metrics.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return
    kept = []
    for line in lines:
        try:
            t = float(json.loads(line)["t"])
        except (ValueError, KeyError, TypeError):
            continue  # a torn line
        if start <= t <= end:
            kept.append(line + "\n")
    step.metrics.write_text("".join(kept), encoding="utf-8")
