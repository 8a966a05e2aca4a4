"""Locust's ``--csv`` files rewritten from the final stats when Locust shuts down.

Stage: load → records. Locust's CSV writer rewrites ``_stats.csv`` every second but never at shutdown,
so the last second's requests were missing from it (59 of 64 chat requests in a run whose
``--json-file`` had all 64). At the ``quit`` event (after the runner has stopped and ``--json-file`` is
written, before Locust closes its files) the stats, failures and exceptions files are written again from
the final stats, each to a temp file renamed over the old one: Locust's still-open handle then flushes
into the replaced file, not into ours. Writing the JSON file resets every entry
(``get_stripped_report``), so the entries are first read back from it.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable
from typing import Any

from locust.env import Environment
from locust.runners import WorkerRunner
from locust.stats import PERCENTILES_TO_REPORT, StatsCSV, StatsEntry


def _replace(path: str, write: Callable[[Any], None]) -> None:
    tmp = f"{path}.final.tmp"
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        write(csv.writer(f))
    os.replace(tmp, path)


def restore_entries(environment: Environment, stats_json: str) -> None:
    """Put back the entries that saving ``stats_json`` reset (JSON made their int keys strings)."""
    with open(stats_json, encoding="utf-8") as f:
        rows = json.load(f)
    stats = environment.stats
    for row in rows:
        for key in ("response_times", "num_reqs_per_sec", "num_fail_per_sec"):
            row[key] = {int(float(k)): v for k, v in (row.get(key) or {}).items()}
        stats.entries[(row["name"], row["method"])] = StatsEntry.unserialize(row, stats)


def rewrite_csv_files(environment: Environment, prefix: str) -> None:
    """``PREFIX_stats.csv``, ``_failures.csv`` and ``_exceptions.csv`` from the final stats."""
    stats_csv = StatsCSV(environment, PERCENTILES_TO_REPORT)
    _replace(f"{prefix}_stats.csv", stats_csv.requests_csv)
    _replace(f"{prefix}_failures.csv", stats_csv.failures_csv)
    _replace(f"{prefix}_exceptions.csv", stats_csv.exceptions_csv)


def install(environment: Environment) -> None:
    """Rewrite the CSV files at ``quit`` on the process that writes them (not on a worker), when
    Locust also writes ``--json-file`` (``tokenswarm run`` always asks for both)."""
    def on_quit(**_kw: Any) -> None:
        opts = environment.parsed_options
        prefix, stats_json = getattr(opts, "csv_prefix", None), getattr(opts, "json_file", None)
        if prefix and stats_json and not isinstance(environment.runner, WorkerRunner):
            try:
                restore_entries(environment, f"{stats_json}.json")
                rewrite_csv_files(environment, prefix)
            except (OSError, ValueError, KeyError):  # a full disk, a torn JSON: Locust's own last write stays
                pass

    environment.events.quit.add_listener(on_quit)
