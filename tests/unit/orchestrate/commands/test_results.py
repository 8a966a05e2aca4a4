"""orchestrate/commands/results.py: ``report`` and ``compare``, rebuilding from a run's files (no server)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import orchestrate.report.plots
from locustfiles.records import RequestRecord
from orchestrate.cli import main
from orchestrate.results import VariantPaths
from tests.unit.orchestrate.commands.helpers import one_error_line


def test_report_of_a_missing_dir(tmp_path: Path, capsys):
    missing = tmp_path / "results" / "nope"
    assert main(["report", str(missing)]) == 2
    assert one_error_line(capsys) == f"tokenswarm: error: {missing}: no such run directory"


def test_report_rebuilds_a_summary_from_files(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setattr(orchestrate.report.plots, "latency", lambda *args: None)  # plotting is test_plots's
    run = tmp_path / "20260101T000000Z-demo"
    paths = VariantPaths.create(run, "base")
    paths.server_json.write_text(json.dumps({"status": "completed"}))
    paths.summary_json.write_text(json.dumps({"scenario": "demo", "status": "completed", "planned_prompts": 2}))
    records = [RequestRecord(request_id=f"local-{i}", prompt_index=i, worker="local", send_ts=1000.0 + i,
                             ttft_ms=100.0, e2e_ms=1000.0, tpot_ms=100.0, chunk_offsets_ms=[100.0, 200.0],
                             n_chunks=2, tokens_per_chunk=5.0, prompt_tokens=20, output_tokens=10)
               for i in range(2)]
    paths.records.write_text("".join(json.dumps(asdict(r)) + "\n" for r in records))
    assert main(["report", str(run)]) == 0
    out = capsys.readouterr().out.splitlines()
    # duration: first send 1000.0 to last end 1001.0 + 1.0 = 2.0 s; 40 prompt and 20 output tokens
    assert out[:4] == ["== base", "   2/2 done, 0 errors in 2.0 s",
                       "   prefill 20.0 tok/s, decode 10.0 tok/s, 1.00 req/s",
                       "   TTFT median 100 ms, TPOT median 100 ms"]
    summary = json.loads(paths.summary_json.read_text())
    assert summary["scenario"] == "demo" and summary["tokens"]["output"] == 20
    assert paths.summary_md.exists()


def test_report_keeps_the_slo_and_judges_goodput_again(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(orchestrate.report.plots, "latency", lambda *args: None)
    run = tmp_path / "20260101T000000Z-demo"
    paths = VariantPaths.create(run, "base")
    paths.server_json.write_text(json.dumps({"status": "completed"}))
    paths.summary_json.write_text(json.dumps({"scenario": "demo", "status": "completed",
                                              "slo": {"tpot_ms": 100.0, "e2e_ms": 999.0}}))
    # send 1000.0 and 1001.5, E2E 1000 and 500 ms: the first is over E2E 999; window 1000.0 → 1002.0 = 2.0 s
    records = [RequestRecord(request_id=f"local-{i}", prompt_index=i, worker="local", send_ts=send, ttft_ms=100.0,
                             e2e_ms=e2e, tpot_ms=100.0, output_tokens=10)
               for i, (send, e2e) in enumerate(((1000.0, 1000.0), (1001.5, 500.0)))]
    paths.records.write_text("".join(json.dumps(asdict(r)) + "\n" for r in records))
    assert main(["report", str(run)]) == 0
    summary = json.loads(paths.summary_json.read_text())
    assert summary["slo"] == {"tpot_ms": 100.0, "e2e_ms": 999.0}
    assert summary["goodput"]["requests_meeting"] == 1 and summary["goodput"]["requests_per_s"] == 0.5
    assert summary["goodput"]["missed_by"] == {"tpot_ms": 0, "e2e_ms": 1, "error": 0, "cancelled": 0}


# --- compare ------------------------------------------------------------------------------------

def test_compare_writes_and_prints_the_comparison(tmp_path: Path, capsys):
    runs = []
    for i, decode in enumerate((400.0, 440.0)):
        run = tmp_path / f"run{i}"
        paths = VariantPaths.create(run, "base")
        paths.server_json.write_text("{}")
        paths.summary_json.write_text(json.dumps({
            "status": "completed", "settings": {"server.model": "m"}, "requests": {"completed": 5, "errors": 0},
            "throughput": {"decode_tok_s": decode, "prefill_tok_s": 1000.0}, "latency_ms": {}}))
        runs.append(run)
    assert main(["compare", str(runs[0]), str(runs[1]), "--baseline", "run1/base"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "# Comparison"
    assert "## Deltas against run1/base" in out
    assert "| run0/base | +0.0 % | -9.1 % | – | – | – | – |" in out
    assert "- run0/base vs run1/base: decode ×1.10" in out
    assert out[-1] == f"written: {runs[0] / 'compare.md'} (the comparison of all 2 runs, in the first)"
    assert (runs[0] / "compare.json").exists() and not (runs[1] / "compare.md").exists()


def test_compare_errors_are_one_line(tmp_path: Path, capsys):
    assert main(["compare", str(tmp_path / "nope")]) == 2
    assert one_error_line(capsys) == f"tokenswarm: error: {tmp_path / 'nope'}: no such run directory"
    run = tmp_path / "run"
    paths = VariantPaths.create(run, "base")
    paths.server_json.write_text("{}")
    paths.summary_json.write_text(json.dumps({"status": "completed"}))
    assert main(["compare", str(run)]) == 2  # one variant result: nothing to compare with
    assert one_error_line(capsys).startswith(f"tokenswarm: error: compare: {run} hold(s) one variant result")
    other = VariantPaths.create(run, "other")
    other.server_json.write_text("{}")
    other.summary_json.write_text(json.dumps({"status": "completed"}))
    assert main(["compare", str(run), "--baseline", "x"]) == 2
    assert one_error_line(capsys) == "tokenswarm: error: --baseline x: no such variant; available: base, other"
