"""What kept the host busy while a variant ran, and the note a reader must see, from the summary's
``host`` block (``aggregates/host.py``).

Stage: report. Busy means past the scenario's ``HostLimits``.
"""

from __future__ import annotations

from typing import Any

from orchestrate.scenario.host_limits import BURST_MIN_S, BURST_SHARE, FOREIGN_CPU_LIMIT_PCT, STEAL_LIMIT_PCT


def busy_reasons(host: dict[str, Any] | None) -> list[str]:
    """What kept the host busy, past its limits (empty for a quiet host or no readings)."""
    if not host:
        return []
    parts = []
    foreign, steal, limits = host.get("foreign_cpu_pct"), host.get("steal_pct"), host.get("limits") or {}
    limit = limits.get("foreign_cpu_pct", FOREIGN_CPU_LIMIT_PCT)  # older summaries: the defaults
    if foreign and foreign["p50"] > limit:
        parts.append(f"other processes used {foreign['p50']:.0f} % of a core (p50, max {foreign['max']:.0f} %)")
    elif foreign and (foreign.get("mean") or 0) > BURST_SHARE * limit and \
            host.get("foreign_cpu_s_over_limit", BURST_MIN_S) >= BURST_MIN_S:
        parts.append(f"other processes used {foreign['mean']:.1f} % of a core on average, in bursts "
                     f"({host.get('foreign_cpu_s_over_limit')} s over {limit:g} %; p50 {foreign['p50']:.0f} %, max "
                     f"{foreign['max']:.0f} %)")
    if steal and steal["p50"] > limits.get("steal_pct", STEAL_LIMIT_PCT):
        parts.append(f"the hypervisor took {steal['p50']:.0f} % of the CPU time (steal p50, max {steal['max']:.0f} %)")
    if host.get("foreign_gpu_processes"):
        parts.append(f"other GPU processes ran: {', '.join(host['foreign_gpu_processes'])}")
    return parts


def host_note(host: dict[str, Any] | None) -> str | None:
    """The warning a reader must see when the host was not quiet."""
    parts = busy_reasons(host)
    if not parts:
        return None
    unknown = (" (the server's processes were not found on this host, so its own CPU is in that figure)"
               if (host or {}).get("server_processes") == "unknown" else "")
    return ("the host was busy while this variant ran: " + "; ".join(parts) + unknown
            + " — its numbers are not comparable with a quiet run")
