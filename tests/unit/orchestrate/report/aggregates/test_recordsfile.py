"""orchestrate/report/aggregates/recordsfile.py: ``requests.jsonl`` read columnar gives what a plain reading gives.

The reference is written out in plain Python over ``json.loads`` of each line: nearest-rank
percentiles with weights, token totals, errors by class. Both the in-memory path and the blockwise
path of the percentiles (forced with a small ``SORT_AT_MOST``) must give the same exact values.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from locustfiles.records import CANCELLED, ERROR, OK, RequestRecord
from orchestrate.report.aggregates import blockstats
from orchestrate.report.aggregates.chunkcolumn import chunk_offsets
from orchestrate.report.aggregates.headline import summarize_records
from orchestrate.report.aggregates.recordscache import read_cached
from orchestrate.report.aggregates.recordsfile import read_records
from orchestrate.report.jsontypes import to_json
from orchestrate.report.schema.headline import Headline
from tests.unit.orchestrate.report.aggregates.test_headline import study_records

T0 = 1_700_000_000.0


def generated(n: int, seed: int = 0) -> list[RequestRecord]:
    """Records like a run's: completed ones with rounded chunk offsets (some 2 tokens a chunk, some
    sharing a read), EOS-only replies, errors of three classes (some after chunks), cancelled ones."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        u = rng.random()
        status = ERROR if u < 0.1 else CANCELLED if u < 0.15 else OK
        chunks = 0 if (status == OK and rng.random() < 0.05) else rng.randint(1, 12)
        offsets, t = [], rng.uniform(20, 300)
        for _ in range(chunks):
            offsets.append(round(t, 4))
            t += rng.choice([0.0, rng.uniform(1, 40)])
        per_chunk = rng.choice([1, 1, 1, 2])
        rec = RequestRecord(request_id=f"w-{i}", prompt_index=i, worker="w", send_ts=T0 + i * 0.05 + rng.random(),
                            status=status, chunk_offsets_ms=offsets, n_chunks=chunks)
        if status == ERROR:
            rec.error_class = rng.choice(["http_400:exceed_context_size_error", "stream_cut", "timeout"])
        if status == CANCELLED:
            rec.error_class = "cancelled"
        else:
            rec.e2e_ms = (offsets[-1] if offsets else 30.0) + rng.uniform(0, 5)
        if offsets:
            rec.ttft_ms = offsets[0] + rng.random() / 1e4
            rec.tokens_per_chunk = float(per_chunk) if status == OK else None
        if status == OK:
            rec.output_tokens = per_chunk * chunks or 1
            rec.prompt_tokens, rec.cached_tokens = rng.randint(5, 900), rng.choice([0, 0, rng.randint(0, 5)])
            rec.tpot_ms = (rec.e2e_ms - rec.ttft_ms) / (rec.output_tokens - 1) if offsets and rec.output_tokens > 1 \
                else None
        out.append(rec)
    return out


def write(tmp_path: Path, lines: list[str], end: str = "\n") -> Path:
    path = tmp_path / "requests.jsonl"
    path.write_text("\n".join(lines) + end)
    return path


def nearest_rank(values: list[float], weights: list[float], p: float) -> float:
    running, pairs = 0.0, sorted(zip(values, weights), key=lambda pair: pair[0])
    target = p / 100 * sum(weights)
    for value, weight in pairs:
        running += weight
        if running >= target:
            return value
    return pairs[-1][0]


