"""The steps of one server start: each a load of its own (``Stepper``), in its own folder; the variant's
``requests.jsonl`` rebuilt from its steps' records; each step's share of the server's samples.

Stage: load. Which steps there are, and in what order, is the step plan's (``orchestrate.plans``); what a
step's summary says is the report stage's. A step in a folder of its own writes its own records
(``steps/<label>/requests.jsonl``) and its request ids start with its label; the variant's own file, which
the report reads like any other variant's, is rebuilt from them here. The warm-up's records stay in
``steps/warmup`` and count nowhere. The sampler runs once for the variant; a step's own samples (one taken
right before it, one right after, and those between) let its summary compare the server's ``/metrics``
token counts with its own records.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from locustfiles.conversations import planned_requests
from locustfiles.dataset import Prompt
from orchestrate.load.locust_run import LoadOutcome, LoadPlan, Swarm, WebUi, run_load
from orchestrate.load.prompts import write_prompts
from orchestrate.load.sampler import MetricsSampler
from orchestrate.results import VariantPaths
from orchestrate.scenario.spec import LoadSpec


@dataclass(frozen=True)
class StepPoint:
    """Where a step sits in its plan: the swept key and its value, or a probe's load and number (the step
    summary's ``step`` block)."""

    key: str
    value: Any
    probe: int | None = None


@dataclass(frozen=True)
class Step:
    """One load against the running server."""

    label: str | None
    """Its folder under ``steps/`` and the prefix of its request ids; None: the variant's own folder and load
    (the one step of a single run, which Locust's web UI may run)."""
    load: LoadSpec
    prompts: tuple[Prompt, ...]
    point: StepPoint | None = None


@dataclass(frozen=True)
class Stepper:
    """Runs steps against one running server: whose they are, how the server is watched, what samples it."""

    url: str
    swarm: Swarm
    model_id: str | None
    variant: str
    paths: VariantPaths
    """The variant's folder; a step's is ``steps/<label>`` in it."""
    down: Callable[[], str | None]
    """How the server ended if it went down (``liveness``), else None: a step stops on it."""
    sampler: MetricsSampler | None = None
    """With it, a sample right before and right after each step in a folder, and the step's own ``metrics.jsonl``."""
    ui: WebUi | None = None
    """Locust's web UI, for a step that is the variant's own load."""

    def folder(self, step: Step) -> VariantPaths:
        """Where ``step``'s files go."""
        return self.paths if step.label is None else self.paths.step(step.label)

    def run(self, step: Step, stop: Callable[[], str | None] = lambda: None) -> LoadOutcome:
        """One step in its folder; ``stop``: a reason to end it early (a probe that can no longer pass)."""
        paths, load, prompts = self.folder(step), step.load, list(step.prompts)
        write_prompts(paths.prompts, prompts)
        plan = LoadPlan(self.url, load, planned_requests(prompts), self.model_id, self.swarm)
        if step.label is None:
            return run_load(replace(plan, ui=self.ui), paths, self.variant, stop_when=lambda: self.down() or stop())
        print(f"[{self.variant}] {step.label}: {len(prompts)} prompts, "
              + (f"{load.rate:g} req/s (at most {load.users} in flight)" if load.rate else f"{load.users} users"),
              flush=True)
        before = self.sampler.sample_now() if self.sampler else 0.0
        outcome = run_load(replace(plan, request_id_prefix=f"{step.label}/"), paths, f"{self.variant} {step.label}",
                           stop_when=lambda: self.down() or stop())
        if self.sampler:
            write_step_metrics(self.paths, paths, before, self.sampler.sample_now())
        return outcome


def ends_the_steps(status: str, outcome: LoadOutcome) -> bool:
    """The server did not survive the step, or the run was interrupted: no next step."""
    return status in ("crashed", "server_lost") or outcome.stopped_by == "interrupted"


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
