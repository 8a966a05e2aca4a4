"""The kinds of run a scenario declares, each a step plan: one load, a sweep's values, a capacity search.

``plan_for`` is the one place that reads which kind a variant is; the run loop only sees ``StepPlan``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from functools import partial
from typing import Any

from locustfiles.dataset import Prompt
from orchestrate.load.precisionwatch import PrecisionWatch
from orchestrate.load.probewatch import ProbeWatch
from orchestrate.load.prompts import PreparedPrompts, PromptPool, PromptSource, TracePool
from orchestrate.load.steps import Step, StepPoint
from orchestrate.plans.base import StepDone, StepPlan, planned
from orchestrate.report.aggregates.capacity import UNITS, judge
from orchestrate.report.aggregates.precision import precision_now
from orchestrate.report.aggregates.sweep import sweep_block
from orchestrate.report.schema.capacity import Verdict
from orchestrate.report.schema.summary import Summary
from orchestrate.results import VariantPaths, write_json
from orchestrate.scenario.search import first_pool_size, next_probe, probe_load
from orchestrate.scenario.spec import Search, Sweep, Variant
from orchestrate.scenario.sweep import deal_prompts, sampling_load, warmup_load


class SinglePlan(StepPlan):
    """One load in the variant's own folder, after its ``warmup_prompts`` if it has any."""

    interactive = True

    def __init__(self, variant: Variant) -> None:
        super().__init__(variant)
        self.step: Step | None = None
        self.warmup_prompts: tuple[Prompt, ...] = ()

    @property
    def wanted(self) -> int:
        return self.variant.load.num_prompts

    def sample(self, source: PromptSource) -> PreparedPrompts:
        self.prepared = prepared = source.prepare(self.variant.load)
        self.step = Step(None, self.variant.load, tuple(prepared.sample.prompts))
        self.warmup_prompts = prepared.warmup
        return prepared

    def warmup(self) -> Step | None:
        load = replace(self.variant.load, max_seconds=None)
        return Step("warmup", load, self.warmup_prompts) if self.warmup_prompts else None

    def next_step(self, done: Sequence[StepDone]) -> Step | None:
        return None if done else self.step

    def planned_prompts(self, done: Sequence[StepDone]) -> int | None:
        return planned([self.step]) if self.step is not None else None

    def warmup_sent(self) -> int:
        return len(self.warmup_prompts)

    def run_facts(self, paths: VariantPaths) -> dict[str, Any]:
        return {"load": self.variant.load}

    def stop_early(self, step: Step, paths: VariantPaths) -> Callable[[], str | None]:
        """``load.until``: stop once every target's interval is as narrow as asked (not the warm-up)."""
        load = self.variant.load
        if not load.until or step is not self.step:
            return super().stop_early(step, paths)
        slo = self.variant.slo.as_dict() if self.variant.slo else None
        return PrecisionWatch(paths, load.until, partial(precision_now, paths, load, slo)).reached


class SweepPlan(StepPlan):
    """A load key's values, each a step (``steps/<key>-<value>``), dealt from one sample after a warm-up."""

    def __init__(self, variant: Variant, sweep: Sweep) -> None:
        super().__init__(variant)
        self.sweep, self.settle_s = sweep, sweep.settle_s
        self.steps: list[Step] = []
        self._warmup: Step | None = None

    @property
    def wanted(self) -> int:
        return sampling_load(self.variant).num_prompts

    def sample(self, source: PromptSource) -> PreparedPrompts:
        self.prepared = prepared = source.prepare(sampling_load(self.variant))
        warmup, dealt = deal_prompts(prepared.sample.prompts, list(self.variant.steps), self.sweep)
        self._warmup = Step("warmup", warmup_load(self.variant), tuple(warmup))
        self.steps = [Step(self.sweep.label(value), load, tuple(prompts), StepPoint(self.sweep.key, value))
                      for value, load, prompts in zip(self.sweep.values, self.variant.steps, dealt)]
        return prepared

    def warmup(self) -> Step | None:
        return self._warmup if self._warmup is not None and self._warmup.prompts else None

    def next_step(self, done: Sequence[StepDone]) -> Step | None:
        return self.steps[len(done)] if len(done) < len(self.steps) else None

    def planned_prompts(self, done: Sequence[StepDone]) -> int | None:
        return planned(self.steps) if self.steps else None

    def warmup_sent(self) -> int:
        return len(self._warmup.prompts) if self._warmup is not None else 0

    def run_facts(self, paths: VariantPaths) -> dict[str, Any]:
        return {"sweep": sweep_block(paths, self.sweep)}


