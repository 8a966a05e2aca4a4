"""Trace files → rows of (time, input length, output length, prefix blocks or text), whatever the format.

Stage: dataset (before any server starts: ``prompts.check_datasets`` reads every trace once, so a bad row is a
one-line ``FILE:LINE`` error and no server is started for it). Four formats, each with its real column names
and time unit:

- **Mooncake** JSONL (``timestamp`` ms from the trace start, ``input_length``, ``output_length``, ``hash_ids``:
  one id per block of ``block_tokens``; equal ids at one position are equal content);
- the **Azure** LLM inference traces (CSV: ``TIMESTAMP`` a date-time, ``ContextTokens``, ``GeneratedTokens``);
- **BurstGPT** (CSV: ``Timestamp`` seconds, ``Model``, ``Request tokens``, ``Response tokens``, ``Total tokens``,
  ``Log Type``; its failed requests have 0 response tokens and are skipped, counted);
- **tokenswarm** JSONL, a user's own logs with their text: ``timestamp`` (ms), ``messages`` or ``prompt``,
  ``max_tokens``, and optionally ``session_id`` and ``delay_ms`` (``docs/scenarios.md`` has an example).

Rows are returned in time order, times in seconds after the first row's.
"""

from __future__ import annotations

import csv
import functools
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from orchestrate.errors import DatasetError

SAMPLE = "mooncake-sample"
"""The trace slice shipped with tokenswarm (the first 1,000 rows of Mooncake's conversation trace, Apache-2.0)."""
SAMPLE_FILE = Path(__file__).with_name("data") / "mooncake-conversation-first1000.jsonl"
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
BURSTGPT_COLUMNS = ("Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type")


@dataclass(frozen=True)
class TraceRow:
    """One request of a trace."""

    line: int
    """Its line in the file (1-based), for messages."""
    at_s: float
    """Seconds after the trace's first row."""
    output_tokens: int
    """The reply's length: the request's ``max_tokens``."""
    input_tokens: int | None = None
    """The prompt's length in tokens; None for a row that carries its text (``messages``)."""
    hash_ids: tuple[int, ...] = ()
    """Mooncake: the prompt's blocks; a shared leading run of ids is a shared prefix."""
    messages: tuple[dict[str, str], ...] = ()
    """tokenswarm JSONL: the chat as logged."""
    session_id: str | None = None
    """tokenswarm JSONL: rows of one session are turns of one conversation."""
    delay_ms: float | None = None
    """tokenswarm JSONL: a session's turn goes this long after the previous turn's reply ended."""


@dataclass(frozen=True)
class TraceFile:
    """A trace read in full: its rows in time order, and what was skipped."""

    path: Path
    format: str
    rows: tuple[TraceRow, ...]
    skipped: dict[str, int] = field(default_factory=dict)
    """Rows left out and why: ``failed`` (BurstGPT's 0-token responses), ``other_model`` (the ``model`` filter)."""


def resolve_trace(path: str) -> Path:
    """``mooncake-sample`` is the shipped slice; anything else a file path."""
    return SAMPLE_FILE if path == SAMPLE else Path(path).expanduser()


def read_trace(path: str, fmt: str | None = None, model: str | None = None) -> TraceFile:
    """Every row of a trace file, validated; ``DatasetError`` names ``FILE:LINE`` and the field. Read once per
    process while the file is unchanged (the check before any server starts, each variant and each search probe
    share it), as ShareGPT files are."""
    file = resolve_trace(path)
    if not file.is_file():
        raise DatasetError(f"load.trace.path: {file} does not exist (or is not a file)")
    stat = file.stat()
    return _read(file.resolve(), (stat.st_mtime_ns, stat.st_size), fmt, model)


@functools.lru_cache(maxsize=8)
def _read(file: Path, stamp: tuple[int, int], fmt: str | None, model: str | None) -> TraceFile:
    """``read_trace`` of a file as it is at ``stamp`` (its mtime and size: a changed file is read again)."""
    try:
        with file.open(encoding="utf-8", newline="") as handle:
            fmt = fmt or detect_format(file, handle.readline())
            handle.seek(0)
            if fmt in ("mooncake", "tokenswarm"):
                rows, skipped = list(_json_rows(file, handle, fmt)), dict[str, int]()
            else:
                rows, skipped = _csv_rows(file, handle, fmt, model)
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise DatasetError(f"{file}: cannot read ({exc.strerror})") from None
    if not rows:
        raise DatasetError(f"{file}: no requests" + (f" (skipped: {_counts(skipped)})" if skipped else ""))
    rows.sort(key=lambda row: row.at_s)  # stable: rows sharing a time keep their order
    first = rows[0].at_s
    return TraceFile(file, fmt, tuple(replace(row, at_s=row.at_s - first) for row in rows), skipped)


