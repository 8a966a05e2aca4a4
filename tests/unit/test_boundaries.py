"""The architecture's boundaries, checked: what each side may import, and the types (mypy)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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
    code = ("import sys, orchestrate.cli, orchestrate.runloop, orchestrate.summarize;"
            "print('locust' in sys.modules or 'gevent' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_mypy_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy", "locustfiles", "orchestrate"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
