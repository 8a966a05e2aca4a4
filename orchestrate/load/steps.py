"""A sweep's steps, once they have run: the variant's ``requests.jsonl`` is its steps' records, in order.

Stage: load. Each step writes its own records (``steps/<key>-<value>/requests.jsonl``); the variant's
own file, which the report reads like any other variant's, is rebuilt from them here. The warm-up's
records stay in ``steps/warmup`` and count nowhere.
"""

from __future__ import annotations

from orchestrate.results import VariantPaths
from orchestrate.scenario.spec import Sweep


def merge_step_records(paths: VariantPaths, sweep: Sweep) -> None:
    """Rewrite ``paths.records`` as the records of every step that ran, step after step."""
    with paths.records.open("w", encoding="utf-8") as merged:
        for value in sweep.values:
            step = VariantPaths(paths.dir / "steps" / sweep.label(value))
            if step.records.exists():
                with step.records.open(encoding="utf-8") as f:
                    for line in f:
                        merged.write(line if line.endswith("\n") else line + "\n")
