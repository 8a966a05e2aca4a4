"""``requests.jsonl`` read columnar: a million records in seconds and well under 2 GB.

Stage: records → report. The file stays the line-buffered contract the Locust side writes (nothing can
lose a record). It is read in blocks by pyarrow's JSON reader against the schema of ``RequestRecord``:
numbers into float64 columns (int64 where every record has an integer, as pandas infers), text into
string columns, and every ``chunk_offsets_ms`` into one float64 buffer (``ChunkOffsetsArray``). A field
a record lacks (an older version) is missing, one the schema lacks is ignored. A block pyarrow refuses
(a torn line from a killed writer, or a value of another type) is read line by line instead: an
unparsable line is skipped, as it always was, and a value of the wrong type is missing.

Parsing is most of a report's time at a million records, so the first read leaves the records as columns
beside the file, and a later read of the unchanged file reads those (``recordscache.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from locustfiles.records import RequestRecord
from orchestrate.report.aggregates.chunkcolumn import COLUMN, ChunkOffsetsArray
from orchestrate.report.aggregates.recordscache import CacheWriter, read_cached
from orchestrate.results import file_stamp

BLOCK_BYTES = 8 << 20
"""The file is parsed this much at a time (whole lines)."""
OFFSETS = pa.list_(pa.float64())


def _arrow_type(annotation: str) -> pa.DataType:
    if "list" in annotation:
        return OFFSETS
    if annotation.startswith("bool"):
        return pa.bool_()
    return pa.string() if "str" in annotation else pa.float64()


SCHEMA = pa.schema([(f.name, _arrow_type(str(f.type))) for f in fields(RequestRecord)])
RENAMED = {"requested_max_tokens": "max_tokens"}
"""A field's name in files an older version wrote → its name now: read as the new one."""
INTEGERS = frozenset(f.name for f in fields(RequestRecord) if str(f.type).startswith("int"))
"""Read as float64 (a JSON number of any form parses), stored as int64 when no record lacks them."""
COLUMNS_SCHEMA = pa.schema([pa.field(f.name, pa.int64()) if f.name in INTEGERS else f for f in SCHEMA])
"""The records as columns (``tokenswarm export``'s ``requests.parquet``, the kept ``requests.columns.parquet``):
the reader's schema, integer fields as int64."""
_PARSE = pj.ParseOptions(explicit_schema=pa.schema([*SCHEMA, *(pa.field(old, SCHEMA.field(new).type)
                                                               for old, new in RENAMED.items())]),
                         unexpected_field_behavior="ignore")


_KEPT: list[tuple[tuple[str, int, int], pd.DataFrame]] = []
"""The last file read by ``records_of``, with its stamp."""


def records_of(path: Path) -> pd.DataFrame:
    """``read_records``, kept for the next reader of the same unchanged file: the summary reads a variant's records
    and ``report.html`` draws them, a million records parsed once, not twice (``forget_records`` lets it go).
    Readers never change the frame."""
    found = file_stamp(path)
    if found is None:
        return read_records(path)
    stamp = (str(path), *found)
    if _KEPT and _KEPT[0][0] == stamp:
        return _KEPT[0][1]
    _KEPT.clear()  # the old frame goes before the new one is read: one in memory at a time
    frame = read_records(path)
    _KEPT.append((stamp, frame))
    return frame


def forget_records() -> None:
    """Let the kept frame go (after the page that drew it is written)."""
    _KEPT.clear()


def record_tables(path: Path, block_bytes: int = BLOCK_BYTES) -> Iterator[pa.Table]:
    """The records a block at a time, each a table of ``SCHEMA`` (exports stream them: memory stays one block)."""
    return (table for table, _ in _tables(path, block_bytes))


def _tables(path: Path, block_bytes: int) -> Iterator[tuple[pa.Table, float]]:
    """Each parsed block's table with the share of the file read so far; the kept copy is written as they go."""
    size = path.stat().st_size if path.exists() else 0
    with CacheWriter(path, COLUMNS_SCHEMA) as cache:
        read = 0
        for block in _blocks(path, block_bytes):
            read += len(block)
            table = _parse(block)
            cache.write(table)
            if table.num_rows:
                yield table, read / max(size, 1)
        cache.complete = read == size


def read_records(path: Path, block_bytes: int = BLOCK_BYTES) -> pd.DataFrame:
    """The records as a frame (``chunk_offsets_ms`` columnar); an empty frame for no file or no record. Read from
    the kept copy when it holds the file as it is, else parsed (and the copy kept)."""
    cached = read_cached(path)
    if cached is not None:
        table, values, lengths = cached
        sizes = np.maximum(lengths, 0)
        return _frame(table, ChunkOffsetsArray(values, np.cumsum(sizes) - sizes, lengths))
    offsets, scalars = _Offsets(), []
    for table, share in _tables(path, block_bytes):
        offsets.add(table.column(COLUMN), share)
        scalars.append(table.drop_columns([COLUMN]))
        del table
    if not scalars:
        return pd.DataFrame()
    joined = pa.concat_tables(scalars)
    del scalars
    return _frame(joined, offsets.array())


