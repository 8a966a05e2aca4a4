"""orchestrate/report/aggregates/chunks.py: output tokens per second, tokens in windows and the pooled
gaps, from chunk arrivals, in memory and read in blocks."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from orchestrate.report.aggregates import blockstats, chunkcolumn
from orchestrate.report.aggregates.chunkcolumn import COLUMN
from orchestrate.report.aggregates.chunks import (
    itl_stats,
    output_tokens_per_second,
    tokens_received,
    tokens_received_sets,
)
from orchestrate.report.aggregates.headline import summarize_records
from tests.unit.orchestrate.report.aggregates.test_headline import T0, columnar, frame, ok_record, study_records


def test_output_tokens_per_second_from_chunk_arrivals():
    # second 0: r0 chunks at 0.10 0.15 0.25 (1 token each) + r1 at 0.70 0.76 (2 each) = 3 + 4 = 7
    # second 1: r2 chunks at 1.40 1.50 1.55 1.70 = 4. Error and cancelled rows carry no tokens per chunk.
    per_s = output_tokens_per_second(frame(study_records()))
    assert per_s.to_dict() == {0: 7.0, 1: 4.0}
    assert per_s.sum() == summarize_records(frame(study_records())).tokens.output


def test_output_tokens_per_second_of_nothing_is_empty():
    assert output_tokens_per_second(pd.DataFrame()).empty


def test_itl_of_single_chunk_requests_is_none():
    records = [ok_record(0, T0, [100.0], 2, 300.0, 10, 0, 5.0, 50.0)]
    ok = frame(records)
    assert itl_stats(ok) is None


def test_pooled_itl_read_in_blocks_is_the_sorted_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    rng = np.random.default_rng(7)
    records = [ok_record(i, T0 + i, np.round(np.cumsum(rng.gamma(2.0, 5.0, 40)), 4).tolist(), int(k * 40), 5000.0,
                         10, 0, 1.0, 1.0) for i, k in enumerate(rng.choice([1, 2, 3], 60))]
    df = columnar(tmp_path, records)
    in_memory = itl_stats(df)
    monkeypatch.setattr(blockstats, "SORT_AT_MOST", 100)  # 2,340 gaps: selected by histograms
    monkeypatch.setattr(chunkcolumn, "BLOCK_VALUES", 256)
    blockwise = itl_stats(df)
    assert {k: blockwise[k] for k in ("p50", "p90", "p99", "min", "max")} == \
        {k: in_memory[k] for k in ("p50", "p90", "p99", "min", "max")}
    assert blockwise["mean"] == pytest.approx(in_memory["mean"], rel=1e-12)


def test_output_tokens_per_second_columnar_against_a_loop(tmp_path: Path):
    rng = np.random.default_rng(3)
    records = [ok_record(i, T0 + rng.uniform(0, 20), np.round(np.cumsum(rng.gamma(2.0, 80.0, 30)), 4).tolist(),
                         int(rng.choice([30, 60])), 9000.0, 10, 0, 1.0, 1.0) for i in range(40)]
    records += study_records()[3:]  # an error and a cancelled request with a chunk, no tokens per chunk: left out
    expected: dict[int, float] = {}
    t0 = min(r.send_ts for r in records)
    for r in records:
        for offset in (r.chunk_offsets_ms if r.tokens_per_chunk else []):
            second = math.floor(r.send_ts - t0 + offset / 1000)
            expected[second] = expected.get(second, 0.0) + r.tokens_per_chunk
    per_s = output_tokens_per_second(columnar(tmp_path, records))
    assert per_s.to_dict() == pytest.approx(expected)
    assert sorted(per_s.index) == sorted(expected)


def test_tokens_received_in_windows_counts_every_records_chunks(tmp_path: Path):
    # r0's chunks arrive at 1000.10 1000.15 1000.25, r1's (2 tokens each) at 1000.70 1000.76, r2's at
    # 1001.40 1001.50 1001.55 1001.70; the error's at 1001.75 and the cancelled one's at 1001.60 count 1 each
    df = columnar(tmp_path, study_records())
    assert tokens_received(df, [(T0, T0 + 0.2), (T0 + 0.2, T0 + 1.0), (T0 + 1.0, T0 + 5.0)]) == [2.0, 5.0, 6.0]


def test_several_sets_of_windows_in_one_pass_sum_as_each_alone() -> None:
    records = pd.DataFrame({"send_ts": [100.0, 101.0, 102.5], "status": ["ok", "error", "ok"],
                            "tokens_per_chunk": [1.0, None, 2.0],
                            COLUMN: [[100.0, 600.0, 1200.0], [50.0], [0.0, 400.0, 900.0]]})
    sets = [[(100.0, 103.0)], [(100.0, 101.0), (101.0, 102.0), (102.0, 103.0)], [(100.5, 101.2), (102.6, 104.0)]]
    rows = np.array([True, False, True])
    together = tokens_received_sets(records, sets, rows)
    assert together == [tokens_received(records, windows, rows) for windows in sets]
    # by hand: arrivals 100.1, 100.6, 101.2 (1 token each), 102.5, 102.9, 103.4 (2 each)
    assert together == [[7.0], [2.0, 1.0, 4.0], [1.0, 4.0]]


def test_the_plot_and_the_page_bin_a_frame_once() -> None:
    records = pd.DataFrame({"send_ts": [100.0, 101.0], "status": ["ok", "ok"], "tokens_per_chunk": [1.0, 2.0],
                            COLUMN: [[100.0, 600.0], [0.0, 400.0]]})
    first = output_tokens_per_second(records)
    other = output_tokens_per_second(records.iloc[:1])  # another frame between (vllm_bench.json's) keeps the first
    assert output_tokens_per_second(records) is first and first.to_dict() == {0: 2.0, 1: 4.0}
    assert other.to_dict() == {0: 2.0} and output_tokens_per_second(records, 0.5) is not first
