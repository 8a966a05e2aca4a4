"""orchestrate/load/traces/files.py: each trace format read from a file shaped like the real one (its real column
names and time units), the format told from the content, bad rows refused by FILE:LINE."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrate.errors import DatasetError
from orchestrate.load.traces.files import SAMPLE, read_trace


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_the_shipped_mooncake_slice_reads_as_its_readme_says() -> None:
    trace = read_trace(SAMPLE)
    assert trace.format == "mooncake" and len(trace.rows) == 1000
    assert trace.rows[-1].at_s == 330.0  # ms → s
    ids = [h for row in trace.rows for h in row.hash_ids]
    seen_before = len(ids) - len(set(ids))
    assert round(100 * seen_before / len(ids)) == 21  # "21 % of their 512-token blocks seen before"
    assert all(row.hash_ids[0] == 0 for row in trace.rows)  # the common system prompt


def test_azure_csv_times_are_date_times_relative_to_the_earliest(tmp_path: Path) -> None:
    path = write(tmp_path, "AzureLLMInferenceTrace_conv.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                 "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n"
                 "2023-11-16 18:15:46.1805900,879,18\n")
    trace = read_trace(path)
    assert trace.format == "azure"
    assert [(round(r.at_s, 4), r.input_tokens, r.output_tokens) for r in trace.rows] == [
        (0.0, 879, 18), (0.5, 374, 44), (4.8146, 396, 109)]


def test_burstgpt_skips_failed_rows_and_filters_by_model(tmp_path: Path) -> None:
    path = write(tmp_path, "BurstGPT_1.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                 "5,ChatGPT,472,18,490,Conversation log\n45,ChatGPT,1087,0,1087,Conversation log\n"
                 "118,GPT-4,417,276,693,Conversation log\n125,ChatGPT,1360,191,1551,API log\n")
    trace = read_trace(path)
    assert trace.format == "burstgpt" and trace.skipped == {"failed": 1}
    assert [(r.at_s, r.input_tokens, r.output_tokens) for r in trace.rows] == [(0, 472, 18), (113, 417, 276),
                                                                              (120, 1360, 191)]
    only = read_trace(path, model="ChatGPT")
    assert len(only.rows) == 2 and only.skipped == {"failed": 1, "other_model": 1}


def test_tokenswarm_jsonl_carries_text_sessions_and_delays(tmp_path: Path) -> None:
    path = write(tmp_path, "mine.jsonl",
                 '{"timestamp": 0, "prompt": "Hello", "max_tokens": 16}\n'
                 '{"timestamp": 1500, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8, '
                 '"session_id": "a", "delay_ms": 2000}\n')
    trace = read_trace(path)
    assert trace.format == "tokenswarm"
    first, second = trace.rows
    assert first.messages == ({"role": "user", "content": "Hello"},) and first.input_tokens is None
    assert (second.at_s, second.session_id, second.delay_ms, second.output_tokens) == (1.5, "a", 2000, 8)


@pytest.mark.parametrize(("text", "message"), [
    ('{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1]}\n'
     '{"timestamp": 5, "input_length": -1, "output_length": 5, "hash_ids": [2]}\n',
     "t.jsonl:2: input_length must be a whole number >= 1, got -1"),
    ('{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1]}\n{"timestamp": 5,\n',
     "t.jsonl:2: not valid JSON"),
    ('{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": ["a"]}\n',
     "t.jsonl:1: hash_ids must be a list of integers"),
    ('{"timestamp": 0, "prompt": "x", "max_tokens": 0}\n', "t.jsonl:1: max_tokens must be a whole number >= 1"),
    ('{"timestamp": 0, "prompt": "x"}\n{"timestamp": 1, "max_tokens": 3}\n', "t.jsonl:1: max_tokens"),
    ('{"timestamp": 0, "max_tokens": 3}\n', "t.jsonl:1: a JSON line with neither"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,12,4\nyesterday,1,1\n",
     "t.jsonl:3: Invalid isoformat string"),
    ("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,ChatGPT,ten,3,13,API log\n",
     "t.jsonl:2: Request tokens must be a whole number >= 1, got 'ten'"),
    ("time,tokens\n1,2\n", "t.jsonl:1: cannot tell the trace's format"),
    ('{"timestamp": 0, "messages": [{"role": "system", "content": "x"}, {"role": "user", "content": "y"}], '
     '"max_tokens": 3, "session_id": "a"}\n', "t.jsonl:1: a session's turn is one user message"),
])
def test_a_bad_row_is_refused_by_its_line(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "t.jsonl", text)
    with pytest.raises(DatasetError) as err:
        read_trace(path)
    assert str(err.value).startswith(f"{tmp_path}/{message}")
    assert "\n" not in str(err.value)


def test_a_missing_file_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="load.trace.path: .*nope.jsonl does not exist"):
        read_trace(str(tmp_path / "nope.jsonl"))


def test_a_trace_is_read_once_until_it_changes(tmp_path: Path) -> None:
    row = '{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1]}\n'
    path = write(tmp_path, "t.jsonl", row)
    first = read_trace(path)
    assert read_trace(path) is first  # the check before the servers and each variant share one read
    Path(path).write_text(row + row.replace('"timestamp": 0', '"timestamp": 1500'))
    again = read_trace(path)
    assert again is not first and [r.at_s for r in again.rows] == [0.0, 1.5]
