"""The summary's ``host`` block: how busy the host was while a variant ran.

Stage: report. Built from the ``host`` readings in ``metrics.jsonl`` (``load/host_probe.py`` takes
them); busy means past the scenario's ``HostLimits`` (``report/host_report.py`` says why, and writes
the note a reader must see).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from orchestrate.report.aggregates.stats import weighted_stats
from orchestrate.report.host_report import busy_reasons
from orchestrate.scenario.host_limits import HostLimits


def summarize_host(samples: list[dict[str, Any]], limits: HostLimits = HostLimits()) -> dict[str, Any] | None:
    """``summary.json``'s ``host`` block from the samples' ``host`` readings; None without any."""
    readings = [s["host"] for s in samples if isinstance(s.get("host"), dict)]
    if not readings:
        return None

    def stats(key: str) -> dict[str, float] | None:
        values = np.array([r[key] for r in readings if r.get(key) is not None], dtype=float)
        found = weighted_stats(values)
        return None if found is None else {"p50": found["p50"], "mean": round(found["mean"], 2), "max": found["max"]}

    gpu = [r["foreign_gpu_processes"] for r in readings if r.get("foreign_gpu_processes") is not None]
    out: dict[str, Any] = {"foreign_cpu_pct": stats("foreign_cpu_pct"), "steal_pct": stats("steal_pct"),
                           "server_cpu_pct": stats("server_cpu_pct"), "own_cpu_pct": stats("own_cpu_pct"),
                           "foreign_gpu_processes": sorted({p for apps in gpu for p in apps}) if gpu else None,
                           "server_processes": readings[-1].get("server_processes"),
                           "limits": {"foreign_cpu_pct": limits.foreign_cpu_pct, "steal_pct": limits.steal_pct}}
    limit = limits.foreign_cpu_pct
    out["foreign_cpu_s_over_limit"] = sum(1 for r in readings if (r.get("foreign_cpu_pct") or 0) > limit)
    out["busy"] = bool(busy_reasons(out))
    return out
