"""Plain Locust, as its users run it (`locust -f locustfiles/locustfile.py ...`): a bad dataset is one
line at once, generated datasets work, the Aggregated row counts requests only, and `tokenswarm
report` builds the summary of its folder."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from locustfiles.command import LOCUSTFILE
from orchestrate.server.launchers.embedded import EmbeddedLauncher
from tests.helpers import read_jsonl

pytestmark = pytest.mark.integration


def locust(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", *args],
                          capture_output=True, text=True, timeout=timeout_s)


@pytest.mark.parametrize("dataset, said", [
    ("/nonexistent/ShareGPT.json", "--dataset /nonexistent/ShareGPT.json: no such file"),
    ("synthetic:0", "--dataset synthetic:0: synthetic:N needs a whole number N >= 1"),
])
def test_a_bad_dataset_is_one_line_before_any_user_spawns(dataset: str, said: str) -> None:
    started = time.monotonic()
    proc = locust("-u", "4", "-r", "4", "--host", "http://127.0.0.1:9", "--dataset", dataset, "-t", "30s")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert time.monotonic() - started < 25  # at once, not after idling through the run time
    assert "Traceback" not in proc.stderr and f"tokenswarm: error: {said}" in proc.stderr, proc.stderr[-2000:]
    assert "Ramping to 4 users" not in proc.stderr


def test_a_generated_dataset_the_aggregated_row_and_a_report_of_the_folder(
        tmp_path: Path, embedded: Callable[..., EmbeddedLauncher]) -> None:
    server = embedded(parallel=3)
    out = tmp_path / "plain"
    out.mkdir()
    proc = locust("-u", "3", "-r", "3", "--host", server.url or "", "--dataset", "synthetic:200", "--num-prompts", "6",
                  "--max-tokens", "8", "--records-file", str(out / "requests.jsonl"), "--csv", str(out / "locust"),
                  "--json-file", str(out / "locust_stats"), "-t", "60s")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(read_jsonl(out / "requests.jsonl")) == 6
    rows = {row["Name"]: row for row in csv.DictReader((out / "locust_stats.csv").open())}
    assert int(rows["/v1/chat/completions"]["Request Count"]) == 6 and int(rows["TTFT"]["Request Count"]) == 6
    assert int(rows["Aggregated"]["Request Count"]) == 6  # requests, not requests + their TTFT and TPOT rows
    report = subprocess.run([sys.executable, "-m", "orchestrate.cli", "report", str(out)], capture_output=True,
                            text=True, timeout=120)
    assert report.returncode == 0, report.stdout + report.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["requests"]["completed"] == 6 and summary["crosscheck_agrees"] is True
    assert "6/6 done" in report.stdout or "6/" in report.stdout
    empty = subprocess.run([sys.executable, "-m", "orchestrate.cli", "report", str(tmp_path / "x")],
                           capture_output=True, text=True, timeout=60)
    assert empty.returncode == 2
    (tmp_path / "nothing").mkdir()
    nothing = subprocess.run([sys.executable, "-m", "orchestrate.cli", "report", str(tmp_path / "nothing")],
                             capture_output=True, text=True, timeout=60)
    assert nothing.returncode == 2 and nothing.stderr.count("\n") == 1 and "no results to report" in nothing.stderr
