"""Trace replay on the real parts: the shipped Mooncake slice replayed by ``tokenswarm run --url`` against llama.cpp's
``llama-server`` (build 11434) with Gemma 3 270M.

Every request is sent on the trace's clock; each ``usage.prompt_tokens`` is its scaled trace length as the server
counts it, each reply its output length (``ignore_eos``); and the requests whose ``hash_ids`` begin with an earlier
request's run of blocks find those tokens cached on the server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from orchestrate.load.traces.files import SAMPLE, read_trace
from orchestrate.load.traces.window import fit_trace
from orchestrate.scenario.spec import TraceSpec
from orchestrate.server.launchers.base import Launcher
from tests.conftest import start_real_server
from tests.helpers import assert_report_rebuilds_every_key, read_jsonl, tokenswarm_run, undocumented_keys

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

SPEC = {"path": SAMPLE, "start_s": 140.0, "duration_s": 8.0, "input_scale": 1 / 64, "max_output_tokens": 8,
        "time_scale": 1.0}
"""Trace seconds 140–148: rows 397 and 432 share 48 leading blocks, 378 and 427 19 (the slice's deepest reuse)."""


@pytest.fixture(scope="module")
def server(llama_server_binary: Path, gemma_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launcher]:
    """Gemma 3's sliding-window layers keep no prefix to reuse unless the whole window is kept (``--swa-full``):
    without it this server reported 1 cached token for prompts that share 384 (measured)."""
    with start_real_server(tmp_path_factory.mktemp("trace-server"), llama_server_binary,
                           {"threads": 2, "swa-full": True}) as launcher:
        yield launcher


def shared_leading_tokens(blocks: list[tuple[int, ...]], block_tokens: int) -> list[int]:
    """Per request, the tokens of the longest run of leading blocks some earlier request began with."""
    out = []
    for j, mine in enumerate(blocks):
        best = 0
        for other in blocks[:j]:
            k = 0
            while k < min(len(mine), len(other)) and mine[k] == other[k]:
                k += 1
            best = max(best, k)
        out.append(best * block_tokens)
    return out


def test_the_shipped_slice_replays_exactly_on_the_real_server(server: Launcher, tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"name": "trace", "load": {"dataset": "trace", "users": 4, "trace": SPEC}}))
    proc, run_dir = tokenswarm_run(tmp_path, path, "--url", server.url or "", timeout_s=500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    variant = run_dir / "default"
    summary = json.loads((variant / "summary.json").read_text())
    records = sorted(read_jsonl(variant / "requests.jsonl"), key=lambda r: r["prompt_index"])
    requests, conditions = fit_trace(read_trace(SAMPLE), TraceSpec(**SPEC))

    arrivals = summary["arrivals"]
    assert (arrivals["mode"], arrivals["scheduled"], arrivals["sent"], arrivals["unsent"]) == \
        ("trace", len(requests), len(requests), 0)
    assert [r["status"] for r in records] == ["ok"] * len(requests)
    # lengths as the trace says, counted by the server; the few below the chat template's own tokens are counted
    assert all(r["prompt_tokens"] == r["expected_prompt_tokens"] for r in records)
    off = [(q.input_tokens, r["prompt_tokens"]) for r, q in zip(records, requests) if r["prompt_tokens"] != q.input_tokens]
    assert len(off) == summary["sampling"].get("inexact", 0)
    shortest = min(r["prompt_tokens"] for r in records)  # the chat template's own tokens and one of text
    assert all(want <= shortest < got <= shortest + 1 or want < got == shortest for want, got in off), off
    assert [r["output_tokens"] for r in records] == [q.output_tokens for q in requests]

    trace = summary["trace"]
    assert trace["conditions"]["requests"] == len(requests) and trace["conditions"]["block_tokens"] == 8
    expected = shared_leading_tokens([q.blocks for q in requests], conditions.block_tokens)
    deep = [(i, want, records[i]["cached_tokens"]) for i, want in enumerate(expected) if want >= 64]
    print(f"requests sharing >= 64 leading tokens with an earlier one (index, expected, cached): {deep}")
    assert deep, deep  # row 433 of the trace begins with row 398's 48 blocks: 384 tokens here
    assert all(cached >= 0.9 * want for _, want, cached in deep), deep  # llama.cpp re-processes a prompt's tail
    # every later request begins with block 0 (the trace's system prompt): the server cached at least it
    assert all(r["cached_tokens"] >= 8 for r in records[4:]), [r["cached_tokens"] for r in records]
    assert trace["server_cached_share"] >= trace["ideal_cached_share"] * 0.9
    assert undocumented_keys(summary) == [], "a trace run's every key is a row of docs/results.md"
    assert assert_report_rebuilds_every_key(run_dir, tmp_path / "rebuilt")  # trace.json and the schedule suffice


SESSIONS = [
    {"timestamp": 0, "prompt": "Plan a three-day trip to Rome for a family of four.", "max_tokens": 24,
     "session_id": "trip"},
    {"timestamp": 200, "prompt": "Explain why the sky is blue, briefly.", "max_tokens": 16},
    {"timestamp": 400, "prompt": "Write a haiku about autumn.", "max_tokens": 16, "session_id": "poem"},
    {"timestamp": 9000, "prompt": "Now add a day in Florence.", "max_tokens": 24, "session_id": "trip",
     "delay_ms": 700},
    {"timestamp": 9000, "prompt": "Another one, about winter.", "max_tokens": 16, "session_id": "poem",
     "delay_ms": 300},
    {"timestamp": 9500, "prompt": "Which day is the busiest?", "max_tokens": 12, "session_id": "trip",
     "delay_ms": 400},
]


def test_sessions_play_turn_by_turn_with_their_pauses_and_real_replies(server: Launcher, tmp_path: Path) -> None:
    """A tokenswarm trace of two sessions and a single request: each session's turn goes its ``delay_ms`` after
    the previous reply ended, with that reply (the server's own text) in its history, so each turn's prompt
    holds the one before and its reply, and the server serves that prefix from its cache."""
    trace = tmp_path / "sessions.jsonl"
    trace.write_text("".join(json.dumps(row) + "\n" for row in SESSIONS))
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"name": "sessions", "load": {"dataset": "trace", "users": 4,
                                                                 "trace": {"path": str(trace)}}}))
    proc, run_dir = tokenswarm_run(tmp_path, path, "--url", server.url or "", timeout_s=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    records = read_jsonl(run_dir / "default" / "requests.jsonl")
    assert len(records) == 6 and {r["status"] for r in records} == {"ok"}
    for name, delays in (("session-trip", [0.7, 0.4]), ("session-poem", [0.3])):
        turns = sorted((r for r in records if r["conversation"] == name), key=lambda r: r["turn"])
        assert [r["turn"] for r in turns] == list(range(len(delays) + 1))
        for before, after, delay in zip(turns, turns[1:], delays):
            pause = after["send_ts"] - (before["send_ts"] + before["e2e_ms"] / 1000)
            assert delay <= pause < delay + 0.1, (name, pause, delay)
            assert after["prompt_tokens"] > before["prompt_tokens"] + before["output_tokens"]  # its reply, then more
            assert after["cached_tokens"] >= before["prompt_tokens"]  # the turn before and (most of) its reply
            assert after["scheduled_ts"] is None  # only a session's first turn is on the trace's clock
    summary = json.loads((run_dir / "default" / "summary.json").read_text())
    assert summary["conversations"]["planned"] == 2 and summary["conversations"]["completed"] == 2
    assert [t["requests"] for t in summary["turns"]] == [2, 2, 1]
    assert summary["arrivals"]["scheduled"] == summary["arrivals"]["sent"] == 3
    assert undocumented_keys(summary) == []
