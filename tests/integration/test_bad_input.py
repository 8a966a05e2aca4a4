"""Bad input to `tokenswarm run`: one line, exit 2 before any server starts, or a variant `error`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import write_scenario

pytestmark = pytest.mark.integration


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrate.cli", *args], capture_output=True, text=True,
                          timeout=120)


def test_a_missing_dataset_is_one_line_before_any_server_starts(tmp_path: Path) -> None:
    proc = cli("run", str(write_scenario(tmp_path)), "--dataset", str(tmp_path / "nope.json"),
               "--results-dir", str(tmp_path / "results"))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert f"load.dataset: {tmp_path / 'nope.json'} does not exist" in proc.stderr
    assert not (tmp_path / "results").exists()


def test_an_unwritable_results_folder_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    proc = cli("run", str(write_scenario(tmp_path)), "--results-dir", str(blocker / "results"))
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0
    assert "--results-dir: cannot write results under" in proc.stderr


@pytest.mark.parametrize("content, message", [
    ('[{"id": "a", "conversations": [}]', "not valid JSON: Expecting value at line 1 column 32 (byte offset 31)"),
    ('[{"id": "a", "conversations": []}, {"id": "b", "conv',
     "the file ends inside entry 1 (byte 52): it looks truncated (an interrupted download?); 1 complete "
     "conversation before it; pass --allow-truncated (load.allow_truncated: true) to use them"),
])
def test_a_bad_dataset_is_one_line_before_any_server_starts(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    scenario = write_scenario(tmp_path, load={"dataset": str(bad)}, variants=[{"name": "a"}, {"name": "b"}])
    proc = cli("run", str(scenario), "--results-dir", str(tmp_path / "results"))
    assert proc.returncode == 2 and proc.stderr == f"tokenswarm: error: {bad}: {message}\n"  # once, not per variant
    assert not (tmp_path / "results").exists() and "starting" not in proc.stdout  # no server was started


@pytest.mark.parametrize("url, reason", [
    ("http://127.0.0.1:9", "cannot connect"),                       # refused: nothing listens on port 9
    ("http://no-such-host.invalid:8080", "cannot connect"),         # DNS failure
])
def test_an_unreachable_url_is_one_line_at_once(tmp_path: Path, url: str, reason: str) -> None:
    """Bad input, exit 2: before a results folder is made, as for a bad dataset."""
    proc = cli("run", str(write_scenario(tmp_path)), "--url", url, "--results-dir", str(tmp_path / "results"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith(f"tokenswarm: error: --url {url}: {reason}") and proc.stderr.count("\n") == 1
    assert not (tmp_path / "results").exists()
