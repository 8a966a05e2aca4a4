"""locustfiles/finalcsv.py: Locust's ``--csv`` files hold every request once Locust has shut down.

Locust monkey-patches at import and must come before ``requests``/``ssl``, which this test process has
already imported, so the shutdown runs in a fresh interpreter (``SCRIPT``) in Locust's own order:
requests logged, a stale ``_stats.csv`` written and its handle left open (Locust's CSV writer), the
runner quit, ``--json-file`` saved (which resets every entry), ``quit`` fired, then the stale handle
written to and closed. The script prints the CSV Locust would have written from the stats just before
the JSON save, which the files on disk must match.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT

SCRIPT = r"""
import io, csv, json, sys
from argparse import Namespace
from locust import User, task
from locust.env import Environment
from locust.stats import PERCENTILES_TO_REPORT, StatsCSV, save_stats_json
from locustfiles import finalcsv

folder, json_mode = sys.argv[1], sys.argv[2]

class Idle(User):
    @task
    def nothing(self):
        pass

opts = Namespace(csv_prefix=folder + "/run", json_file=None if json_mode == "none" else folder + "/stats")
env = Environment(user_classes=[Idle], parsed_options=opts)
runner = env.create_local_runner()
finalcsv.install(env)
fire = env.events.request.fire
for i in range(64):
    failed = i % 16 == 15
    fire(request_type="POST", name="/v1/chat/completions", response_time=100 + i, response_length=0 if failed else 32,
         context={}, exception=RuntimeError("http_500") if failed else None)
    if not failed:
        fire(request_type="METRIC", name="TTFT", response_time=20 + i % 7, response_length=120, context={},
             exception=None)
    if i == 40:  # Locust's periodic writer: its last write, 23 requests before the end
        stale = {kind: open(f"{folder}/run_{kind}.csv", "w", newline="") for kind in ("stats", "failures", "exceptions")}
        writer = StatsCSV(env, PERCENTILES_TO_REPORT)
        writer.requests_csv(csv.writer(stale["stats"]))
        writer.failures_csv(csv.writer(stale["failures"]))
        writer.exceptions_csv(csv.writer(stale["exceptions"]))
        for f in stale.values():
            f.flush()

expected = {}
for kind in ("requests", "failures"):
    buffer = io.StringIO()
    getattr(StatsCSV(env, PERCENTILES_TO_REPORT), kind + "_csv")(csv.writer(buffer))
    expected[kind] = buffer.getvalue()
runner.quit()
if json_mode != "none":
    save_stats_json(runner.stats, opts.json_file)  # as Locust's shutdown does: every entry reset
if json_mode == "torn":
    with open(opts.json_file + ".json", "r+") as f:
        f.truncate(50)
env.events.quit.fire(exit_code=0)
for f in stale.values():  # Locust closes its files after `quit`, writing what it still buffers
    f.write("stale,write\n")
    f.close()
print(json.dumps(expected))
"""


def shut_down(folder: Path, json_mode: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(folder), json_mode], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]  # Locust logs a listener's exception and goes on
    expected: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return expected


def raw(path: Path) -> str:
    with open(path, newline="", encoding="utf-8") as f:
        return f.read()


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_the_csv_files_are_rewritten_from_the_final_stats(tmp_path: Path) -> None:
    expected = shut_down(tmp_path, "json")
    assert raw(tmp_path / "run_stats.csv") == expected["requests"]  # every column, Requests/s included
    assert raw(tmp_path / "run_failures.csv") == expected["failures"]
    stats = {(r["Type"], r["Name"]): r for r in rows(tmp_path / "run_stats.csv")}
    chat = stats[("POST", "/v1/chat/completions")]
    assert chat["Request Count"] == "64" and chat["Failure Count"] == "4"  # not the 41 of the last periodic write
    assert chat["Min Response Time"] == "100" and chat["Max Response Time"] == "163"
    assert stats[("METRIC", "TTFT")]["Request Count"] == "60"
    failures = rows(tmp_path / "run_failures.csv")
    assert [(f["Name"], f["Occurrences"]) for f in failures] == [("/v1/chat/completions", "4")]
    assert "stale,write" not in (tmp_path / "run_stats.csv").read_text()  # went to the replaced file
    assert not list(tmp_path.glob("*.final.tmp"))


def test_the_entries_come_back_from_the_json_file_exactly(tmp_path: Path) -> None:
    """Locust's JSON file is written from the entries saving it resets; what is restored is what was saved."""
    shut_down(tmp_path, "json")
    saved = json.loads((tmp_path / "stats.json").read_text())
    chat = next(e for e in saved if e["name"] == "/v1/chat/completions")
    assert chat["num_requests"] == 64 and chat["num_failures"] == 4
    assert sum(chat["response_times"].values()) == 64


@pytest.mark.parametrize("json_mode", ["torn", "none"])
def test_without_a_readable_json_file_locusts_last_write_stays(tmp_path: Path, json_mode: str) -> None:
    """A torn JSON file (a full disk) or no ``--json-file``: nothing is rewritten, nothing fails."""
    shut_down(tmp_path, json_mode)
    chat = next(r for r in rows(tmp_path / "run_stats.csv") if r["Name"] == "/v1/chat/completions")
    assert chat["Request Count"] == "41"
