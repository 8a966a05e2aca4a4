"""orchestrate/load/prometheus.py: four servers' ``/metrics`` in one vocabulary (tests/fixtures/metrics)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrate.load.prometheus import DIALECTS, HISTOGRAMS, SERIES, dialect_of, read_server

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "metrics"


def reading(name: str) -> dict:
    found = read_server((FIXTURES / name).read_text())
    assert found is not None
    return dict(found)


def test_the_real_llama_server_s_queue_and_running_requests() -> None:
    found = reading("llamacpp-11434.txt")
    assert found["dialect"] == "llama.cpp" and found["histograms"] == {}
    assert found["series"] == {"running": 2.0, "waiting": 1.0, "prompt_tokens": 64.0, "generation_tokens": 0.0}


@pytest.mark.parametrize(("name", "dialect", "series", "histograms"), [
    ("vllm.txt", "vllm", {"running": 24.0, "waiting": 8.0, "kv_usage": 0.42, "prompt_tokens": 20000.0,
                          "generation_tokens": 25600.0, "prefix_queries": 20000.0, "prefix_hits": 5000.0},
     {"ttft_s", "itl_s", "queue_s", "e2e_s"}),
    ("sglang.txt", "sglang", {"running": 30.0, "waiting": 3.0, "kv_usage": 0.28, "prompt_tokens": 8000.0,
                              "generation_tokens": 6400.0, "prefix_hit_rate": 0.5}, {"ttft_s", "e2e_s"}),
    ("tgi.txt", "tgi", {"running": 16.0, "waiting": 5.0}, {"queue_s", "tpot_s", "e2e_s"}),
])
def test_each_server_s_names_land_on_the_same_series(name: str, dialect: str, series: dict[str, float],
                                                     histograms: set[str]) -> None:
    found = reading(name)
    assert found["dialect"] == dialect and found["series"] == series and set(found["histograms"]) == histograms


def test_a_histogram_keeps_its_cumulative_buckets_summed_over_labels() -> None:
    ttft = reading("vllm.txt")["histograms"]["ttft_s"]
    assert ttft == {"buckets": [[0.02, 0.0], [0.04, 10.0], [0.1, 50.0], [0.25, 90.0], [0.5, 100.0], [None, 100.0]],
                    "sum": 11.5, "count": 100.0}
    twice = "\n".join(['m:x_bucket{le="1",a="1"} 2', 'm:x_bucket{le="1",a="2"} 3', 'vllm:num_requests_running 1'])
    assert read_server(twice)["series"] == {"running": 1.0}  # type: ignore[index]


# Real texts, quoted from each project (tests/fixtures/metrics/README.md says where); the values below are read
# from those texts by eye.

def test_sglang_s_own_docs_example_lands_on_the_report_s_names() -> None:
    found = reading("sglang-docs.txt")
    assert found["dialect"] == "sglang" and found["extra"] == {}
    assert found["series"] == {"running": 162.0, "waiting": 2826.0, "kv_usage": 0.28, "prompt_tokens": 8.128902e+06,
                               "generation_tokens": 7.557572e+06, "prefix_hit_rate": 0.007507552643049313}
    assert set(found["histograms"]) == {"ttft_s", "e2e_s", "tpot_s"}  # sglang:func_latency_seconds is not mapped
    assert found["histograms"]["ttft_s"] == {
        "buckets": [[0.001, 0.0], [0.005, 0.0], [0.01, 0.0], [0.02, 0.0], [0.04, 1.0], [0.06, 3.0], [0.08, 6.0],
                    [0.1, 6.0], [0.25, 6.0], [0.5, 6.0], [0.75, 6.0], [1.0, 27.0], [2.5, 140.0], [5.0, 314.0],
                    [7.5, 941.0], [10.0, 1330.0], [15.0, 1970.0], [20.0, 2326.0], [25.0, 2417.0], [30.0, 2513.0],
                    [None, 11008.0]],
        "sum": 2.3518979474117756e+06, "count": 11008.0}
    e2e, tpot = found["histograms"]["e2e_s"], found["histograms"]["tpot_s"]
    assert (e2e["buckets"][0], e2e["buckets"][-1], e2e["sum"], e2e["count"]) == (
        [0.3, 0.0], [None, 11228.0], 3.116093850019932e+06, 11228.0)
    assert (tpot["buckets"][0], tpot["buckets"][-1], tpot["sum"], tpot["count"]) == (
        [0.005, 1.0], [None, 7.400757e+06], 866964.5791549598, 7.400757e+06)


def test_vllm_s_design_docs_example_with_its_elisions() -> None:
    found = reading("vllm-docs-design.txt")  # "$ curl ..." and "..." lines are not samples
    assert found["dialect"] == "vllm" and found["series"] == {"running": 8.0, "generation_tokens": 27453.0}
    assert found["histograms"] == {"ttft_s": {
        "buckets": [[0.001, 0.0], [0.005, 0.0], [0.01, 0.0], [0.02, 13.0], [0.04, 97.0], [0.06, 123.0],
                    [0.08, 138.0], [0.1, 140.0]],
        "sum": None, "count": 140.0}}  # quoted without its +Inf bucket and _sum


def test_vllm_s_usage_docs_example_is_vllm_with_nothing_the_report_reads() -> None:
    found = reading("vllm-docs-usage.txt")  # only vllm:iteration_tokens_total, which the report does not read
    assert found == {"dialect": "vllm", "series": {}, "histograms": {}, "extra": {}}


def test_vllm_s_deprecated_prefix_cache_names_still_read() -> None:
    """vLLM 0.10 still exports ``vllm:gpu_prefix_cache_*_total`` (deprecated for ``vllm:prefix_cache_*``)."""
    text = "\n".join(['vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25',
                      'vllm:gpu_prefix_cache_queries_total{engine="0",model_name="m"} 32.0',
                      'vllm:gpu_prefix_cache_hits_total{engine="0",model_name="m"} 8.0'])
    assert read_server(text) == {"dialect": "vllm", "series": {"kv_usage": 0.25, "prefix_queries": 32.0,
                                                               "prefix_hits": 8.0}, "histograms": {}, "extra": {}}


def test_unknown_text_is_no_reading_unless_asked_for_by_name() -> None:
    assert read_server("<html>not found</html>") is None and read_server("") is None
    assert read_server("my_queue_depth 7\n", extra=("my_queue_depth",)) == {
        "dialect": "unknown", "series": {}, "histograms": {}, "extra": {"my_queue_depth": 7.0}}
    assert dialect_of(["vllm:a", "vllm:b", "llamacpp:c"]) == "vllm"


def test_every_dialect_maps_only_names_the_report_reads() -> None:
    assert all(set(names) <= set(SERIES) | set(HISTOGRAMS) for names in DIALECTS.values())
