"""Shapes shared by many blocks of ``summary.json``: percentiles and their spreads.

Stage: report. ``Stats`` is what ``aggregates/stats.py:weighted_stats`` (and ``pooled_stats``) returns: exact
nearest-rank percentiles of the per-request values, with their mean, min and max. The other shapes are picks
of it: ``Percentiles`` (the steady state's ``ttft_ms``/``tpot_ms``), ``PercentilesMeanMax`` (an open loop's
send delay, ``aggregates/pacing_figures.py``) and ``MedianMeanMax`` (the host's load, ``aggregates/host.py``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Percentiles:
    """p50/p90/p99 (nearest rank) of exact per-request values, in the unit the key names."""

    p50: float | None = None
    """The median (nearest rank)."""
    p90: float | None = None
    """The 90th percentile (nearest rank)."""
    p99: float | None = None
    """The 99th percentile (nearest rank)."""


@dataclass(frozen=True)
class Stats(Percentiles):
    """The distribution of exact values (``weighted_stats``): percentiles, mean, min and max; a weight
    repeats a value (ITL: a gap counts once per token of its chunk)."""

    mean: float | None = None
    """The (weighted) mean."""
    min: float | None = None
    """The smallest value."""
    max: float | None = None
    """The largest value."""


@dataclass(frozen=True)
class PercentilesMeanMax(Percentiles):
    """Percentiles with the mean and the largest value, no min (an open loop's ``send_delay_ms``)."""

    mean: float | None = None
    """The mean."""
    max: float | None = None
    """The largest value."""


@dataclass(frozen=True)
class MedianMeanMax:
    """The median, mean (rounded to 2 decimals) and largest of the host's readings, one a second."""

    p50: float | None = None
    """The median reading."""
    mean: float | None = None
    """The mean reading, rounded to 2 decimals."""
    max: float | None = None
    """The largest reading."""


SETTING_DOC = ("A setting by its dotted name and its value as run: `server.launcher`, `server.model`, "
               "`server.draft_model`, `server.flags.<flag>` (llama-server's long flag names, on/off switches as "
               "`on`/`off`), `server.docker.<option>`, `load.<key>` (a swept key: the list of its values), "
               "`search.<key>`, and `server.reported.<fact>` for a server tokenswarm did not start (what it said "
               "it is). The confound check compares variants by these.")
"""What each key of a ``settings`` mapping is."""
LIMIT_DOC = "`ttft_ms`, `tpot_ms` or `e2e_ms` (those set) and its limit, ms."
"""What each key of an SLO mapping is."""
