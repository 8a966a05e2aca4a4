"""A results folder that is too small, or fills up during the run: one line, a clean stop, no hang.

Uses a tmpfs of the test's own (root only; CI runs as root).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import write_scenario

pytestmark = pytest.mark.integration


@pytest.fixture
def small_disk(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    mount = tmp_path / "disk"
    mount.mkdir()
    size = getattr(request, "param", "256k")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)])


def run(tmp_path: Path, results: Path, env: dict[str, str], num_prompts: int) -> subprocess.CompletedProcess[str]:
    scenario = write_scenario(tmp_path, load={"users": 4, "num_prompts": num_prompts, "max_tokens": 48,
                                              "max_seconds": 120})
    return subprocess.run([sys.executable, "-m", "orchestrate.cli", "run", str(scenario), "--results-dir",
                           str(results)], capture_output=True, text=True, timeout=180, env=env)


def test_too_little_free_space_is_one_line_before_anything_starts(tmp_path: Path, small_disk: Path) -> None:
    proc = run(tmp_path, small_disk / "results", dict(os.environ), 10)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "MiB free under" in proc.stderr and "Traceback" not in proc.stderr
    assert "starting embedded server" not in proc.stdout


def test_a_disk_that_fills_up_stops_the_run_cleanly(tmp_path: Path, small_disk: Path) -> None:
    env = {**os.environ, "TOKENSWARM_MIN_FREE_MB": "0.05"}
    started = time.monotonic()
    proc = run(tmp_path, small_disk / "results", env, 400)
    assert time.monotonic() - started < 120  # stopped, not waiting for the time cap
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "No space left on device" in proc.stderr + proc.stdout
    records = next(small_disk.glob("results/*/v/requests.jsonl"))
    lines = records.read_bytes().split(b"\n")
    whole = [line for line in lines[:-1]]
    assert whole, "no record was kept"
    assert all(line.startswith(b"{") and line.endswith(b"}") for line in whole)
