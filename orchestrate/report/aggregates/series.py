"""The curves of ``report.html``: latency distributions and the load over time, from the records.

Stage: report. Every curve here is drawn from the per-request records, so it shows what the client
saw when it saw it: decode tokens are counted as their chunks arrived (llama.cpp's ``/metrics``
counts them only when a request ends, which draws a row of spikes), a request's prompt tokens spread
over its prefill (send → first token, as the steady state counts them), requests in flight from each
send to its end. A curve keeps at most ``MAX_POINTS`` points, so a run of a million requests still makes a
page a browser opens.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from orchestrate.report.aggregates.chunkcolumn import without_offsets
from orchestrate.report.aggregates.chunks import output_tokens_per_second
from orchestrate.report.aggregates.concurrency import in_flight, request_ends
from orchestrate.report.aggregates.stats import numeric_column
from orchestrate.report.aggregates.steadystate import prompt_tokens_binned

MAX_POINTS = 400
"""The most points one curve keeps (a distribution's quantiles, a timeline's samples)."""
MAX_SPANS = 2000
"""The request timeline draws at most this many requests (every k-th by send time beyond)."""


def distribution(values: pd.Series, points: int = MAX_POINTS) -> tuple[list[float], list[float]]:
    """The empirical distribution of ``values``: (value, percent of values ≤ it), every value when there
    are at most ``points``, else the values at ``points`` evenly spaced percents (nearest rank, as the
    summary's percentiles, so the curve passes through them)."""
    data = np.sort(values.dropna().to_numpy(dtype=float))
    n = data.size
    if n == 0:
        return [], []
    if n <= points:
        return data.tolist(), (100.0 * np.arange(1, n + 1) / n).tolist()
    pct = np.linspace(100.0 / points, 100.0, points)
    ranks = np.clip(np.ceil(pct / 100.0 * n).astype(int) - 1, 0, n - 1)
    return data[ranks].tolist(), pct.tolist()


def first_send(records: pd.DataFrame) -> float | None:
    """The run's clock start: the first request's send time (wall clock), None without records."""
    if records.empty or "send_ts" not in records:
        return None
    first = numeric_column(records, "send_ts").min()
    return None if pd.isna(first) else float(first)


BIN_WIDTHS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0)
"""The bins a rate curve may be counted in."""
MAX_BINS = 200


def bin_width(records: pd.DataFrame) -> float:
    """The bins of the run's rate curves: the narrowest of ``BIN_WIDTHS`` that gives at most ``MAX_BINS`` bins
    and spans two decode steps (twice the median TPOT): a bin narrower than a step holds either a step's
    tokens or none, a row of spikes. Whole seconds for a run of minutes, narrower for a run of seconds."""
    t0 = first_send(records)
    if t0 is None:
        return 1.0
    span = float(request_ends(records).max() - t0)
    step = numeric_column(records, "tpot_ms").median()
    least = max(span / MAX_BINS, 0.0 if pd.isna(step) else 2 * float(step) / 1000.0)
    return next((w for w in BIN_WIDTHS if w >= least), BIN_WIDTHS[-1])


def decode_per_second(records: pd.DataFrame, width: float = 1.0) -> tuple[list[float], list[float]]:
    """Output tokens per second received in each bin of ``width`` s since the first send, by chunk
    arrival: (bin start, tokens/s), every bin from the first send's."""
    per_bin = output_tokens_per_second(records, width)
    if per_bin.empty:
        return [], []
    bins = np.round(per_bin.index.to_numpy(dtype=float) / width).astype(np.int64)
    rate = np.zeros(bins.max() + 1)  # a bin in which no token arrived is 0, not the last bin's rate held
    rate[bins] = per_bin.to_numpy(dtype=float) / width
    return (np.arange(rate.size) * width).tolist(), rate.tolist()


def prefill_per_second(records: pd.DataFrame, width: float = 1.0) -> tuple[list[float], list[float]]:
    """Prompt tokens per second of completed requests in each bin of ``width`` s since the first send, each
    request's spread over its prefill (send → first token, as the steady state counts them): (bin start,
    tokens/s)."""
    t0 = first_send(records)
    if t0 is None or "prompt_tokens" not in records:
        return [], []
    light = without_offsets(records)
    done = light[light["status"] == "ok"]
    ends = request_ends(done).max()
    if done.empty or pd.isna(ends):
        return [], []
    bins = max(1, int(np.ceil(round((ends - t0) / width, 9))))
    tokens = prompt_tokens_binned(done, t0, width, bins)
    return (np.arange(bins, dtype=float) * width).tolist(), (tokens / width).tolist()


def in_flight_over_time(records: pd.DataFrame, points: int = MAX_POINTS) -> tuple[list[float], list[float]]:
    """Requests in flight (sent, not yet ended) over time, s since the first send: every change when
    there are few, else the most in flight within each of ``points`` equal slices (a peak is kept)."""
    t0 = first_send(records)
    if t0 is None:
        return [], []
    starts = numeric_column(records, "send_ts").to_numpy(dtype=float)
    ends = request_ends(records).to_numpy(dtype=float)
    times, counts = in_flight(starts, ends)
    times = times - t0
    if times.size <= points:
        return times.tolist(), counts.tolist()
    edges = np.linspace(times[0], times[-1], points + 1)
    slot = np.clip(np.searchsorted(edges, times, side="right") - 1, 0, points - 1)
    peak = pd.Series(counts).groupby(slot).max()
    return edges[peak.index.to_numpy()].tolist(), peak.to_numpy(dtype=float).tolist()


def thin(times: pd.Series, values: pd.Series, points: int = MAX_POINTS) -> tuple[list[float], list[float]]:
    """A sampled timeline (memory, power) with its gaps dropped, every ``k``-th sample when longer than
    ``points`` (the last kept)."""
    keep = times.notna() & values.notna()
    t, v = times[keep].to_numpy(dtype=float), values[keep].to_numpy(dtype=float)
    if t.size > points:
        pick = np.unique(np.append(np.arange(0, t.size, int(np.ceil(t.size / points))), t.size - 1))
        t, v = t[pick], v[pick]
    return t.tolist(), v.tolist()


def request_spans(records: pd.DataFrame, most: int = MAX_SPANS) -> dict[str, object]:
    """The request timeline: each request's send, first token and end (s since the first send) and status, in
    send order; every k-th request when there are more than ``most`` (``every`` says k, ``of`` how many)."""
    t0 = first_send(records)
    if t0 is None:
        return {}
    order = np.argsort(numeric_column(records, "send_ts").to_numpy(dtype=float), kind="stable")
    every = max(1, int(np.ceil(order.size / most)))
    rows = records.iloc[order[::every]]
    send = numeric_column(rows, "send_ts").to_numpy(dtype=float) - t0
    first = send + numeric_column(rows, "ttft_ms").to_numpy(dtype=float) / 1000.0
    end = request_ends(rows).to_numpy(dtype=float) - t0
    status = rows["status"].astype(str).tolist() if "status" in rows else ["ok"] * len(rows)
    return {"send": send.tolist(), "first": [None if np.isnan(x) else float(x) for x in first],
            "end": end.tolist(), "status": status, "every": every, "of": int(order.size)}
