"""Run the ``locust`` command for one variant, show progress, and stop it if the server dies.

Stage: load. Imports: stdlib, ``orchestrate.results``, ``orchestrate.errors``. Locust runs as its own
process (headless), exactly as a user would run it; its CSV/JSON stats and our ``requests.jsonl``
are the outputs. Locust exits 1 when any request failed: that is a result, not an error here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import locustfiles
from orchestrate.errors import LoadRunError
from orchestrate.results import VariantPaths

LOCUSTFILE = Path(locustfiles.__file__).parent / "locustfile.py"
PROGRESS_INTERVAL_S = 5.0
STOP_GRACE_S = 30.0


@dataclass(frozen=True)
class LoadPlan:
    """Everything the Locust process needs for one variant."""

    url: str
    users: int
    spawn_rate: float
    num_prompts: int
    max_tokens: int
    max_seconds: float | None
    read_timeout_s: float
    cache_prompt: bool
    model: str | None


@dataclass(frozen=True)
class LoadOutcome:
    exit_code: int
    wall_s: float
    stopped_by: str
    """``num_prompts`` (all sent), ``time_cap``, ``server_died``, or ``interrupted``."""


def locust_command(plan: LoadPlan, paths: VariantPaths) -> list[str]:
    """The exact ``locust`` command line (also shown in ``server.json``/docs)."""
    cmd = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless",
           "-u", str(plan.users), "-r", f"{plan.spawn_rate:g}", "--host", plan.url,
           "--prompts-file", str(paths.prompts), "--num-prompts", str(plan.num_prompts),
           "--max-tokens", str(plan.max_tokens), "--records-file", str(paths.records),
           "--read-timeout", f"{plan.read_timeout_s:g}",
           "--csv", str(paths.locust_prefix), "--csv-full-history", "--json-file", str(paths.locust_json_stem),
           "--only-summary", "--loglevel", "INFO"]
    if plan.max_seconds:
        cmd += ["--run-time", f"{int(plan.max_seconds)}s"]
    if not plan.cache_prompt:
        cmd.append("--no-cache-prompt")
    if plan.model:
        cmd += ["--model", plan.model]
    return cmd


def _progress(records: Path, offset: int, counts: list[int]) -> int:
    """Count records (and errors) appended since ``offset``; returns the new offset."""
    try:
        with records.open("rb") as f:
            f.seek(offset)
            chunk = f.read()
    except FileNotFoundError:
        return offset
    complete = chunk[: chunk.rfind(b"\n") + 1]
    counts[0] += complete.count(b"\n")
    counts[1] += complete.count(b'"status":"error"')
    return offset + len(complete)


def run_load(plan: LoadPlan, paths: VariantPaths, label: str,
             server_alive: Callable[[], bool] = lambda: True) -> LoadOutcome:
    """Run Locust to the end; print ``[label] n/N requests`` every few seconds."""
    cmd = locust_command(plan, paths)
    started = time.monotonic()
    counts, offset, last_print = [0, 0], 0, started
    stopped_by = "num_prompts"
    with paths.locust_log.open("ab") as log:
        try:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                    env={**os.environ, "PYTHONUNBUFFERED": "1"})
        except OSError as exc:
            raise LoadRunError(f"cannot start locust ({exc}); is the project installed?") from None
        try:
            while proc.poll() is None:
                time.sleep(0.2)
                now = time.monotonic()
                if not server_alive():
                    stopped_by = "server_died"
                    _stop(proc)
                    break
                if now - last_print >= PROGRESS_INTERVAL_S:
                    offset = _progress(paths.records, offset, counts)
                    print(f"[{label}] {counts[0]}/{plan.num_prompts} requests, {counts[1]} errors, "
                          f"{now - started:.0f} s", flush=True)
                    last_print = now
        except KeyboardInterrupt:
            stopped_by = "interrupted"
            _stop(proc)
            raise
        finally:
            if proc.poll() is None:
                _stop(proc)
    wall = time.monotonic() - started
    if stopped_by == "num_prompts" and plan.max_seconds and wall >= plan.max_seconds:
        stopped_by = "time_cap"
    if proc.returncode not in (0, 1) and not paths.locust_json.exists():
        raise LoadRunError(f"locust exited with code {proc.returncode} and wrote no stats; "
                           f"see {paths.locust_log}")
    return LoadOutcome(exit_code=proc.returncode, wall_s=wall, stopped_by=stopped_by)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM lets Locust quit cleanly and write its final stats; SIGKILL after a grace period."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
