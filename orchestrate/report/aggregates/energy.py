"""The ``energy`` block of ``summary.json``: joules over the measured window, tokens per joule, the idle draw.

Stage: records → report. The samples are ``metrics.jsonl``'s power readings (``orchestrate.load.power``):
a cumulative counter (NVML, RAPL) is read at the window's ends, interpolated between samples; watts alone
(``nvidia-smi``) are integrated, piecewise linear between samples. The window is the headline's (first
request sent to last response ended), so joules per output token pair with its decode throughput; the
steady state's window gives its own. Readings that cover less than ``MIN_COVERAGE`` of a window give no
joules for it, with the reason: a share of the window is not its energy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from orchestrate.report.aggregates.stats import numeric_column

MIN_COVERAGE = 0.95


def energy(samples: pd.DataFrame, start: float | None, end: float | None, tokens: dict[str, int],
           steady: dict[str, Any] | None = None) -> dict[str, Any]:
    """Joules and their ratios over ``[start, end]`` (wall clock), and over the steady state's window."""
    readings = _readings(samples)
    errors = samples["power_error"].dropna() if "power_error" in samples else pd.Series(dtype=object)
    why = str(errors.iloc[-1]) if not errors.empty else None
    if readings.empty or start is None or end is None or end <= start:
        return {"source": None, "joules": None,
                "unavailable": why or "no power samples (a run older than power readings)"}
    source = str(readings["power_source"].mode().iloc[0])
    window = _window(readings, start, end, why)
    devices = readings["power_devices"].dropna() if "power_devices" in readings else pd.Series(dtype=object)
    out: dict[str, Any] = {"source": source, "devices": str(devices.mode().iloc[0]) if not devices.empty else None,
                           **window}
    before = numeric_column(readings.loc[readings["t"] < start], "power_watts").dropna()
    out["idle_watts"] = float(before.mean()) if not before.empty else None
    joules = window["joules"]
    out["output_tokens_per_joule"] = tokens.get("output", 0) / joules if joules else None
    out["joules_per_output_token"] = joules / tokens["output"] if joules and tokens.get("output") else None
    out["prefill_tokens_per_joule"] = tokens.get("prompt", 0) / joules if joules else None
    out["steady_state"] = None
    if steady and steady.get("start_s") is not None:
        part = _window(readings, start + steady["start_s"], start + steady["end_s"], why)
        decode = steady.get("decode_tok_s")
        part["output_tokens_per_joule"] = decode / part["mean_watts"] if decode and part["joules"] else None
        out["steady_state"] = part
    return out


def _readings(samples: pd.DataFrame) -> pd.DataFrame:
    """The samples that carry a reading, in time order."""
    if samples.empty or "power_source" not in samples:
        return samples.iloc[0:0]
    has = samples["power_source"].notna() & (numeric_column(samples, "power_watts").notna()
                                             | numeric_column(samples, "energy_joules").notna())
    return samples.loc[has].sort_values("t")


def _window(readings: pd.DataFrame, start: float, end: float, why: str | None) -> dict[str, Any]:
    """Joules and mean watts over ``[start, end]`` as far as the readings reach, and how far that is;
    ``why``: the source's last error, for a window it stopped covering."""
    t = numeric_column(readings, "t").to_numpy(dtype=float)
    covered_from, covered_to = max(start, t[0]), min(end, t[-1])
    span = end - start
    covered = max(0.0, covered_to - covered_from)
    out: dict[str, Any] = {"window_s": span, "coverage": covered / span if span else 0.0, "joules": None,
                           "mean_watts": None, "unavailable": None}
    if covered <= 0:
        out["unavailable"] = "no power reading inside the window" + (f": {why}" if why else "")
        return out
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
    out["mean_watts"] = joules / covered
    if out["coverage"] < MIN_COVERAGE:
        out["unavailable"] = (f"power readings cover {100 * out['coverage']:.0f} % of the window "
                              f"({covered:.1f} of {span:.1f} s)" + (f": {why}" if why else ""))
        return out
    out["joules"] = joules * span / covered  # a last sliver not covered: at the mean
    return out
