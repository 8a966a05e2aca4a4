"""The process launcher with stand-in `llama-server`s that die at load the ways real ones did.

`tests/fixtures/llama-server-fattn-abort` prints `ggml-cuda/fattn.cu:110: fatal error` and aborts
when a draft model meets flash attention on/auto, and otherwise serves the tiny model for real;
`tests/fixtures/llama-server-sigill` dies of SIGILL after llama.cpp's last lines, as a build with
instructions the host will not run did (issue 20).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import read_jsonl, tokenswarm_run, write_scenario

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
STAND_IN = str(FIXTURES / "llama-server-fattn-abort")


def test_abort_at_load_is_diagnosed_the_next_variant_runs_and_the_retry_rule_works(tmp_path: Path) -> None:
    scenario = write_scenario(
        tmp_path,
        server={"launcher": "process", "binary": STAND_IN, "draft_model": "tiny-draft",
                "flags": {"parallel": 2, "flash-attn": "on", "spec-draft-n-max": 4, "n-gpu-layers": 99}},
        load={"users": 2, "num_prompts": 6},
        variants=[{"name": "mtp-fa-on"},
                  {"name": "base-fa-on", "server": {"draft_model": None}},
                  {"name": "mtp-retry", "on_load_failure": {"retry_with": {"flash-attn": "off"}}}])
    proc, run = tokenswarm_run(tmp_path, scenario)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # one variant did not complete

    failed = json.loads((run / "mtp-fa-on" / "summary.json").read_text())
    assert failed["status"] == "failed_to_load"
    assert failed["server"]["cause"] == "/app/ggml/src/ggml-cuda/fattn.cu:110: fatal error"
    assert "flash-attn: off" in failed["server"]["hint"]
    assert failed["server"]["exit_code"] == -6  # SIGABRT
    assert any("fatal error" in line for line in failed["server"]["log_tail"])
    assert "fattn.cu:110: fatal error" in (run / "mtp-fa-on" / "summary.md").read_text()

    base = json.loads((run / "base-fa-on" / "summary.json").read_text())
    assert base["status"] == "completed" and base["requests"]["completed"] == 6
    assert base["speculative"] is None

    retried = json.loads((run / "mtp-retry" / "summary.json").read_text())
    assert retried["status"] == "completed" and retried["retried"] is True
    assert retried["requests"]["completed"] == 6
    assert retried["speculative"]["draft_tokens"] > 0
    assert retried["settings"]["server.flags.flash-attn"] == "off"
    first = retried["first_attempt"]
    assert first["status"] == "failed_to_load" and "fattn.cu:110" in first["cause"]
    assert first["settings"]["server.flags.flash-attn"] == "on"
    assert "fatal error" in (run / "mtp-retry" / first["log"]).read_text()
    assert any("retry" in note for note in retried["notes"])
    argv = retried["server"]["launcher"]["argv"]
    assert argv[0] == STAND_IN and "--model-draft" in argv and argv[argv.index("--flash-attn") + 1] == "off"
    assert len(read_jsonl(run / "mtp-retry" / "requests.jsonl")) == 6


def test_a_missing_binary_is_one_line(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, server={"launcher": "process", "binary": "no-such-llama-server"})
    proc, run = tokenswarm_run(tmp_path, scenario)
    summary = json.loads((run / "v" / "summary.json").read_text())
    assert summary["status"] == "failed_to_load"
    assert "'no-such-llama-server' is not on PATH" in summary["error"]


def test_a_server_that_dies_of_an_illegal_instruction_is_named_not_its_last_line(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, server={"launcher": "process", "binary": str(FIXTURES / "llama-server-sigill")},
                              load={"users": 2, "num_prompts": 4})
    proc, run = tokenswarm_run(tmp_path, scenario)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    summary = json.loads((run / "v" / "summary.json").read_text())
    assert summary["status"] == "failed_to_load"
    server = summary["server"]
    assert server["exit_code"] == -4
    assert server["cause"] == ("the server died of an illegal instruction (SIGILL): this binary uses CPU "
                               "instructions this host cannot run; last log line: init: llama threadpool init, "
                               "n_threads = 1")
    assert "make llama-server" in server["hint"]
    assert "illegal instruction" in proc.stdout + proc.stderr
    assert "illegal instruction (SIGILL)" in (run / "v" / "summary.md").read_text()
