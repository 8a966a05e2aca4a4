"""The steady-state window of a run, and the figures measured inside it.

Stage: records → report. Whole-run figures divide by first send → last end, so the spawn ramp and the
drain (the last requests finishing while fewer and fewer are in flight) are inside them. The window
leaves both out, like vLLM's ``vllm-bench`` and SGLang's plateau:

- closed loop (``users``): from the first moment requests in flight reach 95 % of the users
  (``IN_FLIGHT_SHARE``, rounded up: 31 of 32) to the moment they fall below that for good. The
  instants between one request's end and its user's next send, inside the window, are kept and
  shown (``in_flight.below_share``).
- open loop (``rate``): from the first send while the requests sent keep up with the schedule to
  within 5 % (``RATE_TOLERANCE``), to the last send before they fall behind for good.

A window must hold enough requests to measure: two sends per user (``SENDS_PER_USER``) in a closed
loop, ``MIN_OPEN_LOOP_REQUESTS`` in an open one. Otherwise the block says why there is none and,
for a closed loop, about how many prompts would give one.

Inside the window, tokens count by when they arrived, so a request that straddles an edge counts in
part: output tokens at their chunks' arrivals, a request's prompt tokens spread evenly over its send
→ first token (its prefill, queueing included). Latencies are those of the completed requests sent
inside it; ``goodput`` (with an SLO) judges every request sent inside it, as the whole run's does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from locustfiles.records import CANCELLED, OK
from orchestrate.report.aggregates.chunkcolumn import without_offsets
from orchestrate.report.aggregates.chunks import tokens_received, tokens_received_sets
from orchestrate.report.aggregates.concurrency import in_flight, request_ends
from orchestrate.report.aggregates.goodput import good_requests, goodput
from orchestrate.report.aggregates.intervals import (
    around,
    batch_means,
    itl_intervals,
    percentile_intervals,
    share_interval,
    slices,
)
from orchestrate.report.aggregates.stats import numeric_column, per_second, value_stats
from orchestrate.report.schema.common import Percentiles
from orchestrate.report.schema.intervals import Interval, Intervals, PercentileIntervals
from orchestrate.report.schema.steady import InFlight, SteadyState
from orchestrate.scenario.spec import LoadSpec

IN_FLIGHT_SHARE = 0.95
RATE_TOLERANCE = 0.05
SENDS_PER_USER = 2
"""A closed-loop window holds at least this many sends per user: every user's request turned over in it."""
MIN_OPEN_LOOP_REQUESTS = 20
CLOSED_RULE = "requests in flight >= 95 % of the users"
OPEN_RULE = "requests sent within 5 % of the arrival schedule"


def steady_state(records: pd.DataFrame, load: LoadSpec | None, slo: dict[str, float] | None = None,
                 schedule_ts: list[float] | None = None, ui: bool = False,
                 search: bool = False) -> SteadyState | None:
    """``summary.json``'s ``steady_state`` block; None for a run that sent nothing.

    :param load: the load the result ran (its users, rate or stages); None for one without a single load
        (a sweep's own summary).
    :param schedule_ts: an open loop's due times, wall clock (``arrivals.json``: start + offsets).
    :param ui: a person set the users in Locust's web UI.
    :param search: a capacity search's own summary (its probes have their windows).
    """
    if records.empty or "send_ts" not in records:
        return None
    open_loop_run = load is not None and (load.rate is not None or load.trace is not None)
    if not (records["status"] == OK).any():  # its figures would be zeros that look like a measurement
        return _none(OPEN_RULE if open_loop_run else CLOSED_RULE, "no request completed: every one failed or "
                                                                  "was cut off")
    if ui:
        return _none(CLOSED_RULE, "a person set the users in the web UI: each level held is a step of its own "
                                  "(ui_steps)")
    if search:
        return _none(CLOSED_RULE, "a capacity search: each probe has its own window (capacity.probes, steps/)")
    if load is not None and load.stages:
        return _none(CLOSED_RULE, "a staged ramp changes the users on purpose: each stage's figures are its own "
                                  "(stages)")
    if open_loop_run:
        return open_loop(records, schedule_ts or [], slo)
    if load is None or load.users < 1:
        return _none(CLOSED_RULE, "the number of users is not known")
    return closed_loop(records, load.users, slo)