def detect_format(path: Path, first_line: str) -> str:
    """The format from the first line: a JSON object's keys or a CSV header's columns."""
    text = first_line.strip().lstrip("\ufeff")
    if text.startswith("{"):
        try:
            keys = set(json.loads(text))
        except (json.JSONDecodeError, TypeError):
            raise DatasetError(f"{path}:1: not a JSON object, and no CSV header either") from None
        if "input_length" in keys or "hash_ids" in keys:
            return "mooncake"
        if "messages" in keys or "prompt" in keys:
            return "tokenswarm"
        raise DatasetError(f"{path}:1: a JSON line with neither Mooncake's input_length/hash_ids nor "
                           f"tokenswarm's messages/prompt; give load.trace.format")
    columns = {c.strip() for c in next(csv.reader([text]), [])}
    if set(AZURE_COLUMNS) <= columns:
        return "azure"
    if {"Timestamp", "Request tokens", "Response tokens"} <= columns:
        return "burstgpt"
    raise DatasetError(f"{path}:1: cannot tell the trace's format (Mooncake or tokenswarm JSONL, an Azure CSV with "
                       f"{', '.join(AZURE_COLUMNS)}, a BurstGPT CSV with {', '.join(BURSTGPT_COLUMNS[:4])}); "
                       "give load.trace.format")


def _counts(skipped: dict[str, int]) -> str:
    return ", ".join(f"{why} {n}" for why, n in skipped.items())


def _whole(value: Any, where: str, lowest: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < lowest:
        raise ValueError(f"{where} must be a whole number >= {lowest}, got {value!r}")
    return value


def _time(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{where} must be a number >= 0, got {value!r}")
    return float(value)


def _json_rows(path: Path, handle: Any, fmt: str) -> Iterator[TraceRow]:
    for n, line in enumerate(handle, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError(f"must be a JSON object, got {type(obj).__name__}")
            yield _mooncake_row(n, obj) if fmt == "mooncake" else _own_row(n, obj)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{n}: not valid JSON: {exc.msg} at column {exc.colno}") from None
        except ValueError as exc:
            raise DatasetError(f"{path}:{n}: {exc}") from None


def _mooncake_row(n: int, obj: dict[str, Any]) -> TraceRow:
    ids = obj.get("hash_ids", [])
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise ValueError(f"hash_ids must be a list of integers, got {ids!r}"[:200])
    return TraceRow(n, _time(obj.get("timestamp"), "timestamp") / 1000.0,
                    _whole(obj.get("output_length"), "output_length", 1),
                    _whole(obj.get("input_length"), "input_length", 1), tuple(ids))


def _own_row(n: int, obj: dict[str, Any]) -> TraceRow:
    if "messages" in obj:
        messages = obj["messages"]
        if not (isinstance(messages, list) and messages and all(
                isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                for m in messages)):
            raise ValueError("messages must be a non-empty list of {role, content} with string values")
        chat = tuple({"role": m["role"], "content": m["content"]} for m in messages)
    elif isinstance(obj.get("prompt"), str) and obj["prompt"]:
        chat = ({"role": "user", "content": obj["prompt"]},)
    else:
        raise ValueError("needs messages (a list of {role, content}) or prompt (a string)")
    session = obj.get("session_id")
    if session is not None and (isinstance(session, bool) or not isinstance(session, (str, int))):
        raise ValueError(f"session_id must be a string or a number, got {session!r}")
    if session is not None and (len(chat) != 1 or chat[0]["role"] != "user"):
        raise ValueError("a session's turn is one user message (prompt, or messages holding one user message): "
                         "the history is the session's earlier turns and the server's replies to them")
    delay = obj.get("delay_ms")
    return TraceRow(n, _time(obj.get("timestamp"), "timestamp") / 1000.0, _whole(obj.get("max_tokens"), "max_tokens", 1),
                    messages=chat, session_id=None if session is None else str(session),
                    delay_ms=None if delay is None else _time(delay, "delay_ms"))


def _csv_rows(path: Path, handle: Any, fmt: str, model: str | None) -> tuple[list[TraceRow], dict[str, int]]:
    reader = csv.DictReader(handle)
    wanted = AZURE_COLUMNS if fmt == "azure" else BURSTGPT_COLUMNS[:4]
    header = [c.strip().lstrip("\ufeff") for c in reader.fieldnames or []]
    missing = [c for c in wanted if c not in header]
    if missing:
        raise DatasetError(f"{path}:1: a {fmt} trace needs the columns {', '.join(wanted)}; missing {', '.join(missing)}")
    reader.fieldnames = header
    rows: list[TraceRow] = []
    skipped = {"failed": 0, "other_model": 0} if fmt == "burstgpt" else {}
    origin: datetime | None = None
    for raw in reader:
        n = reader.line_num
        try:
            if fmt == "azure":
                stamp = datetime.fromisoformat(str(raw["TIMESTAMP"]).strip())
                origin = origin or stamp  # times may go back before it: read_trace starts at the earliest
                rows.append(TraceRow(n, (stamp - origin).total_seconds(), _int_cell(raw, "GeneratedTokens", 1),
                                     _int_cell(raw, "ContextTokens", 1)))
                continue
            if model is not None and (raw.get("Model") or "").strip() != model:
                skipped["other_model"] += 1
                continue
            response = _int_cell(raw, "Response tokens", 0)
            if response == 0:  # BurstGPT logs a failed request with no response
                skipped["failed"] += 1
                continue
            rows.append(TraceRow(n, _time(float(raw["Timestamp"]), "Timestamp"), response,
                                 _int_cell(raw, "Request tokens", 1)))
        except (ValueError, TypeError) as exc:
            raise DatasetError(f"{path}:{n}: {exc}") from None
    return rows, {k: v for k, v in skipped.items() if v}


def _int_cell(raw: dict[str, Any], column: str, lowest: int) -> int:
    text = (raw.get(column) or "").strip()
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{column} must be a whole number >= {lowest}, got {text!r}") from None
    return _whole(value, column, lowest)
