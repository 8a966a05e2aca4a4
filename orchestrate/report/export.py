"""``tokenswarm export``: a run's records, its sampled time series and its summary as Parquet or CSV, for programs
(pandas, DuckDB, Polars, a spreadsheet) that would rather not parse JSON lines.

Stage: report (from files alone). Per variant folder, beside the files they come from:

- ``requests.parquet|csv``: one row per record of ``requests.jsonl``, read in blocks (``recordsfile``), so a
  million records never sit in memory at once. Integer fields are int64, times float64, ``chunk_offsets_ms`` a
  list of float64 (in CSV: its JSON text).
- ``metrics.parquet|csv``: one row per sample of ``metrics.jsonl``, nested keys flattened with dots
  (``metrics.requests_processing``, ``host.steal_pct``).
- ``summary.parquet|csv``: every leaf of ``summary.json`` as a row (``figure``, ``number`` or ``text``):
  ``latency_ms.ttft.p50``, ``capacity.probes[2].passed``...
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from orchestrate.errors import ResultsError
from orchestrate.report.aggregates.chunkcolumn import COLUMN
from orchestrate.report.aggregates.recordsfile import COLUMNS_SCHEMA, record_tables
from orchestrate.report.aggregates.servermetrics import jsonl_rows
from orchestrate.results import VariantPaths

FORMATS = ("parquet", "csv")
SUMMARY_SCHEMA = pa.schema([("figure", pa.string()), ("number", pa.float64()), ("text", pa.string())])


def export_variant(paths: VariantPaths, fmt: str, out: Path) -> list[Path]:
    """Every file of one variant folder that has data, written into ``out``; the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if paths.records.is_file():
        written.append(export_records(paths.records, out / f"requests.{fmt}", fmt))
    if paths.metrics.is_file():
        written.append(export_samples(paths.metrics, out / f"metrics.{fmt}", fmt))
    if paths.summary_json.is_file():
        written.append(export_summary(paths.summary_json, out / f"summary.{fmt}", fmt))
    return written


def export_records(records: Path, out: Path, fmt: str) -> Path:
    """``requests.jsonl`` → ``out``, a block at a time."""
    schema = COLUMNS_SCHEMA if fmt == "parquet" else _csv_schema(COLUMNS_SCHEMA)
    writer: Any = pq.ParquetWriter(out, schema) if fmt == "parquet" else pacsv.CSVWriter(out, schema)
    with writer:
        for table in record_tables(records):
            try:
                table = table.cast(COLUMNS_SCHEMA)  # safe: a fraction in an integer field raises
            except pa.ArrowInvalid as exc:
                raise ResultsError(f"{records}: a record does not fit its field's type ({exc})") from None
            writer.write_table(table if fmt == "parquet" else _offsets_as_json(table))
    return out


def _csv_schema(schema: pa.Schema) -> pa.Schema:
    return schema.set(schema.get_field_index(COLUMN), pa.field(COLUMN, pa.string()))


def _offsets_as_json(table: pa.Table) -> pa.Table:
    """CSV has no lists: each record's chunk offsets as their JSON text."""
    text = [None if x is None else orjson.dumps(x).decode() for x in table.column(COLUMN).to_pylist()]
    return table.set_column(table.schema.get_field_index(COLUMN), COLUMN, pa.array(text, pa.string()))


def export_samples(metrics: Path, out: Path, fmt: str) -> Path:
    """``metrics.jsonl`` → ``out``, nested keys flattened with dots; a torn last line is left out."""
    frame = pd.json_normalize([row for row in jsonl_rows(metrics) if isinstance(row, dict)], sep=".")
    if fmt == "parquet":
        frame.to_parquet(out, index=False)
    else:
        frame.to_csv(out, index=False)
    return out


def leaves(data: Any, at: str = "") -> Iterator[tuple[str, Any]]:
    """Every scalar of parsed JSON with its path: ``a.b``, ``a.list[2].c``; an empty list or object is no leaf."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from leaves(value, f"{at}.{key}" if at else str(key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from leaves(value, f"{at}[{i}]")
    else:
        yield at, data


def export_summary(summary: Path, out: Path, fmt: str) -> Path:
    """``summary.json`` → ``out``: a row per leaf, a number (booleans as 0/1) or a text."""
    rows = {"figure": [], "number": [], "text": []}  # type: dict[str, list[Any]]
    for figure, value in leaves(json.loads(summary.read_text())):
        rows["figure"].append(figure)
        number = isinstance(value, (int, float))  # a bool is one too: 1.0 / 0.0
        rows["number"].append(float(value) if number else None)
        rows["text"].append(None if number or value is None else str(value))
    table = pa.table(rows, schema=SUMMARY_SCHEMA)
    if fmt == "parquet":
        pq.write_table(table, out)
    else:
        pacsv.write_csv(table, out)
    return out
