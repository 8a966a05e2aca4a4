"""API keys: from a variable or a file, sent as Bearer by pre-flight, sampler and users, never written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrate.server.launchers.embedded import EmbeddedLauncher
from tests.helpers import write_scenario

pytestmark = pytest.mark.integration

KEY = "tsk-test-6f1d2c"


def run(tmp_path: Path, url: str, env: dict[str, str], *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    results = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "orchestrate.cli", "run", str(write_scenario(tmp_path)),
                           "--url", url, "--num-prompts", "6", "--users", "2", "--results-dir", str(results), *args],
                          capture_output=True, text=True, timeout=120, env=env)
    return proc, next(results.glob("*/v"))


@pytest.mark.parametrize("how", ["env", "file"])
def test_a_key_is_sent_everywhere_and_never_written(tmp_path: Path, embedded: Callable[..., EmbeddedLauncher],
                                                     how: str) -> None:
    server = embedded(api_keys=(KEY,))
    env = {k: v for k, v in os.environ.items() if k != "TOKENSWARM_API_KEY"}
    args: tuple[str, ...] = ()
    if how == "env":
        env["TOKENSWARM_API_KEY"] = KEY
    else:
        key_file = tmp_path / "key"
        key_file.write_text(KEY + "\n")
        args = ("--api-key-file", str(key_file))
    proc, variant = run(tmp_path, server.url or "", env, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((variant / "summary.json").read_text())
    assert summary["requests"]["completed"] == 6
    assert summary["sampling"]["token_counter"] == "server_tokenize"  # /tokenize answered: the key was sent
    assert summary["server_metrics"]["available"] is True
    for path in variant.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_no_key_is_one_clear_line(tmp_path: Path, embedded: Callable[..., EmbeddedLauncher]) -> None:
    server = embedded(api_keys=(KEY,))
    env = {k: v for k, v in os.environ.items() if k != "TOKENSWARM_API_KEY"}
    proc, variant = run(tmp_path, server.url or "", env)
    assert proc.returncode == 1
    summary = json.loads((variant / "summary.json").read_text())
    assert summary["status"] == "failed_to_load"
    assert "401 Unauthorized" in summary["error"] and "TOKENSWARM_API_KEY" in summary["error"]
