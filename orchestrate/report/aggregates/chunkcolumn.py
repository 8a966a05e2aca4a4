"""``chunk_offsets_ms`` as a pandas column without a Python list per record.

Stage: records → report. A million records carry about 64 million chunk offsets: as lists of Python
floats that is gigabytes. Here they are one float64 buffer, and each row holds only where its offsets
start and how many there are, so every frame cut from the records (a filter, a sort, a group) shares the
buffer instead of copying offsets. ``chunk_offsets`` hands any frame's offsets to the aggregates in
``chunks.py`` as flat arrays; a hand-built frame whose column holds lists works too (tests, callers
from before the columnar reader).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.extensions import ExtensionArray, ExtensionDtype, register_extension_dtype

COLUMN = "chunk_offsets_ms"
BLOCK_VALUES = 1 << 20
"""Offsets handled at once by the blockwise aggregates (8 MB of float64: their temporaries stay small)."""
_MISSING = -1
"""A row's length when the record had no such field (a version before it): NA, not an empty list."""


@dataclass(frozen=True)
class ChunkOffsets:
    """Row ``i``'s offsets are ``values[starts[i]:starts[i] + counts[i]]`` (``counts`` is 0 for none)."""

    values: np.ndarray
    starts: np.ndarray
    counts: np.ndarray

    def blocks(self, max_values: int | None = None) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
        """(rows, their offsets back to back, each row's count), ``BLOCK_VALUES`` offsets at a time at most
        (or one row, when it alone has more)."""
        max_values = max_values or BLOCK_VALUES
        ends = np.cumsum(self.counts)
        first = 0
        while first < len(self.counts):
            base = ends[first - 1] if first else 0
            last = max(int(np.searchsorted(ends, base + max_values, side="right")), first + 1)
            rows = slice(first, last)
            yield rows, self.gather(rows), self.counts[rows]
            first = last

    def gather(self, rows: slice = slice(None)) -> np.ndarray:
        """The offsets of ``rows`` back to back: a view when they lie so in the buffer; picked out of
        the span they cover when they lie in its order, a few rows missing (a filter of the records);
        else gathered by index (a sort)."""
        starts, counts = self.starts[rows], self.counts[rows]
        if len(starts) and np.array_equal(starts[1:], starts[:-1] + counts[:-1]):
            return self.values[starts[0]:starts[0] + counts.sum()]
        starts, counts = starts[counts > 0], counts[counts > 0]
        ends = starts + counts
        if len(starts) and (starts[1:] >= ends[:-1]).all() and ends[-1] - starts[0] <= 2 * counts.sum():
            edges = np.zeros(ends[-1] - starts[0] + 1, dtype=np.int8)
            edges[starts - starts[0]] += 1  # starts are distinct, so are ends: no lost increments
            edges[ends - starts[0]] -= 1
            return self.values[starts[0]:ends[-1]][np.cumsum(edges[:-1], dtype=np.int8).view(bool)]
        shift = np.repeat(starts - (np.cumsum(counts) - counts), counts)
        return self.values[np.arange(shift.size) + shift]


