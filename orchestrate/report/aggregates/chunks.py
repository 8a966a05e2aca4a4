"""Aggregates over the chunks' arrivals: the pooled inter-chunk gaps (ITL), output tokens per second and
tokens received within windows.

Stage: records → report. Aggregates over chunk offsets never hold one Python list per record: a
million records pool ~64 million gaps, handled a few million at a time (``chunkcolumn`` hands them out
in blocks, ``blockstats`` selects exact percentiles from them).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pandas as pd

from orchestrate.report.aggregates.blockstats import Blocks, NamedBlocks, fits
from orchestrate.report.aggregates.chunkcolumn import COLUMN, chunk_offsets, within_row_diffs
from orchestrate.report.aggregates.keptanswers import KeptAnswers
from orchestrate.report.aggregates.stats import numeric_column, pooled_stats


def _tokens_per_chunk(tpc: np.ndarray) -> np.ndarray:
    """``tokens_per_chunk`` as a weight: 1 where unknown or 0."""
    return np.where(np.isnan(tpc) | (tpc == 0), 1.0, tpc)


def chunk_tokens(df: pd.DataFrame) -> np.ndarray:
    """Per row, the tokens each of its chunks carried."""
    return _tokens_per_chunk(numeric_column(df, "tokens_per_chunk").to_numpy(dtype=float))


def gap_blocks(df: pd.DataFrame, weights: np.ndarray | None = None,
               rows: np.ndarray | None = None) -> tuple[Blocks, int]:
    """The inter-chunk gaps of ``df``'s rows (``itl_gaps_ms`` of each; only of ``rows``, a mask, if given: no copy
    of the frame) in blocks, each gap weighted by its row's ``weights`` (None: 1 each), and how many there are. In
    row order while they fit in memory; past that in the order the rows' offsets lie in the buffer (read faster,
    and the order of pooled gaps changes no percentile)."""
    offsets = chunk_offsets(df)
    if rows is not None:
        offsets = replace(offsets, counts=np.where(rows, offsets.counts, 0))
    count = int(np.maximum(offsets.counts - 1, 0).sum())
    if not fits(count):
        order = np.argsort(offsets.starts, kind="stable")
        offsets = replace(offsets, starts=offsets.starts[order], counts=offsets.counts[order])
        weights = None if weights is None else weights[order]

    def blocks() -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        for rows, flat, counts in offsets.blocks():
            gaps = within_row_diffs(flat, counts)
            yield gaps, None if weights is None else np.repeat(weights[rows], np.maximum(counts - 1, 0))
    if fits(count):
        return blocks, count
    present = offsets.counts > 0  # the rows whose offsets are read, in the order they are: the gaps' name
    digest = hashlib.blake2b(offsets.starts[present].tobytes() + offsets.counts[present].tobytes(),
                             digest_size=16).digest()
    return NamedBlocks(blocks, offsets.values, digest, weights is not None), count


def itl_stats(ok: pd.DataFrame, rows: np.ndarray | None = None) -> dict[str, float] | None:
    """Pooled inter-chunk gaps, each weighted by its request's tokens per chunk (of ``rows`` only, if given)."""
    return pooled_stats(*gap_blocks(ok, chunk_tokens(ok), rows))


