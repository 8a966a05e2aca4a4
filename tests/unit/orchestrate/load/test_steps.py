"""orchestrate/load/steps.py (a sweep's records merged) and report/aggregates/sweep.sweep_block (its summary block)."""

from __future__ import annotations

import json

from orchestrate.load.steps import merge_step_records, write_step_metrics
from orchestrate.report.aggregates.sweep import sweep_block
from orchestrate.results import VariantPaths
from orchestrate.scenario.spec import Search, Sweep

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
    assert (block.key, block.values, block.warmup_prompts, block.settle_s) == ("users", (1, 4, 16), 2, 0.5)
    assert [(r.label, r.status) for r in block.steps] == [
        ("users-1", "completed"), ("users-4", "server_lost"), ("users-16", "not_run")]


def test_a_steps_metrics_are_the_variants_samples_between_its_start_and_end(tmp_path) -> None:
    """Its /metrics counter deltas then cover that step alone; a torn line (a killed writer) is skipped."""
    variant = VariantPaths.create(tmp_path, "v")
    lines = [json.dumps({"t": t, "metrics": {"tokens_predicted_total": 10 * t}}) for t in (99.5, 100.0, 101.0, 102.0)]
    torn = ['{"t": 101.5, "metr', "", "null", '{"metrics": {}}', '{"t": "soon"}', json.dumps({"t": None})]
    variant.metrics.write_text("\n".join(lines[:2] + torn + lines[2:]) + "\n" + '{"t": 103.0')
    step = VariantPaths.create(variant.dir / "steps", "probe-01-users-1")
    write_step_metrics(variant, step, 100.0, 101.0)
    assert step.metrics.read_text() == lines[1] + "\n" + lines[2] + "\n", "both ends are in, outside is out"
    write_step_metrics(variant, step, 200.0, 300.0)
    assert step.metrics.read_text() == "", "a step with no sample of its own has an empty file, not a stale one"


def test_no_variant_metrics_writes_no_step_metrics(tmp_path) -> None:
    variant = VariantPaths.create(tmp_path, "v")
    step = VariantPaths.create(variant.dir / "steps", "users-1")
    write_step_metrics(variant, step, 0.0, 1.0)
    assert not step.metrics.exists()


def test_a_searchs_records_are_its_probes_in_the_order_given(tmp_path) -> None:
    """Probe labels are not sorted: the order is the search's, and a probe with no folder adds nothing."""
    paths = VariantPaths.create(tmp_path, "v")
    search = Search("users", 1, 256)
    labels = [search.label(n, value) for n, value in ((1, 1), (2, 2.0), (3, 4.0), (4, 2.0))]
    for label, body in zip(labels[::-1], ('{"p": 4}\n', "", '{"p": 2}\n', '{"p": 1}\n')):
        if body:
            VariantPaths.create(paths.dir / "steps", label).records.write_text(body)
    merge_step_records(paths, labels)
    assert paths.records.read_text() == '{"p": 1}\n{"p": 2}\n{"p": 4}\n'