def within_row_diffs(flat: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Differences of consecutive offsets within each row (``itl_gaps_ms`` of every row, back to back):
    ``max(count − 1, 0)`` per row, in row order."""
    if flat.size < 2:
        return flat[:0]
    keep = np.ones(flat.size - 1, dtype=bool)
    ends = np.cumsum(counts)[:-1]
    keep[ends[(ends > 0) & (ends < flat.size)] - 1] = False  # the step from one row's last to the next's first
    return np.diff(flat)[keep]


def chunk_offsets(frame: pd.DataFrame) -> ChunkOffsets:
    """The offsets of ``frame``'s rows, columnar; no offsets for a frame without the column."""
    if COLUMN not in frame:
        return ChunkOffsets(np.empty(0), np.zeros(len(frame), dtype=np.int64), np.zeros(len(frame), dtype=np.int64))
    array = frame[COLUMN].array
    if not isinstance(array, ChunkOffsetsArray):
        array = ChunkOffsetsArray._from_sequence(list(frame[COLUMN]))
    return array.offsets()


@register_extension_dtype
class ChunkOffsetsDtype(ExtensionDtype):
    """The dtype of a ``ChunkOffsetsArray`` column; an element reads as a list of floats."""

    name = "chunk_offsets"
    type = list
    kind = "O"
    na_value = None

    @classmethod
    def construct_array_type(cls) -> builtins.type["ChunkOffsetsArray"]:
        return ChunkOffsetsArray


class ChunkOffsetsArray(ExtensionArray):
    """Rows of float offsets in one shared, never-written buffer; a row of length ``-1`` is missing."""

    def __init__(self, values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> None:
        self._values = values
        self._starts = np.asarray(starts, dtype=np.int64)
        self._lengths = np.asarray(lengths, dtype=np.int64)

    def offsets(self) -> ChunkOffsets:
        return ChunkOffsets(self._values, self._starts, np.maximum(self._lengths, 0))

    @classmethod
    def _from_sequence(cls, scalars: Sequence[Any], *, dtype: Any = None, copy: bool = False) -> "ChunkOffsetsArray":
        """From lists (or arrays) of offsets; anything else (None, NaN) is a missing row."""
        if isinstance(scalars, ChunkOffsetsArray):
            return scalars.copy()
        rows = [np.asarray(s, dtype=float) if isinstance(s, (list, tuple, np.ndarray)) else None for s in scalars]
        lengths = np.array([_MISSING if r is None else r.size for r in rows], dtype=np.int64)
        present = [r for r in rows if r is not None]
        values = np.concatenate(present) if present else np.empty(0)
        sizes = np.maximum(lengths, 0)
        return cls(values, np.cumsum(sizes) - sizes, lengths)

    @classmethod
    def _from_factorized(cls, values: np.ndarray, original: "ChunkOffsetsArray") -> "ChunkOffsetsArray":
        return cls._from_sequence(list(values))

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, (int, np.integer)):
            start, length = int(self._starts[item]), int(self._lengths[item])
            return None if length == _MISSING else self._values[start:start + length].tolist()
        item = pd.api.indexers.check_array_indexer(self, item) if not isinstance(item, slice) else item
        return type(self)(self._values, self._starts[item], self._lengths[item])

    def __len__(self) -> int:
        return len(self._starts)

    def __eq__(self, other: Any) -> np.ndarray:  # type: ignore[override]
        others = other if isinstance(other, (ExtensionArray, list)) and len(other) == len(self) else [other] * len(self)
        return np.array([a == b for a, b in zip(self, others)], dtype=bool)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.empty(len(self), dtype=object)
        out[:] = list(self)
        return out

    @property
    def dtype(self) -> ChunkOffsetsDtype:
        return ChunkOffsetsDtype()

    @property
    def nbytes(self) -> int:
        return int(self._starts.nbytes + self._lengths.nbytes + 8 * np.maximum(self._lengths, 0).sum())

    def isna(self) -> np.ndarray:
        return self._lengths == _MISSING

    def take(self, indices: Sequence[int], allow_fill: bool = False, fill_value: Any = None) -> "ChunkOffsetsArray":
        index = np.asarray(indices, dtype=np.intp)
        if not allow_fill:
            return type(self)(self._values, self._starts.take(index), self._lengths.take(index))
        if (index < -1).any():
            raise ValueError("take: indices below -1 with allow_fill")
        fill = index == -1
        if not len(self) and fill.all():  # nothing to take from: every row a fill
            return type(self)(self._values, np.zeros(index.size), np.full(index.size, _MISSING))
        starts, lengths = self._starts.take(np.where(fill, 0, index)), self._lengths.take(np.where(fill, 0, index))
        lengths[fill] = _MISSING
        return type(self)(self._values, starts, lengths)

    def copy(self) -> "ChunkOffsetsArray":
        return type(self)(self._values, self._starts.copy(), self._lengths.copy())

    @classmethod
    def _concat_same_type(cls, to_concat: Sequence["ChunkOffsetsArray"]) -> "ChunkOffsetsArray":
        lengths = np.concatenate([a._lengths for a in to_concat])
        if all(a._values is to_concat[0]._values for a in to_concat):
            return cls(to_concat[0]._values, np.concatenate([a._starts for a in to_concat]), lengths)
        sizes = np.maximum(lengths, 0)  # rows from different buffers: one new buffer, rows in order
        return cls(np.concatenate([a.offsets().gather() for a in to_concat]), np.cumsum(sizes) - sizes, lengths)


TIMING_COLUMNS = ("send_ts", "status", "ttft_ms", "ttfo_ms", "tpot_ms", "e2e_ms", "prompt_tokens", "output_tokens")
"""What windows, rates and latencies read of a record."""


def without_offsets(records: pd.DataFrame, keep: tuple[str, ...] = TIMING_COLUMNS) -> pd.DataFrame:
    """The records' ``keep`` columns only: a copy of a few small columns (a row filter on the whole frame would
    copy a million records' offsets and every text too)."""
    return records[[c for c in keep if c in records]]
