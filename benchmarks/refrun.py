"""What the benchmarks share: the reference server (``tokenswarm serve-synthetic``) started and stopped, one
``tokenswarm`` command against it, and the machine the numbers came from."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def reference_server(*flags: str) -> Iterator[str]:
    """``serve-synthetic`` on a free port with ``flags``; yields its URL, stopped (SIGINT) on exit."""
    server = subprocess.Popen([sys.executable, "-m", "orchestrate.cli", "serve-synthetic", "--port", "0", *flags],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert server.stdout is not None
    try:
        yield server.stdout.readline().split()[-1]
    finally:
        server.send_signal(2)
        server.wait(10)


def tokenswarm(folder: Path, url: str, load: dict[str, Any] | None = None, *args: str, command: str = "run",
               timeout_s: float = 600) -> Path:
    """``tokenswarm COMMAND [scenario with load] --url URL ARGS`` with results under ``folder/results``; the run's
    folder. A failed command ends the benchmark with its output."""
    cmd = [sys.executable, "-m", "orchestrate.cli", command]
    if load is not None:
        scenario = folder / "scenario.yaml"
        scenario.parent.mkdir(parents=True, exist_ok=True)
        scenario.write_text(yaml.safe_dump({"name": "bench", "load": load}))
        cmd.append(str(scenario))
    proc = subprocess.run([*cmd, "--url", url, "--results-dir", str(folder / "results"), *args], capture_output=True,
                          text=True, timeout=timeout_s, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"tokenswarm {command}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return next((folder / "results").iterdir())


def cpu_flags() -> list[str]:
    """Which of AVX-512 and AMX this CPU has (the numbers depend on it)."""
    return sorted({flag for flag in open("/proc/cpuinfo").read().split() if flag in ("avx512f", "amx_tile")})


def machine() -> dict[str, Any]:
    """Where and when a benchmark ran, for its JSON: CPUs, AVX-512/AMX, host name, UTC time."""
    return {"cpus": os.cpu_count(), "cpu_flags": cpu_flags(), "machine": platform.node(),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def measured_on(result: dict[str, Any], out: Path) -> str:
    """``2 CPUs (avx512f), 2026-12-06, `file.json```: the end of a generated section's last line."""
    return (f"{result['cpus']} CPUs ({', '.join(result['cpu_flags']) or 'no AVX-512'}), {result['date'][:10]}, "
            f"`{out.name}`")
