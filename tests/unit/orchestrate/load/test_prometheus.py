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


def test_unknown_text_is_no_reading_unless_asked_for_by_name() -> None:
    assert read_server("<html>not found</html>") is None and read_server("") is None
    assert read_server("my_queue_depth 7\n", extra=("my_queue_depth",)) == {
        "dialect": "unknown", "series": {}, "histograms": {}, "extra": {"my_queue_depth": 7.0}}
    assert dialect_of(["vllm:a", "vllm:b", "llamacpp:c"]) == "vllm"


def test_every_dialect_maps_only_names_the_report_reads() -> None:
    assert all(set(names) <= set(SERIES) | set(HISTOGRAMS) for names in DIALECTS.values())
