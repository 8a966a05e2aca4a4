"""orchestrate/report/export.py: a run's JSON lines as Parquet and CSV, read back value for value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

from orchestrate.report.aggregates.recordsfile import COLUMNS_SCHEMA
from orchestrate.report.export import export_variant, leaves
from orchestrate.results import VariantPaths
from tests.unit.orchestrate.report.aggregates.test_headline import study_records

SAMPLES = [{"t": 1.5, "elapsed_s": 0.0, "server_memory_bytes": 4096, "metrics": {"requests_processing": 2.0},
            "host": {"steal_pct": 0.5, "server_processes": "launcher"}, "power_watts": None},
           {"t": 2.5, "elapsed_s": 1.0, "server_memory_bytes": 8192, "metrics": None, "metrics_error": "http_500",
            "host": {"steal_pct": None, "server_processes": "launcher"}, "power_watts": 71.25}]


def folder(tmp_path: Path) -> VariantPaths:
    paths = VariantPaths.create(tmp_path / "run", "v")
    paths.records.write_text("".join(r.to_json() + "\n" for r in study_records()) + '{"send_ts": 1.0, "stat')
    paths.metrics.write_text("".join(json.dumps(s) + "\n" for s in SAMPLES))
    paths.summary_json.write_text(json.dumps({"status": "completed", "latency_ms": {"ttft": {"p50": 200.0}},
                                              "probes": [{"passed": True}, {"passed": False}], "notes": [],
                                              "error": None}))
    return paths


def test_parquet_reads_back_every_record_value_for_value(tmp_path: Path) -> None:
    paths = folder(tmp_path)
    written = export_variant(paths, "parquet", paths.dir)
    assert [p.name for p in written] == ["requests.parquet", "metrics.parquet", "summary.parquet"]
    rows = pq.read_table(paths.dir / "requests.parquet").to_pylist()
    records = [json.loads(r.to_json()) for r in study_records()]  # the torn last line is no record
    assert len(rows) == len(records) and pq.read_schema(paths.dir / "requests.parquet") == COLUMNS_SCHEMA
    for row, record in zip(rows, records):
        assert {key: row[key] for key in record} == record
        assert all(row[key] is None for key in row if key not in record)
    assert isinstance(rows[0]["prompt_tokens"], int) and isinstance(rows[0]["chunk_offsets_ms"], list)
    pd.testing.assert_frame_equal(pd.read_parquet(paths.dir / "metrics.parquet"), pd.json_normalize(SAMPLES, sep="."))
    summary = pq.read_table(paths.dir / "summary.parquet").to_pylist()
    assert summary == [{"figure": "status", "number": None, "text": "completed"},
                       {"figure": "latency_ms.ttft.p50", "number": 200.0, "text": None},
                       {"figure": "probes[0].passed", "number": 1.0, "text": None},
                       {"figure": "probes[1].passed", "number": 0.0, "text": None},
                       {"figure": "error", "number": None, "text": None}]


def test_csv_holds_the_same_values_and_the_offsets_as_json(tmp_path: Path) -> None:
    paths = folder(tmp_path)
    export_variant(paths, "csv", tmp_path / "out")
    frame = pd.read_csv(tmp_path / "out" / "requests.csv")
    records = [json.loads(r.to_json()) for r in study_records()]
    for (_, row), record in zip(frame.iterrows(), records):
        for key, value in record.items():
            found: Any = row[key]
            if key == "chunk_offsets_ms":
                assert json.loads(found) == value
            elif value is None:
                assert pd.isna(found)
            else:
                assert found == pytest.approx(value) if isinstance(value, float) else found == value
    assert pd.read_csv(tmp_path / "out" / "metrics.csv")["host.steal_pct"].tolist()[0] == 0.5


def test_leaves_name_every_scalar_by_its_path() -> None:
    assert list(leaves({"a": {"b": [1, {"c": "x"}]}, "d": [], "e": None})) == [("a.b[0]", 1), ("a.b[1].c", "x"),
                                                                            ("e", None)]
