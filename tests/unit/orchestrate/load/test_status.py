"""orchestrate/load/status.py: one rule for how a variant's, a step's and a probe's load ended."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrate.load.status import load_status
from orchestrate.server.liveness import DIED, LOST


@pytest.mark.parametrize("exited, down, sent, expected", [
    (True, None, True, "crashed"),  # an exit outranks everything
    (True, LOST, True, "crashed"),
    (False, DIED, True, "crashed"),
    (False, LOST, True, "server_lost"),
    (False, LOST, False, "server_lost"),  # lost before a request: not "sent nothing"
    (False, "num_prompts", True, "completed"),
    (False, None, True, "completed"),
])
def test_the_servers_end_outranks_the_records(tmp_path: Path, exited: bool, down: str | None, sent: bool,
                                              expected: str) -> None:
    records = tmp_path / "requests.jsonl"
    if sent:
        records.write_text("{}\n")
    assert load_status(exited, down, records, tmp_path / "locust.log") == (expected, None)


def test_a_load_that_sent_nothing_is_an_error_naming_locusts_log(tmp_path: Path) -> None:
    (tmp_path / "requests.jsonl").write_text("")
    status, error = load_status(False, None, tmp_path / "requests.jsonl", tmp_path / "locust.log")
    assert status == "error" and error == f"locust sent no request; see {tmp_path / 'locust.log'}"
    assert load_status(False, None, tmp_path / "absent.jsonl", tmp_path / "locust.log")[0] == "error"