def schedule_of(arrivals: dict[str, Any]) -> list[float] | None:
    """An open loop's due times, wall clock, from ``arrivals.json`` (its start + offsets); None without one."""
    if arrivals.get("start_ts") is None:
        return None
    return [arrivals["start_ts"] + offset for offset in arrivals.get("offsets_s") or []]


def closed_loop(records: pd.DataFrame, users: int, slo: dict[str, float] | None) -> SteadyState:
    """The window of a closed loop of ``users`` and its figures."""
    threshold = math.ceil(IN_FLIGHT_SHARE * users - 1e-9)
    send = numeric_column(records, "send_ts").to_numpy(dtype=float)
    ends = request_ends(records).to_numpy(dtype=float)
    stop = float(np.nanmax(ends))
    ends = np.where(records["status"].to_numpy() == CANCELLED, stop, ends)  # in flight until the stop
    times, level = in_flight(send, ends)
    reached = np.flatnonzero(level >= threshold)
    if not reached.size:
        return _none(CLOSED_RULE, f"requests in flight never reached {threshold} of {users} users "
                                  f"(at most {int(level.max())}): the users never all had a request out")
    start, last = times[reached[0]], reached[-1]
    end = times[last + 1] if last + 1 < times.size else times[last]
    inside = (send >= start) & (send < end)
    needed = SENDS_PER_USER * users
    if inside.sum() < needed or end <= start:
        before = int((send < start).sum())
        return _none(CLOSED_RULE, f"only {int(inside.sum())} requests were sent while {threshold} or more of "
                                  f"{users} users had one in flight ({end - start:.1f} s): a window needs "
                                  f"{needed} ({SENDS_PER_USER} per user); with {len(send)} prompts for {users} "
                                  "users the ramp and the drain are most of the run",
                     prompts_needed=before + needed)
    span = (times >= start) & (times < end)
    widths = np.diff(np.append(times[span], end))
    window = InFlight(threshold=threshold, users=users,
                      mean=float(np.average(level[span], weights=widths)) if widths.sum() else None,
                      below_share=float(widths[level[span] < threshold].sum() / widths.sum())
                      if widths.sum() else None)
    return SteadyState(found=True, rule=CLOSED_RULE, **_figures(records, inside, float(start), float(end), slo),
                       in_flight=window)


def open_loop(records: pd.DataFrame, schedule_ts: list[float], slo: dict[str, float] | None) -> SteadyState:
    """The window of an open loop: the sends that kept up with the schedule (``arrivals.json``)."""
    if not schedule_ts:
        return _none(OPEN_RULE, "the arrival schedule (arrivals.json) is missing")
    send = numeric_column(records, "send_ts").to_numpy(dtype=float)
    order = np.sort(send[~np.isnan(send)])
    schedule = np.sort(np.asarray(schedule_ts, dtype=float))
    due = np.searchsorted(schedule, order, side="right")
    span = schedule[-1] - schedule[0]
    # a send after the schedule ended only looks caught up: nothing more was due
    kept_up = (np.arange(1, order.size + 1) >= (1 - RATE_TOLERANCE) * np.maximum(due, 1)) & (
        order <= schedule[-1] + RATE_TOLERANCE * span)
    on_time = np.flatnonzero(kept_up)
    if on_time.size == 0 or on_time[-1] < 1:
        return _none(OPEN_RULE, "the sends fell behind the schedule at once: the users cap (or the client) "
                                "could not keep up with the rate")
    last = int(on_time[-1])  # a brief lag it caught up from stays inside
    start, end = float(order[0]), float(order[last])
    inside = (send >= start) & (send <= end)
    if inside.sum() < MIN_OPEN_LOOP_REQUESTS:
        return _none(OPEN_RULE, f"only {int(inside.sum())} requests were sent on schedule: a window needs "
                                f"{MIN_OPEN_LOOP_REQUESTS}")
    return SteadyState(found=True, rule=OPEN_RULE, **_figures(records, inside, start, end, slo),
                       kept_up=bool(last == order.size - 1))


