"""The summary's ``host`` block: how busy the host was while a variant ran.

Stage: report. Built from the ``host`` readings in ``metrics.jsonl`` (``load/host_probe.py`` takes
them); busy means past the scenario's ``HostLimits`` (``report/notes.py:busy_reasons`` says why, and
``host_note`` writes the note a reader must see).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from orchestrate.report.aggregates.stats import value_stats
from orchestrate.report.notes import busy_reasons
from orchestrate.report.schema.common import MedianMeanMax
from orchestrate.report.schema.machine import Host
from orchestrate.report.schema.machine import HostLimits as Limits
from orchestrate.scenario.host_limits import HostLimits


def summarize_host(samples: list[dict[str, Any]], limits: HostLimits = HostLimits()) -> Host | None:
    """``summary.json``'s ``host`` block from the samples' ``host`` readings; None without any."""
    readings = [s["host"] for s in samples if isinstance(s.get("host"), dict)]
    if not readings:
        return None

    def stats(key: str) -> MedianMeanMax | None:
        found = value_stats(np.array([r[key] for r in readings if r.get(key) is not None], dtype=float))
        return None if found is None else MedianMeanMax(
            p50=found.p50, mean=None if found.mean is None else round(found.mean, 2), max=found.max)

    gpu = [r["foreign_gpu_processes"] for r in readings if r.get("foreign_gpu_processes") is not None]
    host = Host(foreign_cpu_pct=stats("foreign_cpu_pct"), steal_pct=stats("steal_pct"),
                server_cpu_pct=stats("server_cpu_pct"), own_cpu_pct=stats("own_cpu_pct"),
                foreign_gpu_processes=tuple(sorted({p for apps in gpu for p in apps})) if gpu else None,
                server_processes=readings[-1].get("server_processes"),
                limits=Limits(foreign_cpu_pct=float(limits.foreign_cpu_pct), steal_pct=float(limits.steal_pct)),
                foreign_cpu_s_over_limit=sum(1 for r in readings
                                             if (r.get("foreign_cpu_pct") or 0) > limits.foreign_cpu_pct))
    return replace(host, busy=bool(busy_reasons(host)))
