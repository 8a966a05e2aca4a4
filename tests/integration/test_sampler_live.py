"""orchestrate/load/sampler.py against the real embedded llama.cpp server: counters, memory, cached prompts."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from orchestrate.load.sampler import MetricsSampler
from orchestrate.report.aggregates.servermetrics import load_metrics, summarize_metrics
from orchestrate.server.launchers.embedded import EmbeddedLauncher

pytestmark = pytest.mark.integration


def stream_usage(url: str, prompt: str, max_tokens: int, cache_prompt: bool = True) -> dict[str, Any]:
    """The last event of a streamed chat completion (``usage`` and ``timings``)."""
    body = {"messages": [{"role": "user", "content": prompt}], "stream": True, "max_tokens": max_tokens,
            "stream_options": {"include_usage": True}, "cache_prompt": cache_prompt}
    last: dict[str, Any] = {}
    with requests.post(f"{url}/v1/chat/completions", json=body, stream=True, timeout=30,
                       headers={"Connection": "close"}) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith(b"data: {"):
                last = json.loads(line[6:])
    return last


def test_sampler_counts_what_the_requests_returned(
        embedded: Callable[..., EmbeddedLauncher], tmp_path: Path) -> None:
    server = embedded(parallel=2)
    assert server.url is not None
    out = tmp_path / "metrics.jsonl"
    prompt = "plea woul prul " * 30
    with MetricsSampler(server.url, server, out, interval_s=0.2):
        finals = [stream_usage(server.url, prompt, 200)]                 # prompt processed in full
        finals.append(stream_usage(server.url, prompt, 150))             # served from the prompt cache
        threads, results = [], [{} for _ in range(2)]                    # two at once, two slots
        for i, n in enumerate((120, 90)):
            def run(i: int = i, n: int = n) -> None:
                results[i] = stream_usage(server.url or "", f"woul prul {i} " * 10, n, cache_prompt=False)
            threads.append(threading.Thread(target=run))
            threads[-1].start()
        for thread in threads:
            thread.join()
        finals += results
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) >= 2
    assert all(line["server_memory_bytes"] > 0 and line["server_memory_source"] == "process_tree" for line in lines)
    assert all(line["metrics"] is not None for line in lines)

    summary = summarize_metrics(load_metrics(out))
    counters = summary.server_counters
    assert counters is not None
    usage = [f["usage"] for f in finals]
    timings = [f["timings"] for f in finals]
    assert counters.predicted_tokens == sum(u["completion_tokens"] for u in usage) == 200 + 150 + 120 + 90
    # prompt_tokens_total counts prefill work only (timings.prompt_n); cached tokens have their own counter
    assert counters.prompt_tokens == sum(t["prompt_n"] for t in timings)
    assert counters.cached_tokens == sum(t["cache_n"] for t in timings) > 0
    assert counters.prompt_tokens + counters.cached_tokens == sum(u["prompt_tokens"] for u in usage)
    assert timings[1]["cache_n"] == usage[1]["prompt_tokens"] - 1  # the last prompt token is always re-run
    assert (summary.server_decode_tok_s or 0) > 0 and (summary.server_prefill_tok_s or 0) > 0
    assert (summary.memory.peak_bytes or 0) > 0 and summary.memory.source == "process_tree"
