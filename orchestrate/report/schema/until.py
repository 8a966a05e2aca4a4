"""``until``: a run asked to stop at a precision (``load.until``): which targets held, when, or why not.

Stage: report.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrate.report.jsontypes import omitted


@dataclass(frozen=True)
class UntilTarget:
    """One figure's target."""

    figure: str
    """A steady-state figure (``decode_tok_s``, ``ttft_ms.p99``, ...)."""
    asked: float
    """The relative half width asked (0.05: ±5 %)."""
    reached: float | None = None
    """The relative half width of its 95 % interval in this summary's window; None where it had no bounded one."""
    value: float | None = None
    """The figure in that window."""
    held: bool = False
    """``reached`` <= ``asked``."""
    held_at_s: float | None = omitted()
    """Seconds after the first send when the run first saw it hold (``until.json``); absent if it never did."""


@dataclass(frozen=True)
class Until:
    """``until``; absent for a run without targets."""

    held: bool = False
    """Every target held in the final window."""
    stopped: bool = False
    """The run stopped because they held (``stopped_by: until``), before its prompts or time ran out."""
    checks: int = 0
    """How many times the run judged its records while it went."""
    targets: tuple[UntilTarget, ...] = ()
    """Each target."""
    reason: str | None = omitted()
    """Why the run ended before every target held."""
