"""The host's own load while a variant runs: CPU taken by foreign processes, steal time, other GPU users.

Stage: beside the load (``sampler.MetricsSampler`` takes one reading per sample; the summary's
``host`` block is built here from ``metrics.jsonl``). Imports: stdlib, psutil, numpy,
``orchestrate.summarize`` (percentiles).

A comparison is only as fair as its conditions: two variants that differ in flash attention also
differ in what else the host was doing. Per interval, foreign CPU = the host's busy CPU time
(``/proc/stat`` user + nice + system) minus the CPU time of the server's processes and of
tokenswarm's own (this orchestrator, Locust and its workers: its process tree), in % of one core;
steal = the share of all CPU time the hypervisor gave to others (a VM losing its cores). The
server's processes are the launcher's process tree, else the process listening on the server's
port on this host, else unknown: then its CPU counts as foreign, and ``host.server_processes`` says so.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import numpy as np
import psutil

if TYPE_CHECKING:
    from orchestrate.yamlsource import Checker

PROC_STAT = Path("/proc/stat")
FOREIGN_CPU_LIMIT_PCT = 10.0
"""Foreign CPU p50 above this (% of one core), or its mean above ``BURST_SHARE`` of it, makes the host busy."""
STEAL_LIMIT_PCT = 5.0
"""Steal p50 above this (% of all CPU time) makes the host busy."""
BURST_SHARE = 0.5
"""Foreign CPU in bursts makes the host busy too, when its mean passes this share of the limit: on the
real CPU study, 15 s of another job at 70–98 % of a core in a 2-minute variant left the p50 at 2 % but
the mean at 9.7 % (quiet runs: 1.4–1.8 %), and that variant's decode 10 % below its other repeats."""
BURST_MIN_S = 3
"""...when the foreign CPU also passed the limit in at least this many readings (seconds): one reading
over it is an artefact of a process of the run ending (or a short sweep step's), not a load."""


@dataclass(frozen=True)
class HostLimits:
    """Past these p50s the host was busy while a variant ran (scenario ``host_limits:``, ``--host-cpu-limit``)."""

    foreign_cpu_pct: float = FOREIGN_CPU_LIMIT_PCT
    steal_pct: float = STEAL_LIMIT_PCT


def parse_host_limits(check: "Checker", raw: Any) -> HostLimits:
    """``host_limits: {foreign_cpu_pct: 25, steal_pct: 5}``; an unknown key or a negative limit names its line."""
    section = check.mapping(raw, ("host_limits",), {"foreign_cpu_pct", "steal_pct"})
    return HostLimits(**{k: check.number(v, ("host_limits", k), float, 0) for k, v in section.items()})


NVIDIA_APPS = ("nvidia-smi", "--query-compute-apps=pid,process_name", "--format=csv,noheader")
LOCAL = ("127.0.0.1", "localhost", "::1", "0.0.0.0", "")


def read_proc_stat(path: Path = PROC_STAT) -> tuple[float, float, float] | None:
    """(busy, steal, total) CPU seconds of the whole host since boot; None off Linux."""
    try:
        fields = path.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if fields[0] != "cpu" or len(fields) < 9:
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in fields[1:9])
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system) / tick, steal / tick, (user + nice + system + idle + iowait + irq + softirq
                                                         + steal) / tick


def tree_pids(root: int | None) -> set[int]:
    """``root`` and its descendants that are alive now (none for None or a process that is gone)."""
    if root is None:
        return set()
    try:
        process = psutil.Process(root)
        return {root} | {child.pid for child in process.children(recursive=True)}
    except psutil.Error:
        return set()


def listening_pid(url: str) -> int | None:
    """The process listening on ``url``'s port, when the URL is this host's (``--url``, docker)."""
    parsed = urlparse(url)
    if parsed.hostname not in LOCAL or parsed.port is None:
        return None
    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == parsed.port and conn.pid:
                return conn.pid
    except (psutil.Error, OSError):
        return None
    return None