def _none(rule: str, reason: str, prompts_needed: int | None = None) -> SteadyState:
    return SteadyState(found=False, rule=rule, reason=reason, prompts_needed=prompts_needed)


def _percentiles(values: pd.Series) -> Percentiles | None:
    """p50/p90/p99 of the values (``value_stats``' pick); None for none."""
    stats = value_stats(values.dropna().to_numpy())
    return Percentiles(stats.p50, stats.p90, stats.p99) if stats else None


def _figures(records: pd.DataFrame, inside: np.ndarray, start: float, end: float,
             slo: dict[str, float] | None) -> dict[str, Any]:
    """Counts, throughput and latency of the window [start, end) (wall clock): ``SteadyState``'s fields. The chunk
    offsets are read through masks, the other columns copied: a million records' offsets are never copied."""
    light = without_offsets(records)
    first = float(numeric_column(light, "send_ts").min())
    duration = end - start
    ok_mask = (light["status"] == OK).to_numpy()
    mine, mine_ok = light[inside], light[inside & ok_mask]
    window, parts = [(start, end)], slices(start, end)
    output, *decode = (tokens_received_sets(records, [window, parts], rows=ok_mask) if ok_mask.any()
                       else [[0.0], [0.0] * len(parts)])
    ends = request_ends(light[ok_mask]).to_numpy(dtype=float)
    rates = {"prefill_tok_s": per_second(prompt_tokens_within(light[ok_mask], [(start, end)])[0], duration),
             "decode_tok_s": per_second(output[0], duration),
             "requests_per_s": per_second(int(((ends >= start) & (ends < end)).sum()), duration)}
    return {"start_s": start - first, "end_s": end - first, "duration_s": duration,
            "requests": int(inside.sum()), "completed": int(len(mine_ok)),
            "share_of_requests": float(inside.sum() / len(records)), **rates,
            "ttft_ms": _percentiles(numeric_column(mine_ok, "ttft_ms")),
            "tpot_ms": _percentiles(numeric_column(mine_ok, "tpot_ms")),
            "goodput": goodput(mine, slo, duration),
            "intervals": window_intervals(records, inside, start, end, slo, rates, decode=decode[0])}


def window_intervals(records: pd.DataFrame, inside: np.ndarray, start: float, end: float,
                     slo: dict[str, float] | None, rates: dict[str, float | None],
                     whole: bool = False, itl: dict[str, float] | None = None,
                     decode: list[float] | None = None) -> Intervals:
    """95 % intervals of the figures of [start, end) (wall clock): its ``rates`` (decode_tok_s, prefill_tok_s,
    requests_per_s, as the block states them) ± batch means over ``BATCHES`` slices (tokens of every completed
    request that fall inside), its latencies (of the requests sent in it: ``inside``, a mask) by order statistics
    and batch means, its SLO attainment by batch means and Wilson (``aggregates/intervals.py``). ``whole``: the
    run's headline, which also has E2E and ITL (around ``itl``, the headline's pooled ITL). ``decode``: the
    slices' tokens when the caller has them (``tokens_received`` over ``slices(start, end)``)."""
    light = without_offsets(records)
    ok_mask = (light["status"] == OK).to_numpy()
    windows = slices(start, end)
    width = (end - start) / len(windows)
    if decode is None:
        decode = tokens_received(records, windows, rows=ok_mask) if ok_mask.any() else [0.0] * len(windows)
    ends = request_ends(light[ok_mask]).to_numpy(dtype=float)
    edges = np.array([a for a, _ in windows] + [windows[-1][1]])
    ends = ends[(ends >= edges[0]) & (ends < edges[-1])]  # half-open, as every window here
    done = np.bincount(np.searchsorted(edges, ends, side="right") - 1, minlength=len(windows)).astype(float).tolist()
    send = numeric_column(light, "send_ts").to_numpy(dtype=float)
    order = np.flatnonzero(inside)[np.argsort(send[inside], kind="stable")]  # the window's requests, sent in order
    done_order = order[ok_mask[order]]

    def rate(key: str, per_slice: list[float]) -> Interval | None:  # ± around the figure the block states
        values = [x / width for x in per_slice]
        return batch_means(values) if rates.get(key) is None else around(float(rates[key] or 0.0), values)

    def latency(metric: str) -> PercentileIntervals | None:
        return percentile_intervals(numeric_column(light, metric).to_numpy(dtype=float)[done_order])

    itl_ms = itl_intervals(records, done_order, itl) if whole else None
    return Intervals(batches=len(windows), decode_tok_s=rate("decode_tok_s", decode),
                     prefill_tok_s=rate("prefill_tok_s", prompt_tokens_within(light[ok_mask], windows)),
                     requests_per_s=rate("requests_per_s", done),
                     goodput_share=share_interval(good_requests(light.iloc[order], slo)) if slo else None,
                     ttft_ms=latency("ttft_ms"), tpot_ms=latency("tpot_ms"),
                     e2e_ms=latency("e2e_ms") if whole else None, itl_ms=itl_ms)