class SearchPlan(StepPlan):
    """A capacity search: probe after probe (``steps/probe-NN-...``), each load chosen from the verdicts so far
    (``scenario.search.next_probe``), each dealt fresh prompts from a pool that grows as probes need them;
    ``search.json`` lists them as they run, and a probe that can no longer pass is stopped early."""

    def __init__(self, variant: Variant, search: Search) -> None:
        super().__init__(variant)
        assert variant.slo is not None  # the parser holds it: a search needs limits
        self.search, self.limits, self.settle_s = search, variant.slo.as_dict(), search.settle_s
        self.pool: PromptPool | TracePool | None = None
        self.started_ts: float | None = None
        """When the first probe was chosen (``search.json``; the capacity block's ``wall_s`` counts from it)."""

    @property
    def wanted(self) -> int:
        return first_pool_size(self.search, self.variant.load)

    def sample(self, source: PromptSource) -> PreparedPrompts:
        self.pool = source.pool(self.variant.load, self.wanted)
        self.prepared = self.pool.prepared
        return self.prepared

    def sample_note(self) -> str:
        return "; more are sampled as probes need them"

    def warmup(self) -> Step | None:
        """Each warm-up prompt a user (at most the scenario's users), before the first probe."""
        assert self.pool is not None
        load = self.variant.load
        load = replace(load, users=min(load.users, max(1, self.search.warmup_prompts)), max_seconds=None, rate=None)
        prompts = tuple(self.pool.take(self.search.warmup_prompts))
        return Step("warmup", load, prompts) if prompts else None

    def next_step(self, done: Sequence[StepDone]) -> Step | None:
        assert self.pool is not None
        self.started_ts = self.started_ts or time.time()
        history = [(d.step.point.value, d.verdict.passed) for d in done
                   if d.step.point is not None and d.verdict is not None]
        value = next_probe(self.search, history)
        if value is None:
            return None
        n, load = len(done) + 1, probe_load(self.search, self.variant.load, value)
        pool = self.pool
        prompts = tuple(pool.take(None) if isinstance(pool, TracePool) else pool.take(load.num_prompts))  # a trace: all
        self.prepared = self.pool.prepared  # grown when the probe needed more
        return Step(self.search.label(n, value), load, prompts, StepPoint(self.search.over, value, n))

    def judge(self, summary: Summary) -> Verdict | None:
        return judge(summary, self.search)

    def stop_early(self, step: Step, paths: VariantPaths) -> Callable[[], str | None]:
        users = step.load.users if self.search.over == "users" else 0
        return ProbeWatch(paths.records, self.limits, self.search.attainment, len(step.prompts), users).cannot_pass

    def ledger(self, paths: VariantPaths, done: Sequence[StepDone], ended: bool = False) -> None:
        """``search.json``: the search, its SLO and every probe in the order run, written after each."""
        probes = [{"n": d.step.point.probe, "value": d.step.point.value, "label": d.step.label,
                   "prompts": planned([d.step])} for d in done if d.step.point is not None]
        write_json(paths.search_json, {"search": asdict(self.search), "slo": self.limits, "probes": probes,
                                       "started_ts": self.started_ts, "ended_ts": time.time() if ended else None})

    def name(self, step: Step) -> str:
        point = step.point
        return f"probe {point.probe}: {point.value:g} {UNITS[self.search.over]}" if point else super().name(step)

    def said(self, done: StepDone) -> str | None:
        verdict = done.verdict
        if verdict is None:
            return None
        return f"{self.name(done.step)} " + ("passes" if verdict.passed else f"fails: {verdict.why}")

    def planned_prompts(self, done: Sequence[StepDone]) -> int | None:
        return planned([d.step for d in done]) if self.pool is not None else None

    def warmup_sent(self) -> int:
        return min(self.search.warmup_prompts, self.pool.dealt) if self.pool is not None else 0


def plan_for(variant: Variant) -> StepPlan:
    """The variant's kind of run as a plan."""
    if variant.search is not None:
        return SearchPlan(variant, variant.search)
    if variant.sweep is not None:
        return SweepPlan(variant, variant.sweep)
    return SinglePlan(variant)
