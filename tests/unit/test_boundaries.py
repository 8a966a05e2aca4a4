"""The architecture's boundaries, checked: what each side may import, and the types (mypy)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

FORBIDDEN_ON_WORKERS = ("orchestrate", "pandas", "yaml", "docker", "numpy", "xllamacpp", "gguf")


def test_locust_side_stands_alone() -> None:
    """A worker host runs only locustfiles/: it must not pull in the orchestrator or its deps."""
    code = ("import sys, importlib; importlib.import_module('locustfiles.locustfile');"
            f"bad = [m for m in sys.modules if m.split('.')[0] in {FORBIDDEN_ON_WORKERS!r}];"
            "print(','.join(sorted(bad)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"locustfiles imported: {proc.stdout.strip()}"


def test_orchestrator_never_imports_locust() -> None:
    """Locust monkey-patches ssl at import; the orchestrator runs it as a process instead."""
    code = ("import sys, orchestrate.cli, orchestrate.runloop, orchestrate.report.aggregates.headline;"
            "print('locust' in sys.modules or 'gevent' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_the_linter_is_clean() -> None:
    """ruff (pyproject.toml): imports sorted, none unused or repeated, no undefined or unused names."""
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "orchestrate", "locustfiles", "tests"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy", "locustfiles", "orchestrate"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


RUN_STAGE = ("orchestrate.server", "orchestrate.load", "orchestrate.runloop")
"""What ``tokenswarm report`` and ``compare`` must never import: they rebuild results from files alone."""


def test_report_compare_and_export_run_without_the_run_stage(tmp_path: Path) -> None:
    """With the server and load stages and the pipeline unimportable, ``report``, ``compare`` and ``export`` still
    work on a run."""
    import json
    from dataclasses import asdict

    from locustfiles.records import RequestRecord
    from orchestrate.results import VariantPaths
    run = tmp_path / "20260101T000000Z-demo"
    for name in ("a", "b"):
        paths = VariantPaths.create(run, name)
        paths.server_json.write_text(json.dumps({"status": "completed"}))
        paths.summary_json.write_text(json.dumps({"scenario": "demo", "status": "completed", "planned_prompts": 2}))
        paths.records.write_text("".join(json.dumps(asdict(RequestRecord(
            request_id=f"local-{i}", prompt_index=i, worker="local", send_ts=1000.0 + i, ttft_ms=100.0,
            e2e_ms=1000.0, tpot_ms=100.0, output_tokens=10))) + "\n" for i in range(2)))
    code = ("import sys\n"
            f"for name in {RUN_STAGE!r}: sys.modules[name] = None  # importing it raises ImportError\n"
            "from orchestrate.cli import main\n"
            f"assert main(['report', {str(run)!r}]) == 0\n"
            f"assert main(['compare', {str(run)!r}]) == 0\n"
            f"assert main(['export', {str(run)!r}]) == 0\n"
            "print('loaded:', sorted(m for m in sys.modules if m.startswith(('orchestrate.server.', 'orchestrate.load.'))))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "loaded: []" in proc.stdout
    assert json.loads(VariantPaths(run / "a").summary_json.read_text())["tokens"]["output"] == 20
    assert (run / "compare.md").is_file() and (run / "a" / "requests.parquet").is_file()


MAX_MODULE_LINES = 400


def test_no_module_is_over_400_lines() -> None:
    """A module past a few hundred lines holds more than one job: split it by what it does."""
    long = {str(path.relative_to(ROOT)): n for package in ("orchestrate", "locustfiles")
            for path in sorted((ROOT / package).rglob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}
