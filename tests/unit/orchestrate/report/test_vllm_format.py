"""orchestrate/report/vllm_format.py: ``vllm_bench.json`` from a fixed record set, its fields, types and values by hand."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from locustfiles.records import CANCELLED, ERROR, OK, RequestRecord
from orchestrate.report.aggregates.goodput import goodput
from orchestrate.report.aggregates.headline import summarize_records
from orchestrate.report.aggregates.recordsfile import read_records
from orchestrate.report.jsontypes import from_json
from orchestrate.report.schema import Summary
from orchestrate.report.schema.server import Server
from orchestrate.report.vllm_format import DETAILED, vllm_bench, write_vllm_bench
from orchestrate.scenario.settings import load_of
from orchestrate.scenario.spec import LoadSpec

T0 = 1_700_000_000.0
CONTEXT_ERROR = "http_400:exceed_context_size_error"


def records() -> list[RequestRecord]:
    """Written in finish order; vLLM lists requests in send order (r0, r1, r2, r3).

    ==  =====  =========  ===================  ===  ====  ==============================
    #   send   status     chunks (ms)          out  E2E   prompt tokens
    ==  =====  =========  ===================  ===  ====  ==============================
    r0  +0.0   ok         100 150 250           3    300  50
    r1  +0.5   ok         200 260 300 340       4    400  35
    r2  +1.0   error 400  none                  –      5  none (4000 measured beforehand)
    r3  +1.2   cancelled  100                   –      –  none (40 measured beforehand)
    ==  =====  =========  ===================  ===  ====  ==============================

    TTFT 100, 200; TPOT (300 − 100)/2 = 100, (400 − 200)/3 = 66.67; gaps 50 100 | 60 40 40.
    """
    r0 = RequestRecord(request_id="local-0", prompt_index=0, worker="local", send_ts=T0, status=OK, ttft_ms=100.0,
                       e2e_ms=300.0, tpot_ms=100.0, chunk_offsets_ms=[100.0, 150.0, 250.0], n_chunks=3,
                       tokens_per_chunk=1.0, prompt_tokens=50, expected_prompt_tokens=50, output_tokens=3)
    r1 = RequestRecord(request_id="local-1", prompt_index=1, worker="local", send_ts=T0 + 0.5, status=OK,
                       ttft_ms=200.0, e2e_ms=400.0, tpot_ms=200.0 / 3, chunk_offsets_ms=[200.0, 260.0, 300.0, 340.0],
                       n_chunks=4, tokens_per_chunk=1.0, prompt_tokens=35, expected_prompt_tokens=35, output_tokens=4)
    r2 = RequestRecord(request_id="local-2", prompt_index=2, worker="local", send_ts=T0 + 1.0, status=ERROR,
                       error_class=CONTEXT_ERROR, error_detail="request (4000 tokens) exceeds the context (2048)",
                       http_status=400, e2e_ms=5.0, expected_prompt_tokens=4000)
    r3 = RequestRecord(request_id="local-3", prompt_index=3, worker="local", send_ts=T0 + 1.2, status=CANCELLED,
                       error_class="cancelled", ttft_ms=100.0, chunk_offsets_ms=[100.0], n_chunks=1,
                       expected_prompt_tokens=40)
    return [r1, r0, r3, r2]


LOAD = LoadSpec(users=2, max_tokens=256)
"""The load the study ran: two closed-loop users."""


def summary_and_frame(slo: dict[str, float] | None = None) -> tuple[Summary, pd.DataFrame]:
    df = pd.DataFrame([asdict(r) for r in records()])
    head = summarize_records(df)
    summary = Summary(scenario="study", variant="fa-off", planned_prompts=4,
                      settings={"load.users": 2, "load.max_tokens": 256}, load=LOAD,
                      server=from_json(Server, {"facts": {"model_id": "gemma-4-E4B-Q4_K_M.gguf"}}),
                      goodput=goodput(df, slo, head.duration_s), **head.blocks())
    return summary, df


FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "date": str, "backend": str, "endpoint_type": str, "label": str, "model_id": str, "tokenizer_id": str,
    "num_prompts": int, "request_rate": (str, float), "burstiness": float, "max_concurrency": int,
    "duration": float, "completed": int, "failed": int, "total_input_tokens": int, "total_output_tokens": int,
    "request_throughput": float, "request_goodput": (float, type(None)), "output_throughput": float,
    "total_token_throughput": float, "input_lens": list, "output_lens": list, "ttfts": list, "itls": list,
    "latencies": list, "start_times": list, "generated_texts": list, "errors": list,
    "max_output_tokens_per_s": float, "max_concurrent_requests": int,
}
for _metric in ("ttft", "tpot", "itl", "e2el"):
    for _stat in ("mean", "median", "std", "p50", "p90", "p95", "p99"):
        FIELD_TYPES[f"{_stat}_{_metric}_ms"] = float
    FIELD_TYPES[f"percentiles_{_metric}_ms"] = list


def test_every_field_with_its_type_and_json_without_nan(tmp_path: Path) -> None:
    summary, df = summary_and_frame()
    path = write_vllm_bench(summary, df, tmp_path / "vllm_bench.json", LOAD, detailed=True)
    assert path is not None
    bench = json.loads(path.read_text())
    json.dumps(bench, allow_nan=False)  # dashboards parse strict JSON
    for key, kind in FIELD_TYPES.items():
        assert key in bench, key
        assert isinstance(bench[key], kind) and not isinstance(bench[key], bool), (key, bench[key])
    for key in ("input_lens", "output_lens"):
        assert all(isinstance(x, int) for x in bench[key]), key
    assert all(isinstance(x, float) for x in bench["ttfts"] + bench["latencies"] + bench["start_times"])
    assert all(isinstance(gaps, list) and all(isinstance(g, float) for g in gaps) for gaps in bench["itls"])
    assert all(len(bench[key]) == 4 for key in ("input_lens", "output_lens", "ttfts", "itls", "latencies",
                                                 "start_times", "generated_texts", "errors"))
    assert bench["percentiles_ttft_ms"] == [[50.0, bench["p50_ttft_ms"]], [90.0, bench["p90_ttft_ms"]],
                                            [95.0, bench["p95_ttft_ms"]], [99.0, bench["p99_ttft_ms"]]]


def test_without_save_detailed_the_per_request_lists_are_left_out_as_vllm_does(tmp_path: Path) -> None:
    summary, df = summary_and_frame()
    full = vllm_bench(summary, df, LOAD, detailed=True)
    bench = json.loads(write_vllm_bench(summary, df, tmp_path / "v.json", LOAD).read_text())  # type: ignore[union-attr]
    assert full is not None and set(full) - set(bench) == set(DETAILED) and set(bench) <= set(full)
    assert bench["latencies"] == [pytest.approx(x) for x in full["latencies"]]  # vLLM keeps this one
    assert bench["p99_itl_ms"] == full["p99_itl_ms"] and bench["completed"] == full["completed"]


def test_values_by_hand() -> None:
    summary, df = summary_and_frame()
    bench = vllm_bench(summary, df, LOAD, detailed=True)
    assert bench is not None
    assert (bench["backend"], bench["endpoint_type"], bench["label"]) == ("openai-chat", "openai-chat",
                                                                          "study/fa-off")
    assert bench["model_id"] == bench["tokenizer_id"] == "gemma-4-E4B-Q4_K_M.gguf"
    # closed loop: vLLM's "inf" rate, its default burstiness, the users as max_concurrency
    assert (bench["request_rate"], bench["burstiness"], bench["max_concurrency"]) == ("inf", 1.0, 2)
    assert bench["num_prompts"] == 4
    # the last end: r3 (cancelled, no E2E) at +1.2 s; vLLM's date format, local time
    assert bench["date"] == datetime.fromtimestamp(T0 + 1.2).strftime("%Y%m%d-%H%M%S")
    # duration: first send +0.0 → last end +1.2 (r3's send; r2 ends at +1.005) = 1.2 s
    assert bench["duration"] == pytest.approx(1.2)
    assert (bench["completed"], bench["failed"]) == (2, 2)
    assert (bench["total_input_tokens"], bench["total_output_tokens"]) == (50 + 35, 3 + 4)
    assert bench["request_throughput"] == pytest.approx(2 / 1.2)
    assert bench["output_throughput"] == pytest.approx(7 / 1.2)
    assert bench["total_token_throughput"] == pytest.approx((85 + 7) / 1.2)
    assert bench["request_goodput"] is None  # no SLO: null, as vLLM writes without --goodput
    # per request, in send order, SECONDS; failed requests: output 0, latency 0.0, TTFT when a chunk came
    assert bench["input_lens"].tolist() == [50, 35, 4000, 40]
    assert bench["output_lens"].tolist() == [3, 4, 0, 0]
    assert bench["ttfts"].tolist() == pytest.approx([0.1, 0.2, 0.0, 0.1])
    assert bench["latencies"].tolist() == pytest.approx([0.3, 0.4, 0.0, 0.0])
    assert bench["start_times"].tolist() == pytest.approx([T0, T0 + 0.5, T0 + 1.0, T0 + 1.2])
    assert list(bench["itls"]) == [[0.05, 0.1], [0.06, 0.04, 0.04], [], []]
    assert bench["generated_texts"] == [""] * 4
    assert bench["errors"] == ["", "", f"{CONTEXT_ERROR}: request (4000 tokens) exceeds the context (2048)",
                               "cancelled"]
    # aggregates in ms over completed requests, numpy's estimators as vLLM uses them
    assert bench["median_ttft_ms"] == pytest.approx(150.0)  # between 100 and 200 (summary.json's p50 is 100)
    assert summary.latency_ms.ttft is not None and summary.latency_ms.ttft.p50 == 100.0
    assert bench["mean_ttft_ms"] == pytest.approx(150.0) and bench["std_ttft_ms"] == pytest.approx(50.0)
    assert bench["p99_ttft_ms"] == pytest.approx(199.0)  # 100 + 0.99 × 100, linear interpolation
    assert bench["mean_tpot_ms"] == pytest.approx((100 + 200 / 3) / 2)  # 83.33
    # ITL pooled unweighted: 50 100 60 40 40 → sorted 40 40 50 60 100
    assert bench["mean_itl_ms"] == pytest.approx(58.0) and bench["median_itl_ms"] == pytest.approx(50.0)
    assert bench["p90_itl_ms"] == pytest.approx(84.0)  # rank 3.6: 60 + 0.6 × 40
    assert (bench["median_e2el_ms"], bench["p99_e2el_ms"]) == (pytest.approx(350.0), pytest.approx(399.0))
    # r0 [0, 0.3) and r1 [0.5, 0.9) never overlap; every token arrives in second 0 (r0's at 0.10–0.25 s,
    # r1's at 0.70–0.84 s): 3 + 4 = 7 tokens
    assert bench["max_concurrent_requests"] == 1 and bench["max_output_tokens_per_s"] == 7.0


def test_request_goodput_is_the_summary_goodput() -> None:
    summary, df = summary_and_frame(slo={"ttft_ms": 150.0})
    bench = vllm_bench(summary, df, LOAD)
    assert bench is not None and summary.goodput is not None
    # r0 (TTFT 100) meets, r1 (200) does not: 1 request / 1.2 s
    assert bench["request_goodput"] == pytest.approx(1 / 1.2) == summary.goodput.requests_per_s


def test_nothing_sent_writes_nothing_and_removes_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "vllm_bench.json"
    stale.write_text("{}")
    empty = pd.DataFrame()
    assert write_vllm_bench(Summary(**summarize_records(empty).blocks()), empty, stale) is None
    assert not stale.exists()
    assert write_vllm_bench(Summary(), None, stale) is None


@pytest.mark.parametrize("settings, expected", [
    pytest.param({"load.users": 32}, ("inf", 1.0, 32), id="closed_loop"),
    pytest.param({"load.users": 64, "load.rate": 20, "load.arrival": "poisson", "load.burstiness": 0.5},
                 (20.0, 0.5, 64), id="open_loop_poisson"),
    pytest.param({"load.users": 64, "load.rate": 20.0, "load.arrival": "constant", "load.burstiness": None},
                 (20.0, "inf", 64), id="open_loop_constant"),
    pytest.param({"load.users": 32, "load.stages": [{"duration_s": 10, "users": 4, "spawn_rate": 4},
                                                     {"duration_s": 10, "users": 16, "spawn_rate": 8}]},
                 ("inf", 1.0, 16), id="stages_the_largest"),
    pytest.param({"load.users": [1, 4, 16]}, ("inf", 1.0, None), id="a_sweep_variant_has_no_one_value"),
])
def test_traffic_from_the_load_settings(settings: dict[str, Any], expected: tuple[Any, Any, Any]) -> None:
    """The load as the run had it, and as ``settings.load_of`` reads it back from a folder written before
    ``run.json`` kept it (a sweep's own summary has none)."""
    summary, df = summary_and_frame()
    bench = vllm_bench(summary, df, load_of(settings))
    assert bench is not None
    assert (bench["request_rate"], bench["burstiness"], bench["max_concurrency"]) == expected


# --- the columnar form of a long run's records -----------------------------------------------------------

def test_the_columnar_frame_gives_the_same_file(tmp_path: Path) -> None:
    summary, df = summary_and_frame()
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(r.to_json() + "\n" for r in records()))
    lists = json.loads(write_vllm_bench(summary, df, tmp_path / "a.json", LOAD, True).read_text())  # type: ignore[union-attr]
    cols = json.loads(write_vllm_bench(summary, read_records(path), tmp_path / "b.json", LOAD, True).read_text())  # type: ignore[union-attr]
    assert cols == lists


def test_itls_are_written_at_the_records_resolution(tmp_path: Path) -> None:
    # 152.4106 − 138.266 is 14.144599999999997 in floats; the offsets' 4 decimals make it 14.1446 ms
    r = records()[1]
    r.chunk_offsets_ms = [138.266, 152.4106, 160.0]
    summary, _ = summary_and_frame()
    df = pd.DataFrame([asdict(r)])
    bench = json.loads(write_vllm_bench(summary, df, tmp_path / "v.json", LOAD, True).read_text())  # type: ignore[union-attr]
    assert bench["itls"] == [[0.0141446, 0.0075894]]
