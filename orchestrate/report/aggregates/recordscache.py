"""``requests.jsonl``'s records kept as columns beside it, so that a report parses a million records once.

Stage: records → report. Parsing the JSON lines is most of a long run's report (12 s of 33 at a million
records), and a run's records are reported again and again (``tokenswarm report``, ``compare``, a matrix's page).
The first read leaves two files beside ``requests.jsonl``:

- ``requests.columns.parquet``: every field but the chunk offsets (integer fields as int64) and each record's
  ``chunk_count`` (−1 for a record without the field), stamped with the size and modification time of the
  ``requests.jsonl`` it holds and with the number of offsets;
- ``requests.offsets.f64``: every record's chunk offsets back to back, little-endian float64, read back with one
  read (Parquet's nested lists took three times as long to decode as the same numbers flat).

A later read of the unchanged file reads these (about 2 s at a million records, the frame built); a changed,
copied (a new modification time), half-written or unreadable pair is ignored and written anew by the next parse.
They are a cache: deleting them loses nothing. ``tokenswarm export`` writes the records for people and programs.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from orchestrate.report.aggregates.chunkcolumn import COLUMN
from orchestrate.results import file_stamp

STAMP = b"tokenswarm.source"
"""The columns' file key for the size and modification time of the ``requests.jsonl`` they hold."""
OFFSETS = b"tokenswarm.offsets"
"""The columns' file key for how many offsets ``requests.offsets.f64`` holds."""
COUNT = "chunk_count"
"""Each record's number of chunk offsets; −1 for a record without the field (a missing row)."""
FLOAT = np.dtype("<f8")


def cache_paths(path: Path) -> tuple[Path, Path]:
    """The columns and the offsets kept for ``path`` (a ``requests.jsonl``)."""
    return path.with_name(f"{path.stem}.columns.parquet"), path.with_name(f"{path.stem}.offsets.f64")


def stamp(path: Path) -> bytes | None:
    """``size:mtime_ns`` of ``path`` (``results.file_stamp``), as the columns' metadata holds it; None when it
    cannot be read."""
    found = file_stamp(path)
    return None if found is None else f"{found[1]}:{found[0]}".encode()


def read_cached(path: Path) -> tuple[pa.Table, np.ndarray, np.ndarray] | None:
    """(the records' columns but the offsets, every offset back to back, each record's count) when the kept copy
    holds ``path`` as it is now; None when there is none, or it is stale or unreadable."""
    columns, offsets = cache_paths(path)
    now = stamp(path)
    try:
        metadata = pq.read_metadata(columns).metadata or {}
        if now is None or metadata.get(STAMP) != now or offsets.stat().st_size != 8 * int(metadata[OFFSETS]):
            return None
        table = pq.read_table(columns, use_threads=False)
        values = np.fromfile(offsets, dtype=FLOAT)
    except (OSError, KeyError, ValueError, pa.ArrowException):
        return None
    counts = table.column(COUNT).to_numpy()
    if int(np.maximum(counts, 0).sum()) != values.size:
        return None
    return table.drop_columns([COUNT]), values.astype(float, copy=False), counts


class CacheWriter:
    """Writes the parsed blocks as the kept copy: into temporary files renamed into place once the whole unchanged
    file was read (``complete``); a copy that cannot be written (a read-only folder, a full disk, a fraction in an
    integer field) is simply not kept."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        self.path, self.schema, self.complete, self.count = path, schema, False, 0
        self.stamp = stamp(path)
        self.final = cache_paths(path)
        self.partial = tuple(p.with_name(f".{p.name}.{os.getpid()}") for p in self.final)
        self.columns: pq.ParquetWriter | None = None
        self.offsets = None
        if self.stamp is not None:
            with contextlib.suppress(OSError):
                self.offsets = self.partial[1].open("wb")
                self.columns = pq.ParquetWriter(self.partial[0], self.scalars)

    @property
    def scalars(self) -> pa.Schema:
        return pa.schema([f for f in self.schema if f.name != COLUMN] + [pa.field(COUNT, pa.int64())])

    def write(self, table: pa.Table) -> None:
        """One parsed block (a table of the reader's schema)."""
        if self.columns is None or self.offsets is None or not table.num_rows:
            return
        try:
            lists = table.column(COLUMN)
            counts = pc.fill_null(pc.list_value_length(lists), -1).cast(pa.int64())
            scalars = table.drop_columns([COLUMN]).append_column(COUNT, counts)
            self.columns.write_table(scalars.cast(self.scalars))  # a safe cast: a fraction raises
            for chunk in lists.chunks:
                flat = chunk.flatten().to_numpy(zero_copy_only=False).astype(FLOAT, copy=False)
                flat.tofile(self.offsets)
                self.count += flat.size
        except (OSError, pa.ArrowInvalid):
            self._abandon()

    def _abandon(self) -> None:
        with contextlib.suppress(OSError):
            if self.columns is not None:
                self.columns.close()
            if self.offsets is not None:
                self.offsets.close()
        self.columns = self.offsets = None

    def __enter__(self) -> "CacheWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        kept = self.columns is not None and self.offsets is not None and self.complete and exc[0] is None
        if kept and self.columns is not None and self.stamp is not None:
            with contextlib.suppress(OSError, pa.ArrowException):  # the stamp goes in last: a torn copy has none
                self.columns.add_key_value_metadata({STAMP: self.stamp, OFFSETS: str(self.count).encode()})
        self._abandon()
        with contextlib.suppress(OSError):
            if kept and stamp(self.path) == self.stamp:
                os.replace(self.partial[1], self.final[1])
                os.replace(self.partial[0], self.final[0])
        for partial in self.partial:
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