def reference(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of summary.json's headline block, from plain dicts."""
    ok = [r for r in rows if r["status"] == OK]

    def stats(values: list[float], weights: list[float] | None = None) -> dict[str, float]:
        weights = weights or [1.0] * len(values)
        return {**{f"p{p}": nearest_rank(values, weights, p) for p in (50, 90, 99)},
                "mean": sum(v * w for v, w in zip(values, weights)) / sum(weights),
                "min": min(values), "max": max(values)}

    gaps, weights = [], []
    for r in ok:
        offsets = r.get("chunk_offsets_ms") or []
        gaps += [b - a for a, b in zip(offsets, offsets[1:])]
        weights += [r.get("tokens_per_chunk") or 1.0] * max(len(offsets) - 1, 0)
    return {
        "counts": (len(rows), len(ok), sum(r["status"] == ERROR for r in rows),
                   sum(r["status"] == CANCELLED for r in rows)),
        "errors_by_class": dict(sorted(Counter(r["error_class"] for r in rows if r["status"] == ERROR).items())),
        "tokens": {key: sum(r.get(field) or 0 for r in ok) for key, field in
                   (("prompt", "prompt_tokens"), ("cached", "cached_tokens"), ("output", "output_tokens"))},
        "ttft": stats([r["ttft_ms"] for r in ok if r.get("ttft_ms") is not None]),
        "tpot": stats([r["tpot_ms"] for r in ok if r.get("tpot_ms") is not None]),
        "e2e": stats([r["e2e_ms"] for r in ok if r.get("e2e_ms") is not None]),
        "itl": stats(gaps, weights),
    }


def assert_matches(summary: Headline, ref: dict[str, Any]) -> None:
    req = summary.requests
    assert (req.sent, req.completed, req.errors, req.cancelled) == ref["counts"]
    assert req.errors_by_class == ref["errors_by_class"]
    assert to_json(summary.tokens) == ref["tokens"]
    for key in ("ttft", "tpot", "e2e", "itl"):
        got, want = to_json(getattr(summary.latency_ms, key)), ref[key]
        assert {k: got[k] for k in ("p50", "p90", "p99", "min", "max")} == \
            {k: want[k] for k in ("p50", "p90", "p99", "min", "max")}, key  # exact: values of the records
        assert got["mean"] == pytest.approx(want["mean"], rel=1e-12), key


@pytest.mark.parametrize("blockwise", [False, True], ids=["sorted_at_once", "blockwise"])
def test_the_summary_equals_a_plain_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blockwise: bool) -> None:
    if blockwise:
        monkeypatch.setattr(blockstats, "SORT_AT_MOST", 50)
    lines = [r.to_json() for r in generated(600)]
    frame = read_records(write(tmp_path, lines), block_bytes=4096)  # many blocks of whole lines
    assert_matches(summarize_records(frame), reference([json.loads(line) for line in lines]))


def test_values_round_trip_exactly_with_pandas_dtypes(tmp_path: Path) -> None:
    records = generated(50, seed=3)
    records[0].tpot_ms = 100.00000000000001
    frame = read_records(write(tmp_path, [r.to_json() for r in records]))
    assert frame.loc[0, "tpot_ms"] == 100.00000000000001
    assert frame["send_ts"].tolist() == [r.send_ts for r in records]
    assert frame["chunk_offsets_ms"].tolist() == [r.chunk_offsets_ms for r in records]
    # every record has an integer: int64, as pandas infers; some lack one: float64 with NaN
    assert str(frame["prompt_index"].dtype) == "int64" and str(frame["n_chunks"].dtype) == "int64"
    assert str(frame["output_tokens"].dtype) == "float64" and frame["output_tokens"].isna().any()
    assert frame["status"].tolist() == [r.status for r in records]


