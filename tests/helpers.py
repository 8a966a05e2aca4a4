"""Helpers for tests that drive `tokenswarm run` as a user would: a scenario file, the CLI, the files."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrate.errors import ScenarioError
from orchestrate.scenario.parse import parse_scenario
from orchestrate.scenario.spec import Scenario

ROOT = Path(__file__).resolve().parents[1]
"""The repository's root."""
FIXTURES = ROOT / "tests" / "fixtures"
SCENARIO_PATH = Path("study.yaml")
"""The file name parsed test scenarios pretend to come from (errors start ``study.yaml:LINE``)."""


def parse_text(text: str) -> Scenario:
    """A scenario from (indented) test text, as if read from ``study.yaml``."""
    return parse_scenario(textwrap.dedent(text), SCENARIO_PATH)


def scenario_error(text: str) -> str:
    """The error ``text`` gets; fails the test unless it is one line."""
    with pytest.raises(ScenarioError) as info:
        parse_text(text)
    message = str(info.value)
    assert "\n" not in message
    return message


def write_file(tmp_path: Path, content: str | bytes, name: str = "d.json") -> Path:
    """``content`` (text as UTF-8) in ``tmp_path/name``."""
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def write_scenario(tmp_path: Path, server: dict[str, Any] | None = None, load: dict[str, Any] | None = None,
                   variants: list[dict[str, Any]] | None = None) -> Path:
    scenario = {
        "name": "t",
        "server": {"launcher": "embedded", "model": "tiny", "flags": {"parallel": 4, "threads": 1},
                   **(server or {})},
        "load": {"dataset": "synthetic:400", "users": 4, "num_prompts": 12, "max_tokens": 24, **(load or {})},
        "variants": variants or [{"name": "v"}],
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    return path


def tokenswarm_run(tmp_path: Path, scenario: Path, *args: str,
                   timeout_s: float = 240) -> tuple[subprocess.CompletedProcess[str], Path]:
    results = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "orchestrate.cli", "run", str(scenario),
                           "--results-dir", str(results), *args],
                          capture_output=True, text=True, timeout=timeout_s)
    runs = sorted(results.iterdir()) if results.exists() else []
    assert len(runs) == 1, proc.stdout + proc.stderr
    return proc, runs[0]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


REBUILT_BLOCKS = ("users_over_time", "ui_steps", "capacity", "steady_state", "throughput", "latency_ms", "requests",
                  "tokens", "goodput", "energy")
"""Besides every ``RunFacts`` field: the blocks a rebuild computes again from the files, which must come out equal."""


def undocumented_keys(summary: dict[str, Any]) -> list[str]:
    """Every key of a ``summary.json``, at every depth (``[]`` a list's items, ``<name>`` a mapping's keys), that the
    results page (``docs/results.md``, generated from the summary's types) has no row for."""
    from orchestrate.report.jsontypes import paths_of
    from orchestrate.report.resultsdoc import documented_paths
    from orchestrate.report.schema import Summary
    page = (ROOT / "docs" / "results.md").read_text()
    return sorted(paths_of(Summary, summary) - documented_paths(page))


def assert_report_rebuilds_every_key(run: Path, copy: Path) -> list[Path]:
    """``tokenswarm report`` on a copy of ``run`` gives every summary (variants, steps, probes) the same keys and
    the same facts and figures; returns the summaries compared."""
    import shutil
    from dataclasses import fields

    from orchestrate.report.schema.summary import RunFacts
    kept = tuple(f.name for f in fields(RunFacts))
    shutil.copytree(run, copy)
    proc = subprocess.run([sys.executable, "-m", "orchestrate.cli", "report", str(copy)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    compared = []
    for before_path in sorted(run.rglob("summary.json")):
        if "partial" in before_path.relative_to(run).parts or before_path.parent.name == "warmup":
            continue
        before, after = (json.loads(p.read_text()) for p in (before_path, copy / before_path.relative_to(run)))
        where = before_path.relative_to(run)
        assert set(after) == set(before), (where, set(before) ^ set(after))
        assert undocumented_keys(before) == [], where
        for key in kept + REBUILT_BLOCKS:
            assert after.get(key) == before.get(key), (where, key)
        compared.append(where)
    return compared
