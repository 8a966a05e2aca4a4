"""What the run loop knows of one variant while it runs: the run it belongs to (``Context``) and what it
learned (``VariantRun``), which becomes ``server.json`` and, through ``report.runfacts.RunFacts``, the summary.

Stage: the pipeline's own record (beside ``runloop``, which fills it one stage at a time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrate.load.locust_run import LoadOutcome
from orchestrate.load.prompts import PreparedPrompts, PromptPool
from orchestrate.report.repeats import Repeat
from orchestrate.results import VariantPaths
from orchestrate.scenario.host_limits import HostLimits
from orchestrate.scenario.spec import Variant
from orchestrate.server.launchers.base import Launcher
from orchestrate.server.liveness import ServerWatch
from orchestrate.server.preflight import ServerFacts


@dataclass(frozen=True)
class Resumed:
    """A variant run again by ``--resume``: where its cut-short folder went, and the steps kept from it."""

    set_aside: str = ""
    """Its earlier folder, under ``partial/`` (relative to the run)."""
    kept: tuple[str, ...] = ()
    """The labels of its sweep steps or search probes finished before, carried into its new folder."""


@dataclass(frozen=True)
class Context:
    """What every variant of a run shares, which repeat this one is, and whether it resumes a cut-short one."""

    scenario: str
    repeat: Repeat | None = None
    host_limits: HostLimits = HostLimits()
    resumed: Resumed = Resumed()


@dataclass
class VariantRun:
    """What the run loop learned about one variant; becomes ``server.json`` and ``summary.json``."""

    context: Context
    variant: Variant
    paths: VariantPaths
    status: str = "pending"
    """``completed``, ``failed_to_load``, ``crashed``, ``server_lost``, ``error`` or ``interrupted``."""
    launcher: Launcher | None = None
    watch: ServerWatch | None = None
    """The server's liveness while the load ran: when it died or was lost (``liveness.py``)."""
    facts: ServerFacts | None = None
    prompts: PreparedPrompts | None = None
    pool: PromptPool | None = None
    """A capacity search's prompts, dealt to each probe as it is chosen."""
    outcome: LoadOutcome | None = None
    error: str | None = None
    cause: str | None = None
    hint: str | None = None
    exit_code: int | None = None
    first_attempt: "VariantRun | None" = None
    ui: bool = False
    """Locust's web UI ran the load: a person set the users."""

    def server_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"status": self.status, "facts": self.facts.to_dict() if self.facts else None,
                                "ready_s": self.launcher.ready_s if self.launcher else None,
                                "exit_code": self.exit_code, "cause": self.cause, "hint": self.hint,
                                "down_at": self.watch.down_at if self.watch else None}
        if self.launcher:
            info["launcher"] = self.launcher.describe()
            if self.status in ("failed_to_load", "crashed", "server_lost"):
                info["log_tail"] = self.launcher.log_tail(30)
        return info
