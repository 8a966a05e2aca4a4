"""Issue 22's workloads on the real parts: llama.cpp's ``llama-server`` (build 11434) with Gemma 3 270M,
driven by ``tokenswarm run --url``: prompts of exact lengths (``dataset: random``), replies that run to
``max_tokens`` (``ignore_eos``), and a reasoning stream (``--reasoning-format deepseek``).

Gemma 3 270M does not think on its own. A chat template that renders ``reasoning_content`` in
``<think>`` tags (``tests/fixtures/reasoning-template.jinja``) makes llama.cpp's parser stream what the
model writes inside them as ``reasoning_content``, and a grammar (``tests/fixtures/reasoning.gbnf``,
the server's default for every request) makes every reply think first, then answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrate.server.launchers.base import Launcher
from tests.conftest import start_real_server
from tests.helpers import read_jsonl, tokenswarm_run

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
N = 6


@pytest.fixture(scope="module")
def server(llama_server_binary: Path, gemma_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launcher]:
    """The real server for this module's plain runs, on both cores (4 slots of 2,048 tokens)."""
    with start_real_server(tmp_path_factory.mktemp("real-server"), llama_server_binary, {"threads": 2}) as launcher:
        yield launcher


def run(tmp_path: Path, url: str, load: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``tokenswarm run --url`` of N prompts at 4 users: the summary and the records."""
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"name": "real", "load": {"users": 4, "num_prompts": N, "seed": 1,
                                                             "warmup_prompts": 0, **load}}))
    proc, run_dir = tokenswarm_run(tmp_path, path, "--url", url, timeout_s=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    variant = run_dir / "default"
    return json.loads((variant / "summary.json").read_text()), read_jsonl(variant / "requests.jsonl")


def test_random_prompts_arrive_at_their_exact_length_and_every_reply_at_its_max_tokens(
        server: Launcher, tmp_path: Path) -> None:
    """``--dataset random --input-tokens 200 --output-tokens 32``: every request's ``usage`` says 200 and 32,
    and the server's own /metrics counted 200·N prompt tokens (processed + cached) and 32·N output tokens."""
    summary, records = run(tmp_path, server.url or "", {"dataset": "random", "input_tokens": 200,
                                                             "output_tokens": 32})
    assert [(r["status"], r["prompt_tokens"], r["output_tokens"]) for r in records] == [("ok", 200, 32)] * N
    assert summary["sampling"]["token_counter"] == "server_tokenize" and "inexact" not in summary["sampling"]
    assert summary["settings"]["load.ignore_eos"] is True
    server = summary["server_metrics"]["vs_records"]
    assert server["prefill_tokens"]["server"] + server["cached_tokens"]["server"] == 200 * N
    assert server["output_tokens"]["server"] == 32 * N


def test_ignore_eos_on_sharegpt_leaves_no_short_or_empty_reply(server: Launcher, tmp_path: Path) -> None:
    """Real ShareGPT prompts with ``ignore_eos``: the model may not end a reply early, so none is short and none
    is EOS-only; the settings and the prompts line say it was sent."""
    summary, records = run(tmp_path, server.url or "", {
        "dataset": "sharegpt-v3", "allow_truncated": True, "max_tokens": 24, "ignore_eos": True,
        "sampling": {"max_prompt_tokens": 160}})
    assert all(r["status"] == "ok" and r["output_tokens"] == r["max_tokens"] for r in records)
    assert summary["requests"]["short_replies"] == 0 and summary["requests"]["no_content"] == 0
    assert summary["settings"]["load.ignore_eos"] is True


@pytest.fixture
def thinking_server(llama_server_binary: Path, gemma_model: Path, tmp_path: Path) -> Iterator[Launcher]:
    flags = {"reasoning-format": "deepseek", "chat-template-file": str(FIXTURES / "reasoning-template.jinja"),
             "grammar-file": str(FIXTURES / "reasoning.gbnf"), "threads": 2}
    with start_real_server(tmp_path / "thinking-server", llama_server_binary, flags) as launcher:
        yield launcher


def test_a_real_reasoning_stream_times_its_first_token_and_its_answer_apart(
        thinking_server: Launcher, tmp_path: Path) -> None:
    """llama.cpp streams the thinking as ``reasoning_content`` and reports no reasoning count: TTFT is the first
    reasoning event, TTFO the first answer event after the last reasoning one, one token per event; the
    answer's TPOT leaves the thinking out."""
    summary, records = run(tmp_path, thinking_server.url or "", {
        "dataset": "sharegpt-v3", "allow_truncated": True, "max_tokens": 48,
        "sampling": {"max_prompt_tokens": 120, "fixed_output_tokens": 48}})
    thought = " First I read it, then I answer."
    for r in records:
        assert r["status"] == "ok" and r["finish_reason"] == "stop", r
        assert r["reasoning_tokens_source"] == "chunks"
        assert len(thought.split()) <= r["reasoning_tokens"] <= len(thought)  # tokens of the grammar's text
        offsets = r["chunk_offsets_ms"]
        assert r["ttft_ms"] == pytest.approx(offsets[0], abs=1e-3)
        assert r["ttfo_ms"] == pytest.approx(offsets[r["reasoning_tokens"]], abs=1e-3)  # the first answer event
        answer = r["output_tokens"] - r["reasoning_tokens"]
        assert r["answer_tpot_ms"] == pytest.approx((r["e2e_ms"] - r["ttfo_ms"]) / (answer - 1))
    reasoning = summary["reasoning"]
    assert reasoning["requests"] == N and reasoning["tokens_source"] == ["chunks"]
    assert reasoning["ttfo_ms"]["p50"] > summary["latency_ms"]["ttft"]["p50"]
    assert any("one per reasoning event" in note for note in summary["notes"])
