"""The ``energy`` block of ``summary.json``: joules over the measured window, tokens per joule, the idle draw.

Stage: records → report. The samples are ``metrics.jsonl``'s power readings (``orchestrate.load.power``):
a cumulative counter (NVML, RAPL) is read at the window's ends, interpolated between samples; watts alone
(``nvidia-smi``) are integrated, piecewise linear between samples. The window is the headline's (first
request sent to last response ended), so joules per output token pair with its decode throughput; the
steady state's window gives its own. Readings that cover less than ``MIN_COVERAGE`` of a window give no
joules for it, with the reason: a share of the window is not its energy.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from orchestrate.report.aggregates.stats import numeric_column
from orchestrate.report.schema.headline import Tokens
from orchestrate.report.schema.machine import Energy, EnergyWindow
from orchestrate.report.schema.steady import SteadyState

MIN_COVERAGE = 0.95


def energy(samples: pd.DataFrame, start: float | None, end: float | None, tokens: Tokens,
           steady: SteadyState | None = None) -> Energy:
    """Joules and their ratios over ``[start, end]`` (wall clock), and over the steady state's window."""
    readings = _readings(samples)
    errors = samples["power_error"].dropna() if "power_error" in samples else pd.Series(dtype=object)
    why = str(errors.iloc[-1]) if not errors.empty else None
    if readings.empty or start is None or end is None or end <= start:
        return Energy(source=None, joules=None, unavailable=why or "no power samples (a run older than power readings)")
    source = str(readings["power_source"].mode().iloc[0])
    window = _window(readings, start, end, why)
    devices = readings["power_devices"].dropna() if "power_devices" in readings else pd.Series(dtype=object)
    before = numeric_column(readings.loc[readings["t"] < start], "power_watts").dropna()
    joules = window.joules
    part = None
    if steady is not None and steady.start_s is not None and steady.end_s is not None:
        part = _window(readings, start + steady.start_s, start + steady.end_s, why)
        decode = steady.decode_tok_s
        part = replace(part, output_tokens_per_joule=decode / part.mean_watts
                       if decode and part.joules and part.mean_watts else None)
    return Energy(source=source, devices=str(devices.mode().iloc[0]) if not devices.empty else None,
                  window_s=window.window_s, coverage=window.coverage, joules=joules, mean_watts=window.mean_watts,
                  unavailable=window.unavailable, idle_watts=float(before.mean()) if not before.empty else None,
                  output_tokens_per_joule=tokens.output / joules if joules else None,
                  joules_per_output_token=joules / tokens.output if joules and tokens.output else None,
                  prefill_tokens_per_joule=tokens.prompt / joules if joules else None, steady_state=part)


def _readings(samples: pd.DataFrame) -> pd.DataFrame:
    """The samples that carry a reading, in time order."""
    if samples.empty or "power_source" not in samples:
        return samples.iloc[0:0]
    has = samples["power_source"].notna() & (numeric_column(samples, "power_watts").notna()
                                             | numeric_column(samples, "energy_joules").notna())
    return samples.loc[has].sort_values("t")


def _window(readings: pd.DataFrame, start: float, end: float, why: str | None) -> EnergyWindow:
    """Joules and mean watts over ``[start, end]`` as far as the readings reach, and how far that is;
    ``why``: the source's last error, for a window it stopped covering."""
    t = numeric_column(readings, "t").to_numpy(dtype=float)
    covered_from, covered_to = max(start, float(t[0])), min(end, float(t[-1]))
    span = end - start
    covered = max(0.0, covered_to - covered_from)
    coverage = covered / span if span else 0.0
    if covered <= 0:
        return EnergyWindow(window_s=span, coverage=coverage,
                            unavailable="no power reading inside the window" + (f": {why}" if why else ""))
    counter = numeric_column(readings, "energy_joules").to_numpy(dtype=float)
    if np.isfinite(counter).sum() >= 2:
        ok = np.isfinite(counter)
        joules = float(np.interp(covered_to, t[ok], counter[ok]) - np.interp(covered_from, t[ok], counter[ok]))
    else:
        watts = numeric_column(readings, "power_watts").to_numpy(dtype=float)
        ok = np.isfinite(watts)
        inside = (t[ok] > covered_from) & (t[ok] < covered_to)
        xs = np.concatenate(([covered_from], t[ok][inside], [covered_to]))
        ys = np.interp(xs, t[ok], watts[ok])
        joules = float(np.sum((ys[1:] + ys[:-1]) / 2 * np.diff(xs)))
    if coverage < MIN_COVERAGE:
        return EnergyWindow(window_s=span, coverage=coverage, mean_watts=joules / covered,
                            unavailable=(f"power readings cover {100 * coverage:.0f} % of the window "
                                         f"({covered:.1f} of {span:.1f} s)" + (f": {why}" if why else "")))
    # a last sliver not covered: at the mean
    return EnergyWindow(window_s=span, coverage=coverage, joules=joules * span / covered, mean_watts=joules / covered)
