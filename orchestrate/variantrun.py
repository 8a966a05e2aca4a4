"""What the run loop knows of one variant as it runs: the run it belongs to (``Context``), its plan, what it
got to (``VariantRun``) and how it ended (``Ending``), which become ``server.json`` and, through
``report.runfacts.RunFacts``, the summary.

Stage: the pipeline's own record (beside ``runloop``, which fills it one stage at a time). Each stage's
function takes what it needs as arguments; this record is what ``finish_variant`` reads, whatever stage a
failure stopped at.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orchestrate.load.locust_run import LoadOutcome
from orchestrate.load.steps import Step
from orchestrate.plans.base import StepDone, StepPlan
from orchestrate.report.schema.runfacts import Repeat
from orchestrate.report.schema.summary import Summary
from orchestrate.results import VariantPaths
from orchestrate.scenario.cost import CostRates
from orchestrate.scenario.host_limits import HostLimits
from orchestrate.scenario.spec import Variant
from orchestrate.server.launchers.base import Launcher
from orchestrate.server.liveness import ServerWatch
from orchestrate.server.preflight import ServerFacts


@dataclass(frozen=True)
class Carried:
    """A variant run again by ``--resume``: where its cut-short folder went, and the finished steps carried
    from it into its new folder (the run loop reads those its plan comes to: the summary's ``resumed``)."""

    set_aside: str = ""
    """Its earlier folder, under ``partial/`` (relative to the run)."""
    kept: tuple[str, ...] = ()
    """The labels of its steps (a sweep's, a search's probes) finished before."""


@dataclass(frozen=True)
class Context:
    """What every variant of a run shares, which repeat this one is, and whether it resumes a cut-short one."""

    scenario: str
    repeat: Repeat | None = None
    host_limits: HostLimits = HostLimits()
    resumed: Carried = Carried()
    cost: CostRates | None = None
    """The scenario's prices (``cost:``), kept in each variant's ``run.json``."""
    detailed: bool = False
    """``--save-detailed``: ``vllm_bench.json`` with its per-request lists."""


@dataclass(frozen=True)
class Ending:
    """How a variant ended."""

    status: str
    """``completed``, ``failed_to_load``, ``crashed``, ``server_lost``, ``error`` or ``interrupted``
    (``pending`` until it ends)."""
    error: str | None = None
    cause: str | None = None
    hint: str | None = None
    exit_code: int | None = None


@dataclass
class VariantRun:
    """What the run loop got to for one variant; becomes ``server.json`` and ``summary.json``."""

    context: Context
    variant: Variant
    paths: VariantPaths
    plan: StepPlan
    first_attempt: "VariantRun | None" = None
    ui: bool = False
    """Locust's web UI ran the load: a person set the users."""
    launcher: Launcher | None = None
    facts: ServerFacts | None = None
    watch: ServerWatch | None = None
    """The server's liveness while the load ran: when it died or was lost (``liveness.py``)."""
    steps: list[Step] = field(default_factory=list)
    """The plan's steps so far, in order: those run (or running) and those kept by ``--resume``."""
    done: list[StepDone] = field(default_factory=list)
    outcome: LoadOutcome | None = None
    """How the last step's load ended; None while no load has run."""
    ending: Ending = Ending("pending")
    summary: Summary | None = None
    """Its ``summary.json``, once written (``runloop.finish_variant``)."""

    def server_info(self) -> dict[str, Any]:
        ending = self.ending
        info: dict[str, Any] = {"status": ending.status, "facts": self.facts.to_dict() if self.facts else None,
                                "ready_s": self.launcher.ready_s if self.launcher else None,
                                "exit_code": ending.exit_code, "cause": ending.cause, "hint": ending.hint,
                                "down_at": self.watch.down_at if self.watch else None}
        if self.launcher:
            info["launcher"] = self.launcher.describe()
            if ending.status in ("failed_to_load", "crashed", "server_lost"):
                info["log_tail"] = self.launcher.log_tail(30)
        return info
