"""The figures of an open-loop run (``arrivals``) and of a staged ramp (``stages``), from the run's files.

Stage: records → report (their summary.md lines: ``report/markdown.py``; their notes:
``report/notes.py:pacing_notes``). Everything is computed from ``requests.jsonl`` and the two small files the Locust
side writes: ``arrivals.json`` (the schedule: its parameters, start, every prompt's offset and when the run
ended) and ``stages.json`` (the stages and when each actually began). ``tokenswarm report`` rebuilds both
blocks without a server.

Open loop: a request is *sent* when it has a record (completed, failed or cancelled by the stop);
*unsent* when it was scheduled and never went out, either because it was already due when the run
ended (the cap fell behind: ``unsent_overdue``) or because it was not yet due (the time cap cut the
schedule short: ``unsent_not_due``). Requests of a worker that went missing are neither.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from orchestrate.report.aggregates.chunks import tokens_received
from orchestrate.report.aggregates.concurrency import peak_in_flight
from orchestrate.report.aggregates.stats import numeric_column, value_stats
from orchestrate.report.schema.common import PercentilesMeanMax
from orchestrate.report.schema.machine import Workers
from orchestrate.report.schema.pacing import Arrivals, LatencyFromSchedule
from orchestrate.report.schema.pacing import Stage as StageRow
from orchestrate.results import VariantPaths, read_json

LATENCY_KEYS = (("ttft_from_schedule_ms", "TTFT"), ("e2e_from_schedule_ms", "E2E"))


@dataclass(frozen=True)
class Pacing:
    """``summary.json``'s ``arrivals`` (an open loop) and ``stages`` (a ramp); neither in a plain run."""

    arrivals: Arrivals | None = None
    stages: tuple[StageRow, ...] = ()


def load_mode_summary(paths: VariantPaths, records: pd.DataFrame, arrivals: dict[str, Any],
                      workers: Workers | None = None) -> Pacing:
    """``summary.json``'s ``arrivals`` (open loop) and ``stages`` (ramp) blocks, from the files the Locust side
    wrote; neither in a plain run.

    :param arrivals: ``arrivals.json`` as the summary read it (empty: no open loop).
    :param workers: ``workers.json`` as the summary read it (its lost workers' prompts are neither sent nor unsent).
    """
    stages = read_json(paths.stages_json)
    lost = {i for owed in workers.lost_prompt_indices.values() for i in owed} if workers else set()
    return Pacing(summarize_arrivals(records, arrivals, lost) if arrivals else None,
                  summarize_stages(records, stages) if stages else ())


def _number(value: Any) -> float | None:
    """A rate or a duration the Locust side wrote, as the number it is (``8`` is ``8.0``); None stays None."""
    return None if value is None else float(value)


def summarize_arrivals(records: pd.DataFrame, info: dict[str, Any], lost: set[int] | None = None) -> Arrivals:
    """Rate asked/scheduled/achieved, lateness, send delays, unsent requests, and latencies from the schedule.

    :param lost: prompt indices a lost worker took and never returned (sent, but without a record).
    """
    lost = lost or set()
    scheduled = int(info.get("scheduled") or 0)
    sent = records[numeric_column(records, "scheduled_ts").notna()] if not records.empty else records
    n_sent = int(len(sent))
    late_ms = float(info.get("late_ms") or 0.0)
    delay = numeric_column(sent, "send_delay_ms").dropna()
    late = int((delay > late_ms).sum())
    sends = np.sort(numeric_column(sent, "send_ts").dropna().to_numpy())
    span = float(sends[-1] - sends[0]) if sends.size >= 2 else 0.0
    offsets = [float(o) for o in info.get("offsets_s") or []]
    indices = [int(i) for i in info.get("prompt_indices") or []]
    sent_indices = set(int(i) for i in numeric_column(sent, "prompt_index").dropna())
    start, end = info.get("start_ts"), info.get("end_ts")
    unsent_due = [start + off for i, off in zip(indices, offsets) if i not in sent_indices and i not in lost] \
        if start is not None else []
    overdue = sum(1 for due in unsent_due if end is None or due <= end)
    unsent = max(0, scheduled - n_sent - len(lost & set(indices)))
    ok = sent[sent["status"] == "ok"] if n_sent else sent
    delays = value_stats(delay.to_numpy())
    overdue = min(overdue, unsent)
    return Arrivals(
        mode=info.get("arrival"), time_scale=_number(info.get("time_scale")), rate_asked=_number(info.get("rate")), burstiness=_number(info.get("burstiness")),
        users_cap=info.get("users"), late_ms=late_ms, seed=info.get("seed"),
        rate_scheduled=(len(offsets) - 1) / offsets[-1] if len(offsets) >= 2 and offsets[-1] > 0 else None,
        rate_achieved=(sends.size - 1) / span if span > 0 else None,
        scheduled=scheduled, sent=n_sent, unsent=unsent, unsent_overdue=overdue,
        unsent_not_due=max(0, unsent - overdue), late=late, late_share=late / n_sent if n_sent else None,
        send_delay_ms=None if delays is None else PercentilesMeanMax(
            p50=delays.p50, p90=delays.p90, p99=delays.p99, mean=delays.mean, max=delays.max),
        latency_from_schedule_ms=LatencyFromSchedule(**{
            label.lower(): value_stats(numeric_column(ok, key).dropna().to_numpy()) for key, label in LATENCY_KEYS}),
        start_ts=start, end_ts=end, cap_fell_behind=bool(late or overdue))


