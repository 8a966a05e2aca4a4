"""What a run knew about a variant, a sweep step or a search probe that its result files do not say.

Stage: the contract between the run loop and the report. The run loop hands one ``RunFacts`` to
``summary.build_summary``, which writes it into ``run.json`` beside the summary; ``tokenswarm report``
reads it back and rebuilds the same summary from the files. So what a rebuild keeps is these fields,
by construction: a key the run knows and the rebuild forgets cannot exist. Each field lands in
``summary.json`` under its own name.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass(frozen=True)
class RunFacts:
    """The run loop's knowledge of one result (``summary.json``'s keys of the same names)."""

    status: str | None = None
    """``completed``, ``failed_to_load``, ``crashed``, ``server_lost``, ``error`` or ``interrupted``; None for
    a folder no run loop wrote (a plain Locust run's, rebuilt by ``tokenswarm report``)."""
    error: str | None = None
    stopped_by: str | None = None
    """What ended the load (``locust_run.LoadOutcome.stopped_by``); None when no load ran."""
    planned_prompts: int | None = None
    sampling: dict[str, Any] | None = None
    """How the prompts were sampled: dataset, token counter, examined, dropped, shortfall, truncation."""
    settings: dict[str, Any] | None = None
    """The variant's flat settings as run (``scenario.settings.variant_settings``)."""
    factors: dict[str, Any] | None = None
    retried: bool = False
    first_attempt: dict[str, Any] | None = None
    """The failed load before ``on_load_failure.retry_with``: its status, cause, hint, settings, log."""
    slo: dict[str, float] | None = None
    repeat: dict[str, int] | None = None
    """Which repeat this is (``repeats.Repeat``), None without repeats."""
    warmup: dict[str, Any] | None = None
    machine: dict[str, Any] | None = None
    model: dict[str, Any] | None = None
    step: dict[str, Any] | None = None
    """A sweep step's or a search probe's key and value (and the probe's number)."""
    ui: bool = False
    """Locust's web UI ran the load: a person set the users (their levels become the ``ui_steps``)."""
    sweep: dict[str, Any] | None = None
    """A sweep's block: its key, values, warm-up and settle time (its steps are re-read on a rebuild)."""
    resumed: dict[str, Any] | None = None
    """``--resume`` ran this variant again: where its earlier attempt went, the steps kept from it."""

    def as_dict(self) -> dict[str, Any]:
        """The fields for ``summary.json`` and ``run.json``: ``status``, ``error``, ``retried`` and those the run
        set (``ui`` off, or a block it has not, is left out)."""
        return {k: v for k, v in asdict(self).items() if k in ALWAYS or v not in (None, False)}

    @classmethod
    def from_dict(cls, known: dict[str, Any]) -> "RunFacts":
        """From ``run.json``'s ``known`` (or an old ``summary.json``): its fields, any other key ignored."""
        return cls(**{k: known[k] for k in KEPT if known.get(k) is not None})


KEPT = tuple(f.name for f in fields(RunFacts))
"""What ``tokenswarm report`` keeps: every field."""
ALWAYS = ("status", "error", "retried")
"""Written even when empty: a reader checks them on every summary."""
