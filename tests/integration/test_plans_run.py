"""A kind of run the run loop has never heard of (two fixed loads, 1 then 3 users) through the same loop as every
other: the scripted reference server, real ``locust`` processes, the real result files and summaries.

The loop (``runloop.run_variant``) is given the plan and nothing else: it samples the plan's prompts, runs each
step in its own folder with its own summary, merges the records, and writes the variant's summary, as it does
for a sweep or a capacity search, without being changed for it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from orchestrate.load.prompts import PreparedPrompts, PromptSource
from orchestrate.load.steps import Step, StepPoint
from orchestrate.plans.base import StepDone, StepPlan, planned
from orchestrate.results import VariantPaths
from orchestrate.runloop import run_variant
from orchestrate.scenario.spec import LoadSpec, ServerSpec, Variant
from orchestrate.variantrun import Context
from tests.conftest import reference_server
from tests.helpers import read_jsonl, undocumented_keys

pytestmark = pytest.mark.integration

USERS = (1, 3)
PER_STEP = 6


class FixedSteps(StepPlan):
    """One load per user count, ``PER_STEP`` prompts each, dealt from one sample in order."""

    def __init__(self, variant: Variant) -> None:
        super().__init__(variant)
        self.steps: list[Step] = []

    @property
    def wanted(self) -> int:
        return PER_STEP * len(USERS)

    def sample(self, source: PromptSource) -> PreparedPrompts:
        self.prepared = source.prepare(replace(self.variant.load, num_prompts=self.wanted))
        prompts = self.prepared.sample.prompts
        self.steps = [Step(f"fixed-{users}", replace(self.variant.load, users=users, spawn_rate=float(users)),
                           tuple(replace(p, index=j) for j, p in enumerate(prompts[i * PER_STEP:(i + 1) * PER_STEP])),
                           StepPoint("users", users)) for i, users in enumerate(USERS)]
        return self.prepared

    def next_step(self, done: Sequence[StepDone]) -> Step | None:
        return self.steps[len(done)] if len(done) < len(self.steps) else None

    def planned_prompts(self, done: Sequence[StepDone]) -> int | None:
        return planned(self.steps)


def test_two_fixed_steps_run_through_the_loop_each_in_its_folder(tmp_path: Path) -> None:
    with reference_server(tmp_path / "server", "--ttft-ms", "20", "--itl-ms", "5") as url:
        variant = Variant("fixed", ServerSpec(launcher="external", url=url),
                          LoadSpec(dataset="synthetic:400", num_prompts=PER_STEP, max_tokens=8))
        paths = VariantPaths.create(tmp_path / "run", "fixed")
        result = run_variant(Context("plans"), variant, paths, plan=FixedSteps(variant))
    assert result.ending.status == "completed", result.ending
    assert [(d.step.label, d.status) for d in result.done] == [("fixed-1", "completed"), ("fixed-3", "completed")]
    for users in USERS:
        step = paths.step(f"fixed-{users}")
        summary = json.loads(step.summary_json.read_text())
        assert summary["step"] == {"key": "users", "value": users} and summary["settings"]["load.users"] == users
        assert summary["requests"]["completed"] == PER_STEP
        records = read_jsonl(step.records)
        assert len(records) == PER_STEP and all(r["request_id"].startswith(f"fixed-{users}/") for r in records)
    merged = read_jsonl(paths.records)
    assert [r["request_id"].split("/")[0] for r in merged] == ["fixed-1"] * PER_STEP + ["fixed-3"] * PER_STEP
    summary = json.loads(paths.summary_json.read_text())
    assert summary["status"] == "completed" and summary["planned_prompts"] == 2 * PER_STEP
    assert summary["requests"]["completed"] == 2 * PER_STEP and summary["requests"]["unsent"] == 0
    assert "step" not in summary and "sweep" not in summary and "capacity" not in summary
    assert undocumented_keys(summary) == []
