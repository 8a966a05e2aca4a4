"""Steps of one server start (a sweep's, a capacity search's probes, the warm-up): each run as a load of its
own (``Stepper``), a sweep's one after another (``run_sweep``); once they have run, the variant's
``requests.jsonl`` is its steps' records in order, and each step's ``metrics.jsonl`` is the server's samples
across it.

Stage: load. What a step's summary says is the report stage's: the pipeline hands ``run_sweep`` a
``summarize`` that writes it and returns the step's status.
Each step writes its own records (``steps/<label>/requests.jsonl``); the variant's own file,
which the report reads like any other variant's, is rebuilt from them here. The warm-up's records stay
in ``steps/warmup`` and count nowhere. The sampler runs once for the variant; a step's own samples (one
taken right before it, one right after, and those between) let its summary compare the server's
``/metrics`` token counts with its own records.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from locustfiles.conversations import planned_requests
from locustfiles.dataset import Prompt
from orchestrate.load.locust_run import LoadOutcome, LoadPlan, Swarm, run_load
from orchestrate.load.prompts import write_prompts
from orchestrate.load.sampler import MetricsSampler
from orchestrate.results import VariantPaths, read_json
from orchestrate.scenario.spec import LoadSpec, Sweep, Variant
from orchestrate.scenario.sweep import deal_prompts, warmup_load

Step = tuple[str, LoadSpec, list[Prompt]]
"""A step's label (its folder under ``steps/``), its load and the prompts dealt to it."""


@dataclass(frozen=True)
class Stepper:
    """Runs steps against one running server: whose they are, how the server is watched, what samples it."""

    url: str
    swarm: Swarm
    model_id: str | None
    variant: str
    paths: VariantPaths
    """The variant's folder; each step's is ``steps/<label>`` in it."""
    down: Callable[[], str | None]
    """How the server ended if it went down (``liveness``), else None: a step stops on it."""
    sampler: MetricsSampler | None = None
    """With it, a sample right before and right after each step, and the step's own ``metrics.jsonl``."""

    def run(self, step: Step, stop: Callable[[], str | None] = lambda: None) -> tuple[VariantPaths, LoadOutcome]:
        """One step in ``steps/<label>``; ``stop``: a reason to end it early (a probe that can no longer pass)."""
        label, load, prompts = step
        paths = self.paths.step(label)
        write_prompts(paths.prompts, prompts)
        print(f"[{self.variant}] {label}: {len(prompts)} prompts, "
              + (f"{load.rate:g} req/s (at most {load.users} in flight)" if load.rate else f"{load.users} users"),
              flush=True)
        plan = replace(LoadPlan.for_load(load, self.url, planned_requests(prompts), self.model_id, self.swarm),
                       request_id_prefix=f"{label}/")
        before = self.sampler.sample_now() if self.sampler else 0.0
        outcome = run_load(plan, paths, f"{self.variant} {label}", stop_when=lambda: self.down() or stop())
        if self.sampler:
            write_step_metrics(self.paths, paths, before, self.sampler.sample_now())
        return paths, outcome


def sweep_steps(variant: Variant, prompts: list[Prompt]) -> tuple[Sweep, Step, list[Step]]:
    """The sweep, its warm-up and each step, dealt from the variant's one sample."""
    assert variant.sweep is not None
    warmup, dealt = deal_prompts(prompts, list(variant.steps), variant.sweep)
    steps = [(variant.sweep.label(value), load, step_prompts)
             for value, load, step_prompts in zip(variant.sweep.values, variant.steps, dealt)]
    return variant.sweep, ("warmup", warmup_load(variant), warmup), steps


def ends_the_steps(status: str, outcome: LoadOutcome) -> bool:
    """The server did not survive the step, or the run was interrupted: no next step."""
    return status in ("crashed", "server_lost") or outcome.stopped_by == "interrupted"


Summarize = Callable[[VariantPaths, LoadOutcome, LoadSpec, list[Prompt], dict[str, object]], str]
"""(step folder, outcome, load, prompts, the summary's ``step`` block) → the step's status, its summary written."""


def run_sweep(stepper: Stepper, variant: Variant, prompts: list[Prompt], kept: Iterable[str],
              summarize: Summarize) -> LoadOutcome:
    """Each step against the running server, ``settle_s`` apart, each a full result folder
    (``steps/<key>-<value>``); stops at the first step the server does not survive. A step in ``kept``
    (finished by the run this one resumes) is not run again."""
    sweep, _, steps = sweep_steps(variant, prompts)
    kept = set(kept)
    outcome, started, ran = LoadOutcome(0, 0.0, "num_prompts"), time.monotonic(), False
    for value, step in zip(sweep.values, steps):
        if step[0] in kept:
            print(f"[{variant.name}] {step[0]}: finished before: kept", flush=True)
            continue
        if ran:
            time.sleep(sweep.settle_s)
        ran = True
        paths, outcome = stepper.run(step)
        if ends_the_steps(summarize(paths, outcome, step[1], step[2], {"key": sweep.key, "value": value}), outcome):
            break
    return replace(outcome, wall_s=round(time.monotonic() - started, 3))


def step_labels(variant: Variant, paths: VariantPaths) -> list[str]:
    """The folders under ``steps/`` whose records are the variant's: a sweep's steps, a search's probes."""
    if variant.sweep is not None:
        return [variant.sweep.label(value) for value in variant.sweep.values]
    return [probe["label"] for probe in (read_json(paths.search_json) or {}).get("probes") or []]


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
