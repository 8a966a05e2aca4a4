"""orchestrate/report/render.py: a variant's report files written from its typed summary (what they say:
``test_console.py``, ``test_markdown.py``, ``test_plots.py``, ``test_vllm_format.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from orchestrate.report.aggregates.headline import summarize_records
from orchestrate.report.jsontypes import to_json
from orchestrate.report.markdown import summary_md
from orchestrate.report.render import write_reports
from orchestrate.results import VariantPaths
from tests.unit.orchestrate.report.test_console import failed_to_load_summary, reference_summary, typed


def test_write_reports(tmp_path: Path):
    paths = VariantPaths.create(tmp_path, "fa-off")
    summary = typed(reference_summary())
    write_reports(summary, paths)
    assert json.loads(paths.summary_json.read_text()) == to_json(summary)
    assert paths.summary_md.read_text() == summary_md(summary)
    assert not paths.plot_png.exists()  # no records, no plot


def test_write_reports_of_a_failed_variant(tmp_path: Path):
    paths = VariantPaths.create(tmp_path, "fa-on")
    summary = typed(failed_to_load_summary())
    write_reports(summary, paths, pd.DataFrame())
    assert json.loads(paths.summary_json.read_text())["status"] == "failed_to_load"
    assert "fattn.cu:110" in paths.summary_md.read_text()
    assert not paths.plot_png.exists()


def test_write_reports_plots_the_records(tmp_path: Path):
    pytest.importorskip("matplotlib")
    from dataclasses import asdict

    from locustfiles.records import RequestRecord
    records = pd.DataFrame([asdict(RequestRecord(
        request_id=f"local-{i}", prompt_index=i, worker="local", send_ts=1000.0 + i, ttft_ms=100.0 * (i + 1),
        e2e_ms=300.0 * (i + 1), tpot_ms=50.0, chunk_offsets_ms=[100.0 * (i + 1), 150.0 * (i + 1)], n_chunks=2,
        tokens_per_chunk=1.0, output_tokens=2, prompt_tokens=10)) for i in range(3)])
    paths = VariantPaths.create(tmp_path, "base")
    summary = typed({**reference_summary(), **to_json(summarize_records(records).blocks())})
    write_reports(summary, paths, records)
    assert paths.plot_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
