"""orchestrate/report/aggregates/chunkcolumn.py: chunk offsets as one shared buffer, row by row as the lists they
stand for."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from locustfiles.metrics import itl_gaps_ms
from orchestrate.report.aggregates.chunkcolumn import ChunkOffsetsArray, chunk_offsets, within_row_diffs

ROWS = [[100.0, 150.0, 250.0], [], None, [7.5], [1.0, 2.0, 4.0, 8.0], [3.0, 3.0]]
"""Offsets of six records: with several chunks, none, a record without the field (None), one chunk."""


def frame(rows: list[list[float] | None] = ROWS) -> pd.DataFrame:
    return pd.DataFrame({"i": range(len(rows)), "chunk_offsets_ms": ChunkOffsetsArray._from_sequence(rows)})


def test_rows_read_as_the_lists_they_stand_for() -> None:
    df = frame()
    assert df["chunk_offsets_ms"].tolist() == ROWS
    assert df.loc[4, "chunk_offsets_ms"] == [1.0, 2.0, 4.0, 8.0]
    assert df["chunk_offsets_ms"].isna().tolist() == [False, False, True, False, False, False]


def test_filters_sorts_groups_and_concats_keep_each_rows_offsets() -> None:
    df = frame()
    picked = df[df["i"] % 2 == 0]
    assert picked["chunk_offsets_ms"].tolist() == [ROWS[0], ROWS[2], ROWS[4]]
    assert df.sort_values("i", ascending=False)["chunk_offsets_ms"].tolist() == ROWS[::-1]
    groups = {k: g["chunk_offsets_ms"].tolist() for k, g in df.groupby(df["i"] % 3)}
    assert groups == {0: [ROWS[0], ROWS[3]], 1: [ROWS[1], ROWS[4]], 2: [ROWS[2], ROWS[5]]}
    assert pd.concat([picked, df.iloc[1:2]])["chunk_offsets_ms"].tolist() == [ROWS[0], ROWS[2], ROWS[4], ROWS[1]]
    other = frame([[9.0, 10.0]])  # another buffer: the rows are copied into a new one
    assert pd.concat([picked, other])["chunk_offsets_ms"].tolist() == [ROWS[0], ROWS[2], ROWS[4], [9.0, 10.0]]


def test_a_filter_shares_the_buffer() -> None:
    df = frame()
    assert chunk_offsets(df[df["i"] > 2]).values is chunk_offsets(df).values


def test_take_with_fill_gives_missing_rows() -> None:
    taken = frame()["chunk_offsets_ms"].array.take([0, -1, 4], allow_fill=True)
    assert list(taken) == [ROWS[0], None, ROWS[4]]
    with pytest.raises(ValueError):
        frame()["chunk_offsets_ms"].array.take([-2], allow_fill=True)


def test_a_frame_of_lists_reads_the_same() -> None:
    columnar, lists = chunk_offsets(frame()), chunk_offsets(pd.DataFrame({"chunk_offsets_ms": ROWS}))
    assert columnar.counts.tolist() == lists.counts.tolist() == [3, 0, 0, 1, 4, 2]
    assert columnar.gather().tolist() == lists.gather().tolist()


def test_a_frame_without_the_column_has_no_offsets() -> None:
    offsets = chunk_offsets(pd.DataFrame({"i": [1, 2]}))
    assert offsets.counts.tolist() == [0, 0] and offsets.gather().size == 0


@pytest.mark.parametrize("max_values", [1, 2, 3, 5, 100])
def test_blocks_cover_every_row_once_in_order(max_values: int) -> None:
    df = frame()
    picked = chunk_offsets(df[df["i"] != 3])  # not adjacent in the buffer any more: gathered
    seen_rows, flat = [], []
    for rows, values, counts in picked.blocks(max_values):
        assert values.size == counts.sum()
        assert values.size <= max_values or rows.stop - rows.start == 1
        seen_rows += list(range(rows.start, rows.stop))
        flat += values.tolist()
    assert seen_rows == list(range(5))
    assert flat == [x for row in (ROWS[0], ROWS[1], ROWS[4], ROWS[5]) for x in row]


def test_within_row_diffs_are_each_rows_gaps_back_to_back() -> None:
    rows = [[5.0], [], [1.0, 4.0, 4.5], [], [2.0, 3.0], [10.0]]
    flat = np.array([x for row in rows for x in row])
    counts = np.array([len(row) for row in rows])
    expected = [g for row in rows for g in itl_gaps_ms(row)]
    assert within_row_diffs(flat, counts).tolist() == expected == [3.0, 0.5, 1.0]
    assert within_row_diffs(np.array([1.0]), np.array([1])).size == 0


def test_gather_in_every_layout() -> None:
    """Whole (a view), a filter (picked from its span), sparse or out of order (by index)."""
    df = frame()
    for picked in (df, df[df["i"] != 3], df.iloc[[3, 5]], df.iloc[[5, 0, 4]], df.iloc[[1, 2]]):
        expected = [x for row in picked["chunk_offsets_ms"] if row for x in row]
        assert chunk_offsets(picked).gather().tolist() == expected