def test_every_field_of_a_whole_file_is_read_by_the_fast_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A well-formed file never falls back to the line-by-line read, and every field, booleans
    included, comes back as written (a field the schema typed wrongly would send each block there)."""
    from dataclasses import fields

    from orchestrate.report.aggregates import recordsfile
    records = generated(40, seed=5)
    for i, r in enumerate(records):
        r.reconnect, r.connect_ms, r.refused_retries, r.bytes_received = i % 3 == 0, 0.25 * i, i % 2, 100 + i
    monkeypatch.setattr(recordsfile, "_parse_lines", lambda block: pytest.fail("fell back to the slow read"))
    frame = read_records(write(tmp_path, [r.to_json() for r in records]))
    for f in fields(RequestRecord):
        want = [getattr(r, f.name) for r in records]
        got = [None if (v is None or v != v) else v for v in frame[f.name].tolist()]
        assert got == want, f.name


def test_torn_lines_are_skipped_wherever_they_are(tmp_path: Path) -> None:
    records = generated(6, seed=1)
    lines = [r.to_json() for r in records]
    # a torn line in the middle (a sweep's steps merged after a killed writer), a blank line, a torn end
    body = [lines[0], lines[1][:57], lines[2], "", lines[3], lines[4], lines[5][:40]]
    frame = read_records(write(tmp_path, body, end=""))
    assert frame["request_id"].tolist() == [records[i].request_id for i in (0, 2, 3, 4)]
    assert frame["chunk_offsets_ms"].tolist() == [records[i].chunk_offsets_ms for i in (0, 2, 3, 4)]


def test_an_unended_last_line_that_is_whole_counts(tmp_path: Path) -> None:
    records = generated(3, seed=2)
    frame = read_records(write(tmp_path, [r.to_json() for r in records], end=""))
    assert frame["request_id"].tolist() == [r.request_id for r in records]


def test_records_of_an_older_version_lack_fields(tmp_path: Path) -> None:
    """Fields added later are missing, not an error; a record without ``chunk_offsets_ms`` is a missing row."""
    old = []
    for r in generated(20, seed=4):
        row = json.loads(r.to_json())
        for field in ("turn", "conversation", "scheduled_ts", "send_delay_ms", "ttft_from_schedule_ms",
                      "e2e_from_schedule_ms", "prefill_tokens", "draft_tokens", "draft_accepted"):
            row.pop(field)
        old.append(row)
    old[3].pop("chunk_offsets_ms")
    old[4]["itl_summary"] = {"p50": 1.0}  # a field this version does not know: ignored
    frame = read_records(write(tmp_path, [json.dumps(row) for row in old]))
    assert len(frame) == 20 and frame["turn"].isna().all() and frame["draft_tokens"].isna().all()
    assert frame["chunk_offsets_ms"].isna().tolist() == [i == 3 for i in range(20)]
    assert chunk_offsets(frame).counts[3] == 0
    assert "itl_summary" not in frame
    assert_matches(summarize_records(frame), reference(old))


@pytest.mark.parametrize("torn", [False, True])
def test_a_fields_older_name_is_read_as_its_name_now(tmp_path: Path, torn: bool) -> None:
    """``requested_max_tokens`` (before 2026-12) is ``max_tokens``, on the fast path and line by line (a block
    with a torn line is read that way); ``short_replies`` counts from it."""
    rows = [json.loads(r.to_json()) for r in generated(6, seed=6)]
    for i, row in enumerate(rows):
        row.pop("max_tokens")
        row["requested_max_tokens"] = (row["output_tokens"] or 0) + i % 2  # every other reply ended short
    frame = read_records(write(tmp_path, [json.dumps(row) for row in rows] + (['{"torn'] if torn else [])))
    assert frame["max_tokens"].tolist() == [row["requested_max_tokens"] for row in rows]
    assert "requested_max_tokens" not in frame
    short = sum(1 for row in rows if row["status"] == OK and row["output_tokens"] < row["requested_max_tokens"])
    assert short and summarize_records(frame).requests.short_replies == short


def test_values_of_another_type_are_missing(tmp_path: Path) -> None:
    records = generated(4, seed=5)
    rows = [json.loads(r.to_json()) for r in records]
    rows[1]["http_status"], rows[1]["worker"], rows[2]["chunk_offsets_ms"] = "400", 7, [1.0, "x"]
    rows[3]["tpot_ms"] = True
    frame = read_records(write(tmp_path, [json.dumps(row) for row in rows]))
    assert frame["request_id"].tolist() == [r.request_id for r in records]
    assert np.isnan(frame.loc[1, "http_status"]) and frame["worker"].isna().tolist() == [False, True, False, False]
    assert frame.loc[2, "chunk_offsets_ms"] is None and np.isnan(frame.loc[3, "tpot_ms"])
    assert frame.loc[0, "chunk_offsets_ms"] == records[0].chunk_offsets_ms


def test_a_line_longer_than_a_block(tmp_path: Path) -> None:
    records = generated(3, seed=6)
    records[1].chunk_offsets_ms = [float(k) for k in range(2000)]
    frame = read_records(write(tmp_path, [r.to_json() for r in records]), block_bytes=512)
    assert frame["chunk_offsets_ms"].tolist() == [r.chunk_offsets_ms for r in records]


@pytest.mark.parametrize("content", [None, "", "\n\n", "{\"request_id\": "], ids=["absent", "empty", "blank", "torn"])
def test_no_record_is_an_empty_frame(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "requests.jsonl"
    if content is not None:
        path.write_text(content)
    frame = read_records(path)
    assert frame.empty and summarize_records(frame).requests.sent == 0


# --- a torn, a missing and an exact file, through the headline ------------------------------------

def test_read_records_skips_a_torn_last_line(tmp_path: Path):
    path = tmp_path / "requests.jsonl"
    records = study_records()
    torn = records[2].to_json()[:40]  # the writer was killed mid-line
    path.write_text(records[0].to_json() + "\n" + records[1].to_json() + "\n" + torn)
    df = read_records(path)
    assert list(df["request_id"]) == ["local-0", "local-1"]
    assert df.loc[1, "chunk_offsets_ms"] == [200.0, 260.0]
    assert summarize_records(df).requests.completed == 2


def test_read_records_round_trips_exact_floats(tmp_path: Path):
    path = tmp_path / "requests.jsonl"
    record = study_records()[1]
    record.tpot_ms = 100.00000000000001
    path.write_text(record.to_json() + "\n")
    assert read_records(path).loc[0, "tpot_ms"] == 100.00000000000001


def test_read_records_missing_file_is_empty(tmp_path: Path):
    df = read_records(tmp_path / "nope.jsonl")
    assert df.empty
    assert summarize_records(df).requests.sent == 0


# --- the kept copy (recordscache.py) ------------------------------------------------------------------------------

KEPT = ["requests.columns.parquet", "requests.jsonl", "requests.offsets.f64"]


def test_the_first_read_leaves_a_stamped_copy_the_next_reads_instead(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    from orchestrate.report.aggregates import recordsfile
    records = generated(60, seed=7)
    records[3].chunk_offsets_ms = None  # a record without the field: a missing row, not an empty one
    path = write(tmp_path, [r.to_json() for r in records[:40]])
    parsed = read_records(path, block_bytes=4096)  # several blocks: several row groups
    assert read_cached(path) is not None and sorted(p.name for p in tmp_path.iterdir()) == KEPT  # no temporary
    monkeypatch.setattr(recordsfile, "_parse", lambda block: pytest.fail("parsed again"))
    again = read_records(path)
    pd.testing.assert_frame_equal(again.drop(columns=["chunk_offsets_ms"]), parsed.drop(columns=["chunk_offsets_ms"]))
    assert again["chunk_offsets_ms"].tolist() == parsed["chunk_offsets_ms"].tolist() == [
        r.chunk_offsets_ms for r in records[:40]]
    assert again["chunk_offsets_ms"].isna().tolist() == [i == 3 for i in range(40)]
    monkeypatch.undo()
    with path.open("a") as f:  # the run went on: the copy is stale, read anew and written again
        f.write("".join(r.to_json() + "\n" for r in records[40:]))
    assert read_cached(path) is None
    assert read_records(path)["request_id"].tolist() == [r.request_id for r in records]
    assert read_cached(path) is not None


def test_a_copy_that_cannot_be_written_is_not_kept_and_the_records_are_read_all_the_same(tmp_path: Path) -> None:
    records = generated(10, seed=8)
    path = write(tmp_path, [r.to_json() for r in records])
    (tmp_path / "requests.columns.parquet").mkdir()  # in the way (as a read-only folder would be)
    assert read_records(path)["request_id"].tolist() == [r.request_id for r in records]
    assert read_cached(path) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == KEPT  # the folder in the way; no temporary left


@pytest.mark.parametrize("damage", ["not parquet", "offsets cut", "offsets gone"])
def test_a_damaged_copy_is_ignored_and_replaced(tmp_path: Path, damage: str) -> None:
    records = generated(10, seed=9)
    path = write(tmp_path, [r.to_json() for r in records])
    read_records(path)
    columns, offsets = tmp_path / "requests.columns.parquet", tmp_path / "requests.offsets.f64"
    if damage == "not parquet":
        columns.write_text("not parquet")
    elif damage == "offsets cut":
        offsets.write_bytes(offsets.read_bytes()[:-8])
    else:
        offsets.unlink()
    assert read_cached(path) is None
    assert read_records(path)["chunk_offsets_ms"].tolist() == [r.chunk_offsets_ms for r in records]
    assert read_cached(path) is not None
