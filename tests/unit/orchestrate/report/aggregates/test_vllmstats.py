"""orchestrate/report/aggregates/vllmstats.py: vLLM's estimators, in memory and read in blocks, against numpy."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest

from locustfiles.records import OK, RequestRecord
from orchestrate.report.aggregates import blockstats
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
