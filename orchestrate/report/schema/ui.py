"""A web UI run's users (``users_over_time``) and each user level held as a step (``ui_steps``).

Stage: report. ``aggregates/uisteps.py``: the levels come from each record's ``target_users`` (the form's count
when it was sent), else from Locust's whole-second history; each step's figures are ``formats.summary_numbers``
of its own requests, as a sweep step's (``schema/sweep.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from orchestrate.report.schema.sweep import StepFigures, StepHead


@dataclass(frozen=True)
class UserLevel:
    """``users_over_time.levels[]``: a user count as it held (Locust's history, levels above 0)."""

    users: int = 0
    """The user count."""
    start: Annotated[float | None, Field(alias="from")] = None
    """When it began, seconds from the history's first row (the key is ``from``)."""
    held_s: float | None = None
    """How long it held, s (1 decimal)."""


@dataclass(frozen=True)
class UsersOverTime:
    """``users_over_time`` (web UI runs): what the users really were, not the scenario's number."""

    max: int = 0
    """The most users at once (also ``settings.load.users``)."""
    levels: tuple[UserLevel, ...] = ()
    """Each level with users, in time order."""


@dataclass(frozen=True)
class UiStepHead(StepHead):
    """A level as a step: a sweep step's head and how the level held."""

    cancelled: int = 0
    """Its requests cancelled by Stop."""
    few: bool = False
    """Its figures rest on fewer than 10 completed requests."""
    held_s: float | None = None
    """How long the level held, s (1 decimal)."""


@dataclass(frozen=True)
class UiStep(StepFigures, UiStepHead):
    """``ui_steps.steps[]``: a level (``value`` its users; ``status`` ``stopped`` when Stop cancelled some of its
    requests, else ``completed``) and the figures of the requests sent under it."""


@dataclass(frozen=True)
class UiSteps:
    """``ui_steps`` (web UI runs): each user level as a step, a sweep over ``users``."""

    key: str = "users"
    """Always ``users``."""
    values: tuple[int, ...] = ()
    """Each step's users, in time order."""
    hold_s: float | None = None
    """With ``placed_by: history``, a level held at least this long is a step, s."""
    placed_by: str = ""
    """``send``: each request records the count it was sent under (every level a step); ``history``: levels
    from Locust's whole-second history."""
    steps: tuple[UiStep, ...] = ()
    """One row per level."""
