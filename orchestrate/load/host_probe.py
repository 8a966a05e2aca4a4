"""The host's own load while a variant runs: CPU taken by foreign processes, steal time, other GPU users.

Stage: load, beside it (``sampler.MetricsSampler`` takes one reading per sample into
``metrics.jsonl``; the summary's ``host`` block is ``report/aggregates/host.py``, its note
``report/notes.py:host_note``, the limits ``scenario/host_limits.py``).

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
import platform
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import psutil

from orchestrate.processes import run_command

PROC_STAT = Path("/proc/stat")
NVIDIA_APPS = ("nvidia-smi", "--query-compute-apps=pid,process_name", "--format=csv,noheader")
LOCAL = ("127.0.0.1", "localhost", "::1", "0.0.0.0", "")


def machine() -> dict[str, Any]:
    """The host a result was measured on (the load generator's; the server's too unless ``--url``)."""
    return {"hostname": socket.gethostname(), "cpu_count": os.cpu_count(), "platform": platform.platform()}


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


class HostProbe:
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
            out["foreign_gpu_processes"] = foreign_gpu_processes(server, lambda argv: run_command(argv, 5.0))
        return out