def foreign_gpu_processes(server: set[int], run: Callable[[tuple[str, ...]], str]) -> list[str] | None:
    """``pid name`` of every GPU compute process that is not the server's; None without nvidia-smi."""
    try:
        out = run(NVIDIA_APPS)
    except (OSError, subprocess.SubprocessError):
        return None
    apps = []
    for line in out.splitlines():
        pid, _, name = (part.strip() for part in line.partition(","))
        if pid.isdigit() and int(pid) not in server:
            apps.append(f"{pid} {name}")
    return apps


def _nvidia_smi(argv: tuple[str, ...]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=5, check=True).stdout


class HostLoadProbe:
    """One reading per call of the CPU each party used since the last call.

    :param server_pid: the launcher's server process (its tree is the server), or None.
    :param url: the server's URL, to find its process by port when ``server_pid`` is None.
    """

    def __init__(self, server_pid: int | None, url: str, own_pid: int | None = None,
                 stat: Path = PROC_STAT, gpu: bool = False) -> None:
        self.server_pid = server_pid if server_pid is not None else listening_pid(url)
        self.server_processes = ("launcher" if server_pid is not None else
                                 "port" if self.server_pid is not None else "unknown")
        """How the server's processes were found: ``launcher``, ``port`` or ``unknown`` (then its CPU is foreign)."""
        self.own_pid = own_pid if own_pid is not None else os.getpid()
        self.stat = stat
        self.gpu = gpu
        self._times: dict[str, dict[int, float]] = {}
        """Per group (``server``, ``own``): each process's CPU seconds at the last reading."""
        self._last: tuple[float, float, float] | None = None

    def _cpu_seconds(self, group: str, pids: set[int]) -> float:
        """CPU seconds ``pids`` used since the last reading.

        Each process counts its own time and its reaped children's (``children_*``), and the sum is
        compared with the last reading's sum over the processes seen then: a child that ended and was
        reaped by its parent moves from one term to the other, so only its last moments count, not its
        whole life (Locust's exit would otherwise look like seconds of CPU in one second).
        """
        now: dict[int, float] = {}
        for pid in pids:
            try:
                t = psutil.Process(pid).cpu_times()
            except psutil.Error:
                continue
            now[pid] = t.user + t.system + t.children_user + t.children_system
        before = self._times.get(group)
        self._times[group] = now
        return 0.0 if before is None else sum(now.values()) - sum(before.values())

    def read(self) -> dict[str, Any]:
        """``{foreign_cpu_pct, steal_pct, server_cpu_pct, own_cpu_pct, server_processes}`` (None at
        the first reading, which only sets the baseline), and ``foreign_gpu_processes`` on a GPU host."""
        now = read_proc_stat(self.stat)
        server = tree_pids(self.server_pid)
        own = tree_pids(self.own_pid) - server
        server_s, own_s = self._cpu_seconds("server", server), self._cpu_seconds("own", own)
        out: dict[str, Any] = {"foreign_cpu_pct": None, "steal_pct": None, "server_cpu_pct": None,
                               "own_cpu_pct": None, "server_processes": self.server_processes}
        if now is not None and self._last is not None:
            busy, steal, total = (a - b for a, b in zip(now, self._last))
            cores = psutil.cpu_count() or 1
            wall = total / cores
            if wall > 0:
                # the sum is exact even when a server process was reaped by the orchestrator in between
                out.update(foreign_cpu_pct=round(max(0.0, busy - server_s - own_s) / wall * 100, 2),
                           steal_pct=round(steal / total * 100, 2),
                           server_cpu_pct=round(max(0.0, server_s) / wall * 100, 2),
                           own_cpu_pct=round(max(0.0, own_s) / wall * 100, 2))
        self._last = now if now is not None else self._last or (0.0, 0.0, 0.0)
        if self.gpu:
            out["foreign_gpu_processes"] = foreign_gpu_processes(server, _nvidia_smi)
        return out


def summarize_host(samples: list[dict[str, Any]], limits: HostLimits = HostLimits()) -> dict[str, Any] | None:
    """``summary.json``'s ``host`` block from the samples' ``host`` readings; None without any."""
    from orchestrate.summarize import weighted_stats
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
