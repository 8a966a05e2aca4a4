"""What a run cost (``cost``): the machine's time and its energy at the scenario's prices, per million tokens.

Stage: report. ``aggregates/cost.py`` computes it from the summary's own ``duration_s``, ``energy.joules`` and token
totals, so a reader can redo the arithmetic from ``summary.json`` alone.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Cost:
    """``cost``: dollars over ``duration_s`` and per million tokens; None where a price or a reading is missing."""

    usd_time: float | None = None
    """``duration_s`` / 3600 × ``usd_per_hour``; None without an hourly price."""
    usd_energy: float | None = None
    """``energy.joules`` / 3.6e6 × ``usd_per_kwh``; None without an energy price or without measured joules."""
    usd: float | None = None
    """``usd_time`` + ``usd_energy`` (those there are); None with neither."""
    usd_per_mtok_output: float | None = None
    """``usd`` ÷ output tokens × 1e6."""
    usd_per_mtok_input: float | None = None
    """``usd`` ÷ prompt tokens × 1e6: the same dollars per input token (embeddings and rerank have no output)."""
    energy_unpriced: str | None = None
    """Why the energy is not in ``usd`` although it has a price (``energy.unavailable``); None otherwise."""