def _prefills(ok: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each completed request's send, end of prefill (its first token, or its end for a reply without content),
    wall clock, and prompt tokens (0 where unknown)."""
    send = numeric_column(ok, "send_ts").to_numpy(dtype=float)
    first = numeric_column(ok, "ttft_ms").fillna(numeric_column(ok, "e2e_ms")).fillna(0).to_numpy(dtype=float)
    return send, send + first / 1000.0, numeric_column(ok, "prompt_tokens").fillna(0).to_numpy(dtype=float)


def prompt_tokens_binned(ok: pd.DataFrame, t0: float, width: float, bins: int) -> np.ndarray:
    """``prompt_tokens_within`` over ``bins`` bins of ``width`` s from ``t0``, in one pass however many bins (the
    page's curve: the same tokens, summed in another order): a request's first and last bin get their parts, the
    bins between a full bin's share each (a difference array)."""
    send, done, tokens = _prefills(ok)
    a, b = (send - t0) / width, (done - t0) / width  # in bins
    first, last = np.floor(a).astype(np.int64), np.floor(b).astype(np.int64)
    length = b - a
    rate = np.divide(tokens, length, out=np.zeros_like(tokens), where=length > 0)  # tokens per bin's width
    one = first == last
    out = np.zeros(bins)
    out += np.bincount(first[one].clip(0, bins - 1), tokens[one], bins)  # a prefill inside one bin (or none long)
    many = ~one
    out += np.bincount(first[many].clip(0, bins - 1), rate[many] * (first[many] + 1 - a[many]), bins)
    out += np.bincount(last[many].clip(0, bins - 1), rate[many] * (b[many] - last[many]), bins)
    between = np.zeros(bins + 1)
    between += np.bincount((first[many] + 1).clip(0, bins), rate[many], bins + 1)
    between -= np.bincount(last[many].clip(0, bins), rate[many], bins + 1)
    return np.maximum(out + np.cumsum(between)[:bins], 0.0)  # the running sum's last digits: never below 0


def prompt_tokens_within(ok: pd.DataFrame, windows: list[tuple[float, float]]) -> list[float]:
    """Prompt tokens of completed requests, each spread evenly over its send → first token (or its end,
    for a reply without content), that fall within each [start, end) (wall clock): the steady state's
    prefill (``report.html``'s curve bins the same in one pass: ``prompt_tokens_binned``)."""
    send, done, tokens = _prefills(ok)
    length = done - send
    out = []
    for start, end in windows:
        overlap = np.clip(np.minimum(done, end) - np.maximum(send, start), 0, None)
        share = np.where(length > 0, overlap / np.where(length > 0, length, 1),
                         ((send >= start) & (send < end)).astype(float))
        out.append(float(np.nansum(tokens * share)))
    return out
