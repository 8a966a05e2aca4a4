"""orchestrate/report/aggregates/vllmstats.py: vLLM's estimators, in memory and read in blocks, against numpy."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest

from locustfiles.records import OK, RequestRecord
from orchestrate.report.aggregates import blockstats
from orchestrate.report.aggregates.chunkcolumn import COLUMN, ChunkOffsetsArray
from orchestrate.report.aggregates.headline import summarize_records
from orchestrate.report.schema import Summary
from orchestrate.report.vllm_format import vllm_bench
from tests.unit.orchestrate.report.test_vllm_format import T0


@pytest.mark.parametrize("rows", [1, 2, 9, 300])
def test_statistics_read_in_blocks_are_numpys(monkeypatch: pytest.MonkeyPatch, rows: int) -> None:
    """Past SORT_AT_MOST the order statistics are selected from blocks: the percentiles and median are
    numpy's to the last bit (the same values, the same interpolation), mean and std to rounding."""
    rng = np.random.default_rng(rows)
    recs = []
    for i in range(rows):
        offsets = np.round(np.cumsum(rng.gamma(2.0, 7.0, int(rng.integers(2, 9)))), 4).tolist()
        recs.append(RequestRecord(request_id=f"r{i}", prompt_index=i, worker="w", send_ts=T0 + i, status=OK,
                                  ttft_ms=offsets[0], e2e_ms=offsets[-1], chunk_offsets_ms=offsets,
                                  n_chunks=len(offsets), tokens_per_chunk=1.0, output_tokens=len(offsets)))
    df = pd.DataFrame([asdict(r) for r in recs])
    gaps = np.array([b - a for r in recs for a, b in zip(r.chunk_offsets_ms, r.chunk_offsets_ms[1:])])
    summary = summarize_records(df)
    monkeypatch.setattr(blockstats, "SORT_AT_MOST", 0)
    bench = vllm_bench(Summary(**summary.blocks()), df)
    assert bench is not None
    assert bench["median_itl_ms"] == float(np.median(gaps))
    assert bench["percentiles_itl_ms"] == [[float(p), float(np.percentile(gaps, p))] for p in (50, 90, 95, 99)]
    assert bench["mean_itl_ms"] == pytest.approx(float(np.mean(gaps)), rel=1e-12)
    assert bench["std_itl_ms"] == pytest.approx(float(np.std(gaps)), rel=1e-9, abs=1e-12)


def test_the_headline_and_vllm_share_one_first_pass_over_the_same_gaps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The headline weighs a gap by its chunk's tokens, vLLM does not: one first pass gives both, and each select
    gives what it gives alone."""
    rng = np.random.default_rng(11)
    recs = []
    for i in range(40):
        offsets = np.round(np.cumsum(rng.gamma(2.0, 7.0, int(rng.integers(1, 9)))), 4).tolist()
        recs.append(RequestRecord(request_id=f"r{i}", prompt_index=i, worker="w", send_ts=T0 + 40 - i,
                                  status=OK if i % 7 else "error", ttft_ms=offsets[0], e2e_ms=offsets[-1],
                                  chunk_offsets_ms=offsets, n_chunks=len(offsets),
                                  tokens_per_chunk=float(1 + i % 3), output_tokens=len(offsets)))
    df = pd.DataFrame([asdict(r) for r in recs])
    df[COLUMN] = ChunkOffsetsArray._from_sequence(list(df[COLUMN]))  # one buffer, as the records file is read
    monkeypatch.setattr(blockstats, "SORT_AT_MOST", 0)

    def alone() -> tuple[dict, dict]:
        blockstats._FIRST_PASSES.clear()
        head = asdict(summarize_records(df).latency_ms.itl)
        blockstats._FIRST_PASSES.clear()
        bench = vllm_bench(Summary(**summarize_records(df).blocks()), df)
        return head, {k: v for k, v in bench.items() if "itl" in k}  # type: ignore[union-attr]

    head_alone, bench_alone = alone()
    blockstats._FIRST_PASSES.clear()
    first_passes = []
    histograms = blockstats._histograms
    monkeypatch.setattr(blockstats, "_histograms",
                        lambda blocks, search, first=False: first_passes.append(
                            first and isinstance(blocks, blockstats.NamedBlocks)) or histograms(blocks, search, first))
    summary = summarize_records(df)
    bench = vllm_bench(Summary(**summary.blocks()), df)
    assert asdict(summary.latency_ms.itl) == head_alone and {k: v for k, v in bench.items() if "itl" in k} == bench_alone
    assert first_passes.count(True) == 1  # over the gaps: the headline's; vLLM's was kept (TTFT... are others)
    assert head_alone["mean"] != bench_alone["mean_itl_ms"]  # weighted and not: they do differ