def _frame(scalars: pa.Table, offsets: ChunkOffsetsArray) -> pd.DataFrame:
    """The frame of the records' other columns (integer fields narrowed) with the offsets in their place."""
    if not scalars.num_rows:
        return pd.DataFrame()
    frame = pa.table({name: _narrow(name, scalars.column(name)) for name in scalars.column_names}).to_pandas(
        split_blocks=True, self_destruct=True)
    frame.insert(SCHEMA.get_field_index(COLUMN), COLUMN, offsets)
    pa.default_memory_pool().release_unused()
    return frame


def _narrow(name: str, column: pa.ChunkedArray) -> pa.ChunkedArray:
    """An integer field as int64 when every record has a whole number there (pandas' inference)."""
    if name not in INTEGERS or column.null_count:
        return column
    try:
        return column.cast(pa.int64())  # a safe cast: a fraction raises
    except pa.ArrowInvalid:
        return column


class _Offsets:
    """Every record's offsets, block after block, into one float64 buffer: sized from the first block
    for the whole file (pages never written cost no memory), grown if that was short, cut to size at
    the end; never a second copy of all offsets."""

    def __init__(self) -> None:
        self.values, self.used = np.empty(0), 0
        self.lengths: list[np.ndarray] = []

    def add(self, column: pa.ChunkedArray, share: float) -> None:
        """``share``: the part of all records read once this column is (sizes the buffer at the first)."""
        for array in column.chunks:
            flat = array.flatten().to_numpy(zero_copy_only=False)
            if self.used + flat.size > self.values.size:
                estimate = int(1.25 * (self.used + flat.size) / max(share, 1e-9)) if not self.used else 0
                self.values.resize(max(2 * self.values.size, self.used + flat.size, estimate), refcheck=False)
            self.values[self.used:self.used + flat.size] = flat
            self.used += flat.size
            self.lengths.append(pc.fill_null(pc.list_value_length(array), -1).to_numpy())

    def array(self) -> ChunkOffsetsArray:
        """A record without the field is a missing row."""
        self.values.resize(self.used, refcheck=False)
        length = np.concatenate(self.lengths).astype(np.int64)
        sizes = np.maximum(length, 0)
        return ChunkOffsetsArray(self.values, np.cumsum(sizes) - sizes, length)


def _blocks(path: Path, block_bytes: int) -> Iterator[memoryview]:
    """The file in pieces of whole lines (the last may lack its newline: a torn line, or just unended),
    read into one buffer reused for every piece: each is parsed before the next is read."""
    try:
        f = path.open("rb")
    except FileNotFoundError:
        return
    buffer = bytearray(block_bytes)
    view, kept = memoryview(buffer), 0
    with f:
        while True:
            if kept == len(buffer):  # one line longer than the buffer: a larger one
                buffer = buffer + bytes(len(buffer))
                view = memoryview(buffer)
            got = f.readinto(view[kept:])
            end = kept + got
            cut = buffer.rfind(b"\n", 0, end) + 1 if got else end
            if cut:
                yield view[:cut]
            buffer[:end - cut] = buffer[cut:end]
            kept = end - cut
            if not got:
                return


def _parse(block: memoryview) -> pa.Table:
    """The block in one piece, on one thread (threads add CPU, and a report's CPU is what a shared host pays)."""
    try:
        table = pj.read_json(pa.py_buffer(block), read_options=pj.ReadOptions(use_threads=False,
                                                                              block_size=len(block)),
                             parse_options=_PARSE)
    except pa.ArrowInvalid:
        return _parse_lines(block)
    for old, new in RENAMED.items():  # an older file's name fills the new one
        merged = pc.coalesce(table.column(new), table.column(old))
        table = table.set_column(table.schema.get_field_index(new), new, merged).drop_columns([old])
    return table


def _parse_lines(block: memoryview) -> pa.Table:
    """The slow, forgiving read of a block pyarrow refused: line by line, each value checked."""
    rows = []
    for line in bytes(block).splitlines():
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    old_name = {new: old for old, new in RENAMED.items()}
    return pa.table({f.name: pa.array([_coerce(row.get(f.name, row.get(old_name.get(f.name, ""))), f.type)
                                       for row in rows], f.type) for f in SCHEMA}, schema=SCHEMA)


def _coerce(value: Any, kind: pa.DataType) -> Any:
    """``value`` as the schema's type, or None when it is not one (a boolean is not a number)."""
    def number(x: Any) -> float | None:
        return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None
    if kind == OFFSETS:
        if not isinstance(value, list):
            return None
        numbers = [number(x) for x in value]
        return None if None in numbers else numbers
    if kind == pa.string():
        return value if isinstance(value, str) else None
    if kind == pa.bool_():
        return value if isinstance(value, bool) else None
    return number(value)