def _arrivals(records: pd.DataFrame, t0: float = 0.0, rows: np.ndarray | None = None
              ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every chunk's arrival (wall clock, s after ``t0``; NaN for a record without ``send_ts``) and its
    row's ``tokens_per_chunk`` (NaN where none), a block at a time; only the chunks of ``rows`` if given."""
    base = numeric_column(records, "send_ts").to_numpy(dtype=float) - t0
    tpc = numeric_column(records, "tokens_per_chunk").to_numpy(dtype=float)
    offsets = chunk_offsets(records)
    if rows is not None:
        offsets = replace(offsets, counts=np.where(rows, offsets.counts, 0))
    for block, flat, counts in offsets.blocks():
        yield np.repeat(base[block], counts) + flat / 1000, np.repeat(tpc[block], counts)


_PER_SECOND: KeptAnswers[pd.Series] = KeptAnswers(4)
"""The last few frames ``output_tokens_per_second`` binned, by width."""


def output_tokens_per_second(records: pd.DataFrame, width: float = 1.0) -> pd.Series:
    """Output tokens received in each whole second since the first send (from chunk arrivals), indexed by
    the second's start; a chunk of a record without ``tokens_per_chunk`` (failed, cancelled) is left out.
    The answers for the last few frames are kept: the plot and the page bin a million records' chunks once.
    Callers never change the frame or the answer.

    :param width: the bins' length in seconds, when not whole seconds (the tokens of each bin, not per second).
    """
    kept = _PER_SECOND.get(records, width)
    return kept if kept is not None else _PER_SECOND.keep(records, width, _tokens_per_bin(records, width))


def _tokens_per_bin(records: pd.DataFrame, width: float) -> pd.Series:
    if records.empty or COLUMN not in records:
        return pd.Series(dtype=float)
    send = numeric_column(records, "send_ts")
    counted = (send.notna() & numeric_column(records, "tokens_per_chunk").notna()).to_numpy()
    lows, sums, seen = [], [], []
    for arrival, tpc in _arrivals(records, send.min(), counted):
        if np.isnan(arrival).any():  # a null among a record's offsets
            arrival, tpc = arrival[~np.isnan(arrival)], tpc[~np.isnan(arrival)]
        second = np.floor(np.round(arrival / width, 9)).astype(np.int64)  # 1.4 / 0.2 is 6.999…: bin 7
        if second.size:
            lows.append(int(second.min()))
            sums.append(np.bincount(second - lows[-1], weights=tpc))
            seen.append(np.bincount(second - lows[-1]))
    if not lows:
        return pd.Series(dtype=float)
    low = min(lows)
    total = np.zeros(max(lo + s.size for lo, s in zip(lows, sums)) - low)
    count = np.zeros(total.size, dtype=np.int64)
    for lo, s, n in zip(lows, sums, seen):
        total[lo - low:lo - low + s.size] += s
        count[lo - low:lo - low + n.size] += n
    index = np.flatnonzero(count) + low
    return pd.Series(total[count > 0], index=index if width == 1.0 else index * width)


def tokens_received(records: pd.DataFrame, windows: list[tuple[float, float]],
                    rows: np.ndarray | None = None) -> list[float]:
    """Tokens in the chunks that arrived (wall clock) within each [start, end), over every record (of ``rows``, a
    mask, if given): a failed or cancelled request's chunks arrived too, and one of unknown size counts 1 token.
    Windows that follow one another are one histogram's bins (one pass over the arrivals, not one per window)."""
    return tokens_received_sets(records, [windows], rows)[0]


def tokens_received_sets(records: pd.DataFrame, sets: list[list[tuple[float, float]]],
                         rows: np.ndarray | None = None) -> list[list[float]]:
    """``tokens_received`` for each list of windows, in one pass over the arrivals (a million records' 64 million
    chunks are gathered once): each list's sums are those ``tokens_received`` gives it alone."""
    sums = [np.zeros(len(windows)) for windows in sets]
    edges = [np.array([a for a, _ in windows] + [windows[-1][1]]) if windows else np.zeros(0) for windows in sets]
    contiguous = [bool(windows) and all(windows[i][1] == windows[i + 1][0] for i in range(len(windows) - 1))
                  for windows in sets]
    for arrival, tpc in _arrivals(records, rows=rows):
        tokens = _tokens_per_chunk(tpc)
        for windows, total, edge, joined in zip(sets, sums, edges, contiguous):
            if joined:
                inside = (arrival >= edge[0]) & (arrival < edge[-1])
                slot = np.searchsorted(edge, arrival[inside], side="right") - 1
                total += np.bincount(slot, weights=tokens[inside], minlength=len(windows))[:len(windows)]
                continue
            for i, (start, end) in enumerate(windows):
                total[i] += tokens[(arrival >= start) & (arrival < end)].sum()
    return [total.tolist() for total in sums]
