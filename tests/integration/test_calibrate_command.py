"""``tokenswarm calibrate --quick``: a capacity figure and a plot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def test_quick_calibration_writes_capacity_and_plot(tmp_path: Path) -> None:
    out = tmp_path / "cal"
    proc = subprocess.run([sys.executable, "-m", "orchestrate.cli", "calibrate", "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "capacity of this host" in proc.stdout
    result = json.loads((out / "calibration.json").read_text())
    cap = result["capacity"]
    assert cap["max_chunks_per_s_seen"] > 0 and cap["cpu_us_per_chunk"] > 0
    assert cap["chunks_per_s_p99_under_5ms"] >= cap["chunks_per_s_p99_under_1ms"] >= 0
    for step in result["steps"]:
        assert step["completed"] == step["prompts"] and step["errors"] == 0
        assert step["ttft_err_ms"]["n"] == step["prompts"]
        assert step["chunk_err_ms"]["n"] == step["prompts"] * step["output_tokens"]
    ingest = result["ingest_step"]
    assert ingest["completed"] == ingest["prompts"] and ingest["chunks"] == ingest["prompts"] * ingest["output_tokens"]
    # many chunks per network read cost less than one each
    assert 0 < cap["ingest"]["cpu_us_per_chunk"] < cap["cpu_us_per_chunk"]
    assert (out / "calibration.png").stat().st_size > 10_000
