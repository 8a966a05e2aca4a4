"""The step plan: what every kind of run is to the run loop.

A plan samples its prompts, may send a warm-up, then names one step after another, each from the steps
done so far and their verdicts, until it has none left. The run loop (``runloop``) runs any plan the same
way: the warm-up, each step's load and its files, the step's summary and verdict, resume's kept steps,
the plan's ledger. So a new kind of run is a new plan (``kinds.plan_for``), and the loop stays as it is.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from locustfiles.conversations import planned_requests
from orchestrate.load.prompts import PreparedPrompts, PromptSource
from orchestrate.load.steps import Step
from orchestrate.report.schema.capacity import Verdict
from orchestrate.report.schema.summary import Summary
from orchestrate.results import VariantPaths
from orchestrate.scenario.spec import Variant


@dataclass(frozen=True)
class StepDone:
    """A step that ran (or was kept from the run this one resumes), with how it ended and its verdict."""

    step: Step
    status: str
    stopped_by: str | None
    verdict: Verdict | None = None
    """A capacity probe's judgement from its summary; None for a step nothing depends on."""
    kept: bool = False
    """Finished by the run this one resumes (``--resume``): read from its folder, not run again."""


def never() -> str | None:
    """No reason to stop a step early."""
    return None


class StepPlan(ABC):
    """The loads of one server start, chosen step by step (see the module's docstring)."""

    settle_s: float = 0.0
    """Pause after the warm-up and between steps, so one step's tail does not overlap the next."""
    interactive: bool = False
    """Locust's web UI may run it (``--ui``): its one step is the variant's own load."""

    def __init__(self, variant: Variant) -> None:
        self.variant = variant
        self.prepared: PreparedPrompts | None = None
        """The sample (``sample``): what the summary's ``sampling`` block describes."""

    @property
    @abstractmethod
    def wanted(self) -> int:
        """How many prompts the first sample takes."""

    @abstractmethod
    def sample(self, source: PromptSource) -> PreparedPrompts:
        """Sample the prompts (``prompts.jsonl``); what the summary's ``sampling`` block describes."""

    def warmup(self) -> Step | None:
        """Sent after sampling, before the first step, into ``steps/warmup``, and counted nowhere."""
        return None

    @abstractmethod
    def next_step(self, done: Sequence[StepDone]) -> Step | None:
        """The next step given those done so far, in order; None when the plan is complete."""

    def judge(self, summary: Summary) -> Verdict | None:
        """A step's verdict from its summary, when later steps depend on it."""
        return None

    def stop_early(self, step: Step, paths: VariantPaths) -> Callable[[], str | None]:
        """What names a reason to end ``step`` (its folder: ``paths``) before its prompts run out."""
        return never

    def ledger(self, paths: VariantPaths, done: Sequence[StepDone], ended: bool = False) -> None:
        """Write what the plan's report reads besides the steps' own folders (a search's ``search.json``)."""

    def name(self, step: Step) -> str:
        """The step in messages."""
        return step.label or self.variant.name

    def said(self, done: StepDone) -> str | None:
        """A line about a step just run (a probe's verdict), or None."""
        return None

    def sample_note(self) -> str:
        """What follows the sample's counts on the console."""
        return f"; {self.variant.load.users} users"

    def planned_prompts(self, done: Sequence[StepDone]) -> int | None:
        """The requests planned for the figures: every step's (the warm-up's left out); None before sampling."""
        return None

    def warmup_sent(self) -> int:
        """How many warm-up prompts were dealt."""
        return 0

    def run_facts(self, paths: VariantPaths) -> dict[str, Any]:
        """What the variant's summary adds for this kind of run (typed ``RunFacts`` fields), from its folder."""
        return {}


def planned(steps: Sequence[Step]) -> int:
    """The requests the steps plan to send (a multi-turn conversation's every turn)."""
    return sum(planned_requests(list(step.prompts)) for step in steps)
