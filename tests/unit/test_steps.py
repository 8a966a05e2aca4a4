"""orchestrate/load/steps.py (a sweep's records merged) and report/sweep_report.sweep_block (its summary block)."""

from __future__ import annotations

import json

from orchestrate.load.steps import merge_step_records
from orchestrate.report.sweep_report import sweep_block
from orchestrate.results import VariantPaths
from orchestrate.scenario.spec import Sweep

SWEEP = Sweep(key="users", values=(1, 4, 16), warmup_prompts=2, settle_s=0.5)


def test_the_variants_records_are_its_steps_in_order_and_a_step_that_never_ran_is_said(tmp_path) -> None:
    paths = VariantPaths.create(tmp_path, "v")
    paths.records.write_text('{"stale": true}\n')
    for label, lines in (("users-4", '{"i": 2}\n{"i": 3}'), ("users-1", '{"i": 1}\n'), ("warmup", '{"w": 1}\n')):
        step = VariantPaths.create(paths.dir / "steps", label)
        step.records.write_text(lines)  # the last line of users-4 has no newline: it gets one
    VariantPaths(paths.dir / "steps" / "users-1").summary_json.write_text(json.dumps({"status": "completed"}))
    VariantPaths(paths.dir / "steps" / "users-4").summary_json.write_text(json.dumps({"status": "server_lost"}))
    merge_step_records(paths, (SWEEP.label(v) for v in SWEEP.values))
    assert paths.records.read_text() == '{"i": 1}\n{"i": 2}\n{"i": 3}\n'  # no warm-up, nothing stale
    block = sweep_block(paths, SWEEP)
    assert (block["key"], block["values"], block["warmup_prompts"], block["settle_s"]) == ("users", [1, 4, 16], 2, 0.5)
    assert [(r["label"], r["status"]) for r in block["steps"]] == [
        ("users-1", "completed"), ("users-4", "server_lost"), ("users-16", "not_run")]
