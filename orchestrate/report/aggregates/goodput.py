"""Goodput: how many requests met the scenario's SLOs (``orchestrate.scenario.slo``), and at what rate.

Stage: records → report. Computed here and only here; ``vllm_format`` copies ``requests_per_s`` as
vLLM's ``request_goodput``.

The definition is vLLM's (``vllm bench serve --goodput ttft:MS tpot:MS e2el:MS``, after DistServe):
a request is good when it completed and each limit set holds with ``value <= limit``; goodput is
good requests / the benchmark's duration. Where tokenswarm differs, and why:

- TPOT of a request with one output token is undefined (no second token): it MEETS a TPOT limit, as
  in vLLM (which sets such a TPOT to 0 for goodput); its TTFT and E2E are still judged.
- A completed request with no content chunk has no TTFT: it MISSES a TTFT limit (nothing ever
  reached the user; vLLM counts such a response as failed, which is never good either).
- Errors and cancelled requests (in flight when the run stopped; vLLM always waits for every
  request, so it has none) are never good, and ``share`` divides by ALL requests sent, so they
  lower it. vLLM reports neither ``share`` nor ``output_tokens_per_s`` (Σ output tokens of the good
  requests / duration), nor ``missed_by``.
- The measured values are tokenswarm's (docs/metrics.md): TTFT starts at the first content chunk, E2E
  ends with the stream; vLLM's start at its first chunk with ``choices`` and end at its last one.
- A limit must be > 0 (vLLM accepts 0, which no request can meet).

The per-second figures divide by the summary's ``duration_s`` (first send → last end), the one its
throughput uses, through the same ``per_second``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from locustfiles.records import CANCELLED, ERROR, OK
from orchestrate.report.aggregates.stats import numeric_column, per_second
from orchestrate.report.schema.steady import Goodput, MissedBy
from orchestrate.scenario.slo import SLO_KEYS


def goodput(records: pd.DataFrame, slo: dict[str, float] | None, duration_s: float) -> Goodput | None:
    """``summary.json``'s ``goodput`` block; None without an SLO.

    ``missed_by`` counts, per limit, the completed requests over it (one request over two limits is
    counted under both), plus every ``error`` and ``cancelled`` request: a completed request is
    good exactly when it is in none of the limit counts.

    :param duration_s: the summary's ``duration_s``, so goodput and throughput share one window.
    """
    if not slo:
        return None
    limits = limits_of(slo)
    status = records["status"] if "status" in records else pd.Series(dtype=object)
    completed = status == OK
    missed = {key: int((completed & over).sum()) for key, over in _over(records, limits).items()}
    good = good_requests(records, slo)
    missed["error"], missed["cancelled"] = int((status == ERROR).sum()), int((status == CANCELLED).sum())
    n_good = int(good.sum())
    tokens = int(numeric_column(records, "output_tokens")[good].fillna(0).sum())
    return Goodput(slo=limits, requests_meeting=n_good, share=n_good / len(records) if len(records) else None,
                   requests_per_s=per_second(n_good, duration_s), output_tokens_per_s=per_second(tokens, duration_s),
                   missed_by=MissedBy(**missed))


def limits_of(slo: dict[str, float]) -> dict[str, float]:
    """The SLO's limits that are set."""
    return {key: float(slo[key]) for key in SLO_KEYS if slo.get(key) is not None}


def _over(records: pd.DataFrame, limits: dict[str, float]) -> dict[str, pd.Series]:
    """Per limit, which records are over it."""
    found = {}
    for key, limit in limits.items():
        values = numeric_column(records, key)
        # NaN compares False: a missing TPOT (one output token) is not over its limit, a missing TTFT is
        found[key] = values > limit if key == "tpot_ms" else ~(values <= limit)
    return found


def good_requests(records: pd.DataFrame, slo: dict[str, float]) -> np.ndarray:
    """Per record, whether it met the SLO (completed, within every limit): ``goodput``'s rule, for the share's
    interval."""
    good = (records["status"] == OK) if "status" in records else pd.Series(False, index=records.index)
    for over in _over(records, limits_of(slo)).values():
        good &= ~over
    return good.to_numpy(dtype=bool)