def _cancel_times(send: pd.Series, stages: list[dict[str, Any]], starts: list[float], run_end: float | None
                  ) -> pd.Series:
    """When a request without an end (cancelled) stopped: at the next ramp-down after its send (Locust stops
    users at once), else at the end of the run."""
    downs = np.array([t for i, t in enumerate(starts) if i and stages[i]["users"] < stages[i - 1]["users"]]
                     + [run_end if run_end is not None else np.inf])
    return pd.Series(downs[np.minimum(np.searchsorted(downs, send.to_numpy(), side="right"), len(downs) - 1)],
                     index=send.index)


def summarize_stages(records: pd.DataFrame, info: dict[str, Any]) -> tuple[StageRow, ...]:
    """Per stage: the records sent while it was active (by ``send_ts`` against the stage's actual start),
    their outcome and latencies, the tokens received during it, and the peak of requests in flight."""
    stages, starts = info.get("stages") or [], [float(t) for t in info.get("stage_starts") or []]
    send = numeric_column(records, "send_ts")
    end = send + numeric_column(records, "e2e_ms") / 1000.0
    last_end = float(end.max()) if len(end) and end.notna().any() else None
    end = end.fillna(_cancel_times(send, stages, starts, info.get("end_ts") or last_end))
    run_ends = [t for t in (info.get("end_ts"), last_end) if t is not None]  # the shape's or the last reply
    windows = [(lo, starts[i + 1] if i + 1 < len(starts) else min(run_ends) if run_ends else lo)
               for i, lo in enumerate(starts)]
    received = tokens_received(records, windows)
    out = []
    for i, stage in enumerate(stages):
        asked = StageRow(stage=i + 1, users=stage["users"], duration_s=_number(stage["duration_s"]),
                         spawn_rate=_number(stage.get("spawn_rate")), reached=i < len(starts))
        if i >= len(starts):
            out.append(asked)
            continue
        lo, window_end = windows[i]
        nxt = starts[i + 1] if i + 1 < len(starts) else None
        mask = send.notna()
        if i:
            mask &= send >= lo
        if nxt is not None:
            mask &= send < nxt
        mine = records[mask]
        ok = mine[mine["status"] == "ok"] if len(mine) else mine
        active = max(0.0, window_end - lo)
        ttft = value_stats(numeric_column(ok, "ttft_ms").dropna().to_numpy())
        tpot = value_stats(numeric_column(ok, "tpot_ms").dropna().to_numpy())
        out.append(replace(asked, started_s=lo - float(info.get("start_ts", starts[0])), active_s=active,
                           requests=int(len(mine)), completed=int(len(ok)),
                           errors=int((mine["status"] == "error").sum()) if len(mine) else 0,
                           cancelled=int((mine["status"] == "cancelled").sum()) if len(mine) else 0,
                           peak_in_flight=peak_in_flight(send.to_numpy(), end.to_numpy(), lo, window_end),
                           decode_tok_s=received[i] / active if active > 0 else None,
                           ttft_p50_ms=ttft.p50 if ttft else None, ttft_p99_ms=ttft.p99 if ttft else None,
                           tpot_p50_ms=tpot.p50 if tpot else None))
    return tuple(out)
