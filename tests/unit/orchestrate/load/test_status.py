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


def test_a_load_whose_every_request_failed_is_failed_and_quotes_the_server(tmp_path: Path) -> None:
    from locustfiles.records import CANCELLED, ERROR, RequestRecord
    records = tmp_path / "requests.jsonl"
    lines = [RequestRecord("a", i, "w", 1.0, status=ERROR, error_class="http_500:server_error",
                           error_detail=f"boom {i}") for i in range(3)]
    lines += [RequestRecord("b", 9, "w", 1.0, status=ERROR, error_class="timeout", error_detail="slow"),
              RequestRecord("c", 10, "w", 1.0, status=CANCELLED)]
    records.write_text("".join(r.to_json() + "\n" for r in lines))
    assert load_status(False, None, records, tmp_path / "locust.log") == (
        "failed", "every request failed: 3 × http_500:server_error (the server said: boom 0), and 1 of other classes")
    records.write_text(records.read_text() + RequestRecord("d", 11, "w", 1.0).to_json() + "\n")  # one completed
    assert load_status(False, None, records, tmp_path / "locust.log") == ("completed", None)
