"""locustfiles/records.py: a ``requests.jsonl`` line says exactly what the record held, with or without orjson.

The records file is the contract between the Locust side and the report, so every field must come back
from the file as it went in: floats to the last bit, ``None`` as ``null``, the chunk offsets in order. The
file is written as a run writes it (``LlmRun.open_records``, one ``to_json`` line per record) and read
back with a second handle while it is still open, as the orchestrator's live view does.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from pathlib import Path

import pytest

from locustfiles import records
from locustfiles.records import CANCELLED, ERROR, OK, RequestRecord
from locustfiles.runstate import LlmRun


def full_record(i: int = 0) -> RequestRecord:
    """A record with every field set to a value that is not its default (floats that do not print short)."""
    return RequestRecord(
        request_id=f"w1-{i}", prompt_index=7 + i, worker="w1", send_ts=1_700_000_000.123456 + i / 3,
        status=OK, error_class="stream_cut", error_detail="RemoteDisconnected: ü \"quoted\"\nnew line",
        http_status=200, ttft_ms=0.1 + 0.2, e2e_ms=1234.56789012345, tpot_ms=1 / 3,
        chunk_offsets_ms=[0.1 + 0.2, 12.5, 12.5, 1e-7, 9_999_999.000001], n_chunks=5, connect_ms=0.0421,
        reconnect=True, refused_retries=3, bytes_received=4096, tokens_per_chunk=2.5, max_tokens=256,
        expected_prompt_tokens=120, prompt_tokens=121, cached_tokens=64, prefill_tokens=57, output_tokens=10,
        output_tokens_source="usage", finish_reason="length", prompt_ms=12.25, predicted_ms=88.125,
        draft_tokens=16, draft_accepted=9, scheduled_ts=1_700_000_000.1 + i, send_delay_ms=0.023,
        ttft_from_schedule_ms=0.323, e2e_from_schedule_ms=1234.6, conversation="conv-9", turn=2)


@pytest.fixture(params=["orjson", "json"])
def writer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways a record is written: orjson where installed, the standard library on a bare worker host."""
    if request.param == "json":
        monkeypatch.setattr(records, "_orjson_dumps", None)
    else:
        assert records._orjson_dumps is not None, "orjson is a dependency of the project"
    return str(request.param)


def test_every_field_survives_a_line_exactly(writer: str) -> None:
    record = full_record()
    line = record.to_json()
    assert "\n" not in line  # one record, one line, whatever the error detail holds
    back = RequestRecord.from_dict(json.loads(line))
    assert back == record
    assert back.ttft_ms == 0.1 + 0.2 and back.ttft_ms != 0.3  # the shortest exact form, not a rounded one
    assert back.chunk_offsets_ms == [0.1 + 0.2, 12.5, 12.5, 1e-7, 9_999_999.000001]
    assert set(json.loads(line)) == {f.name for f in fields(RequestRecord)}  # every field named, nothing else


def test_orjson_and_the_standard_library_write_the_same_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker without orjson and a master with it write records the report reads the same way."""
    record = full_record(3)
    fast = json.loads(record.to_json())
    monkeypatch.setattr(records, "_orjson_dumps", None)
    slow = json.loads(record.to_json())
    assert fast == slow == asdict(record)


def test_unset_fields_are_null_and_defaults_come_back(writer: str) -> None:
    record = RequestRecord(request_id="local-1", prompt_index=0, worker="local", send_ts=1.5)
    data = json.loads(record.to_json())
    assert data["status"] == OK and data["ttft_ms"] is None and data["chunk_offsets_ms"] == []
    assert data["reconnect"] is False and data["refused_retries"] == 0
    assert RequestRecord.from_dict(data) == record


def test_a_record_of_an_older_or_newer_schema_is_refused_not_guessed() -> None:
    data = json.loads(full_record().to_json())
    with pytest.raises(TypeError):
        RequestRecord.from_dict({**data, "unknown_field": 1})
    del data["send_ts"]
    with pytest.raises(TypeError):
        RequestRecord.from_dict(data)


def test_records_are_on_disk_line_by_line_while_the_file_is_open(tmp_path: Path, writer: str) -> None:
    """The run's records file is line-buffered: a record written is readable by another process at once,
    so a crash (or a kill) loses at most the record being written."""
    path = tmp_path / "results" / "v" / "requests.jsonl"  # the folders are made on open
    run = LlmRun(environment=None)  # type: ignore[arg-type]
    run.open_records(str(path))
    assert run.records_file is not None
    written = [full_record(i) for i in range(3)] + [
        RequestRecord(request_id="w1-9", prompt_index=1, worker="w1", send_ts=2.0, status=ERROR,
                      error_class="http_500", http_status=500),
        RequestRecord(request_id="w1-10", prompt_index=2, worker="w1", send_ts=3.0, status=CANCELLED,
                      error_class="cancelled", chunk_offsets_ms=[5.0])]
    for n, record in enumerate(written, 1):
        run.records_file.write(record.to_json() + "\n")
        with open(path, encoding="utf-8") as reader:  # another handle, no flush asked for
            lines = reader.read().splitlines()
        assert len(lines) == n
        assert RequestRecord.from_dict(json.loads(lines[-1])) == record
    run.close_records()
    assert run.records_file is None
    read = [RequestRecord.from_dict(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]
    assert read == written


def test_a_records_file_is_appended_to_never_truncated(tmp_path: Path) -> None:
    """A second open (a resumed or repeated process) keeps the lines already there."""
    path = tmp_path / "requests.jsonl"
    for i in range(2):
        run = LlmRun(environment=None)  # type: ignore[arg-type]
        run.open_records(str(path))
        assert run.records_file is not None
        run.records_file.write(full_record(i).to_json() + "\n")
        run.close_records()
    ids = [json.loads(line)["request_id"] for line in path.read_text(encoding="utf-8").splitlines()]
    assert ids == ["w1-0", "w1-1"]
