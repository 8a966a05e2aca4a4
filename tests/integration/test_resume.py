"""``tokenswarm run --resume``: a matrix whose orchestrator was killed (SIGKILL) after its second variant is
finished without running the first two again, and a changed scenario is refused before anything runs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import reference_server

pytestmark = pytest.mark.integration

NAMES = ("max_tokens-8", "max_tokens-12", "max_tokens-16")


def tokenswarm(*args: str) -> list[str]:
    return [sys.executable, "-m", "orchestrate.cli", "run", *args]


def test_a_killed_matrix_is_finished_by_resume_and_a_changed_one_is_refused(tmp_path: Path) -> None:
    with reference_server(tmp_path / "server", "--ttft-ms", "30", "--itl-ms", "20") as url:
        scenario = tmp_path / "matrix.yaml"
        scenario.write_text(yaml.safe_dump({
            "name": "resumed", "server": {"launcher": "external", "url": url},
            "load": {"dataset": "synthetic:200", "users": 2, "num_prompts": 6, "sampling": {"fixed_output_tokens": 16}},
            "matrix": {"max_tokens": [8, 12, 16]}}))
        results = tmp_path / "results"
        proc = subprocess.Popen(tokenswarm(str(scenario), "--results-dir", str(results)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not list(results.glob(f"*/{NAMES[1]}/summary.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        (run,) = results.iterdir()
        kept = {name: (run / name / "summary.json").stat().st_mtime_ns for name in NAMES[:2]}
        assert not (run / "compare.md").exists(), "killed before the comparison"

        changed = tmp_path / "changed.yaml"
        changed.write_text(scenario.read_text().replace("num_prompts: 6", "num_prompts: 7"))
        refused = subprocess.run(tokenswarm(str(changed), "--resume", str(run)), capture_output=True, text=True)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert "load.num_prompts: 6 → 7" in refused.stderr and "nothing was run" in refused.stderr
        assert not (run / "partial").exists() and not (run / NAMES[2] / "summary.json").exists()

        resumed = subprocess.run(tokenswarm(str(scenario), "--resume", str(run)), capture_output=True, text=True,
                                 timeout=180)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert {name: (run / name / "summary.json").stat().st_mtime_ns for name in NAMES[:2]} == kept
    assert f"[{NAMES[0]}] completed before: kept" in resumed.stdout
    assert json.loads((run / NAMES[2] / "summary.json").read_text())["status"] == "completed"
    partial = list((run / "partial").iterdir()) if (run / "partial").exists() else []
    assert [p.name for p in partial] in ([], [f"{NAMES[2]}-1"]), "the third, if it had begun, set aside"
    compared = (run / "compare.md").read_text()
    assert all(f"| {name} | completed |" in compared for name in NAMES)
