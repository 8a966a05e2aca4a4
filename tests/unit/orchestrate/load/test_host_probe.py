"""orchestrate/load/host_probe.py: the host's own load, from hand-written /proc/stat and readings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrate.load.host_probe import HostProbe, foreign_gpu_processes, listening_pid, read_proc_stat

TICK = os.sysconf("SC_CLK_TCK")


def stat_file(tmp_path: Path, user: int, system: int, idle: int, steal: int) -> Path:
    path = tmp_path / "stat"
    path.write_text(f"cpu  {user} 0 {system} {idle} 0 0 0 {steal} 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
    return path


def test_proc_stat_is_busy_steal_and_total_seconds(tmp_path: Path) -> None:
    # busy = user + nice + system; total adds idle, iowait, irq, softirq and steal
    assert read_proc_stat(stat_file(tmp_path, 300, 100, 500, 100)) == (400 / TICK, 100 / TICK, 1000 / TICK)
    assert read_proc_stat(tmp_path / "missing") is None


def test_foreign_cpu_is_what_neither_the_server_nor_tokenswarm_used(tmp_path: Path) -> None:
    stat = stat_file(tmp_path, 0, 0, 0, 0)
    probe = HostProbe(server_pid=None, url="http://10.9.9.9:1", own_pid=os.getpid(), stat=stat)
    assert probe.server_processes == "unknown"  # not on this host: its CPU would count as foreign
    assert probe.read()["foreign_cpu_pct"] is None  # the first reading is the baseline
    cores = os.cpu_count() or 1
    # one second of wall time on every core (total = cores s), of which 1 core-second busy, 0.2 s steal
    stat.write_text(f"cpu  {TICK} 0 0 {int((cores - 1.2) * TICK)} 0 0 0 {int(0.2 * TICK)} 0 0\n")
    reading = probe.read()
    assert reading["steal_pct"] == pytest.approx(20 / cores, abs=0.5)
    # this test process used a little CPU in between: the rest of the busy second is foreign
    assert 50 < reading["foreign_cpu_pct"] + reading["own_cpu_pct"] <= 100.5


def test_gpu_processes_other_than_the_servers_are_listed() -> None:
    out = "4242, /app/llama-server\n977, python3\n"
    assert foreign_gpu_processes({4242}, lambda argv: out) == ["977 python3"]
    assert foreign_gpu_processes(set(), lambda argv: "") == []

    def missing(argv: tuple[str, ...]) -> str:
        raise FileNotFoundError(argv[0])
    assert foreign_gpu_processes(set(), missing) is None


def test_a_server_on_no_local_port_is_not_found() -> None:
    assert listening_pid("http://10.1.2.3:8080") is None  # another host: never looked up
    assert listening_pid("http://127.0.0.1") is None  # no port
