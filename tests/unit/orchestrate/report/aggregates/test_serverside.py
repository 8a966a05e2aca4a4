"""orchestrate/report/aggregates/serverside.py: the server's own view over a run, beside the client's."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from orchestrate.load.prometheus import read_server
from orchestrate.report.aggregates.servermetrics import metrics_timeline
from orchestrate.report.aggregates.serverside import quantile, server_side, server_side_line
from orchestrate.report.schema.steady import SteadyState

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures" / "metrics"
EMPTY = {"dialect": "vllm", "series": {"running": 0.0, "waiting": 0.0, "kv_usage": 0.0, "prompt_tokens": 0.0,
                                        "generation_tokens": 0.0, "prefix_queries": 0.0, "prefix_hits": 0.0},
         "histograms": {}, "extra": {}}


def test_histogram_quantiles_interpolate_within_their_bucket() -> None:
    buckets = [(0.02, 0.0), (0.04, 10.0), (0.1, 50.0), (0.25, 90.0), (0.5, 100.0), (float("inf"), 100.0)]
    assert quantile(buckets, 0.5) == pytest.approx((0.1, 0.04, 0.1))
    assert quantile(buckets, 0.99) == pytest.approx((0.475, 0.25, 0.5))
    assert quantile([(1.0, 0.0), (float("inf"), 4.0)], 0.5) == (1.0, 1.0, 1.0)  # the open bucket: its lower bound
    assert quantile([(1.0, 0.0)], 0.5) is None


def test_the_run_s_block_from_its_first_and_last_scrape(  # vLLM from nothing to the fixture's counts
        ) -> None:
    last = read_server((FIXTURES / "vllm.txt").read_text())
    records = pd.DataFrame({"status": ["ok"] * 3, "ttft_ms": [95.0, 104.0, 300.0], "e2e_ms": [9000.0] * 3})
    block = server_side([{"server": EMPTY}, {"server": last}, {"server": None}], records)
    assert block is not None and (block.dialect, block.samples) == ("vllm", 2)
    assert {g.name: (g.mean, g.max) for g in block.gauges} == {"running": (12.0, 24.0), "waiting": (4.0, 8.0),
                                                               "kv_usage": (0.21, 0.42)}
    assert (block.prompt_tokens, block.generation_tokens, block.prefix_hit_rate) == (20000.0, 25600.0, 0.25)
    ttft = {h.name: h for h in block.histograms}["ttft_s"]
    assert (ttft.count, ttft.mean_ms, ttft.p50_ms, ttft.p90_ms) == (100.0, 115.0, pytest.approx(100.0),
                                                                    pytest.approx(250.0))
    assert ttft.client_p50_ms == 104.0 and ttft.p50_bucket_ms == pytest.approx((40.0, 100.0)) and ttft.agrees
    e2e = {h.name: h for h in block.histograms}["e2e_s"]
    assert e2e.agrees is False and block.disagrees == ("e2e_s",)  # the client's 9 s against a 1–2.5 s bucket
    line = server_side_line(block)
    assert line is not None and line.startswith("the server's own /metrics (vllm, 2 scrapes): running mean 12.0")
    assert "KV cache mean 21 %, max 42 %" in line and "its E2E p50 2.2 s (bucket 1.0 s–2.5 s), the client's " \
                                                      "9.0 s: **differs**" in line
    assert server_side([{"server": None}], records) is None


def test_metrics_the_scenario_named_are_kept_even_from_an_unknown_server() -> None:
    readings = [read_server(f"proxy_queue_depth {n}\n", extra=("proxy_queue_depth",)) for n in (2, 4, 9)]
    block = server_side([{"server": r} for r in readings], pd.DataFrame({"status": ["ok"]}))
    assert block is not None and block.dialect == "unknown" and block.samples == 3
    (depth,) = block.extra
    assert (depth.name, depth.mean, depth.max) == ("proxy_queue_depth", 5.0, 9.0)
    assert server_side_line(block) == ("the server's own /metrics (unknown, 3 scrapes): proxy_queue_depth mean 5, "
                                       "max 9")


def scrape(t: float, generated: float, prompt: float) -> dict:
    return {"t": t, "server": {**EMPTY, "series": {**EMPTY["series"], "generation_tokens": generated,
                                                   "prompt_tokens": prompt}}}


def test_the_counters_within_the_steady_window_as_rates_beside_the_client_s() -> None:
    """Scrapes every second from t0 − 1; the window is 2–6 s after the first send: scrapes at t0+2 … t0+6."""
    t0 = 1_800_000_000.0
    samples = [scrape(t0 + s, generated=100.0 * max(s, 0) + (50.0 if s >= 4 else 0.0), prompt=20.0 * max(s, 0))
               for s in range(-1, 10)]
    steady = SteadyState(rule="r", start_s=2.0, end_s=6.5, decode_tok_s=110.0)
    block = server_side(samples, pd.DataFrame({"status": ["ok"]}), steady, t0)
    assert block is not None and block.window is not None
    w = block.window
    assert (w.start_s, w.end_s, w.samples) == (2.0, 6.0, 5)
    assert (w.generation_tokens, w.prompt_tokens) == (450.0, 80.0)  # 600 + 50 − 200; 120 − 40
    assert (w.generation_tok_s, w.prompt_tok_s, w.client_decode_tok_s) == (112.5, 20.0, 110.0)
    line = server_side_line(block)
    assert line is not None and line.endswith("in the steady window it generated 112.5 tok/s (the client received "
                                              "110.0)")
    assert server_side(samples, pd.DataFrame({"status": ["ok"]}), SteadyState(rule="r"), t0).window is None  # type: ignore[union-attr]
    short = SteadyState(rule="r", start_s=2.2, end_s=2.9)  # no two scrapes inside
    assert server_side(samples, pd.DataFrame({"status": ["ok"]}), short, t0).window is None  # type: ignore[union-attr]


def test_the_server_s_generated_tokens_per_scrape_interval_over_time(tmp_path: Path) -> None:
    t0 = 1_800_000_000.0
    rows = [scrape(t0, 0.0, 0.0), scrape(t0 + 2, 100.0, 0.0), scrape(t0 + 3, 130.0, 0.0), scrape(t0 + 4, 5.0, 0.0)]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rates = metrics_timeline(path)["server_generation_tok_s"].tolist()
    assert rates[1:3] == [50.0, 30.0] and math.isnan(rates[0]) and math.isnan(rates[3])  # a drop: a restart
