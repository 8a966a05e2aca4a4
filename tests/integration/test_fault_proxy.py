"""Faults between tokenswarm and the real ``llama-server`` (Gemma 3 270M): a proxy
(``tests/fixtures/fault_proxy.py``) resets, stalls, silences, cuts and slows chosen streams while
``tokenswarm run --url <proxy>`` replays a dataset, as a user runs it.

One run mixes the five faulted requests (each prompt names its fault) with clean ones: each fault
gets its class, counted apart; each faulted record holds exactly what the proxy delivered; every
clean request completes; nothing is lost and the run goes on (about 20 s on 2 cores, with the server's start).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from locustfiles.sse import read_stream
from tests.fixtures.fault_proxy import MODES, FaultProxy
from tests.helpers import read_jsonl, tokenswarm_run, write_file, write_scenario

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

EXPECTED = {"reset": "stream_cut", "stall": "timeout", "silence": "timeout", "cut": "stream_cut", "slow": None}
"""Each fault's ``error_class``; None: the request completes."""
TOPICS = ("a lighthouse keeper", "a dragon who learns to cook", "the first train across a desert",
          "a robot gardener", "two rival bakers", "a city under the sea", "a lost violin",
          "a clockmaker's apprentice")
CLEAN = len(TOPICS) - 1
READ_TIMEOUT_S = 4.0
MAX_TOKENS = 16
DONE_LINE = b"data: [DONE]\n"
REPLY = " ".join(["Once upon a time there was a story worth telling, and it went on and on."] * 4)


def fault_dataset(path: Path) -> Path:
    """A ShareGPT-format file: one conversation per fault (its prompt holds ``FAULT:<mode>``), then
    ``CLEAN`` ordinary ones; the conversation ids say which is which."""
    prompts = {f"fault-{mode}": f"FAULT:{mode} Tell me a long story about {topic}."
               for mode, topic in zip(MODES, TOPICS)}
    prompts |= {f"clean-{i}": f"Tell me a long story about {topic}." for i, topic in enumerate(TOPICS[1:])}
    return write_file(path.parent, json.dumps([
        {"id": cid, "conversations": [{"from": "human", "value": text}, {"from": "gpt", "value": REPLY}]}
        for cid, text in prompts.items()]), path.name)


def content_events(body: bytes) -> tuple[int, dict | None]:
    """Content events and ``usage`` in a stream body, parsed as tokenswarm parses one."""
    pieces = iter([body, b""])
    result = read_stream(lambda: next(pieces))
    return len(result.content_times), result.usage


def test_each_fault_is_classified_counted_apart_and_nothing_is_lost(tmp_path: Path,
                                                                    fault_proxy: FaultProxy) -> None:
    prompts = len(MODES) + CLEAN
    scenario = write_scenario(tmp_path, load={
        "dataset": str(fault_dataset(tmp_path / "faults.json")), "users": 4, "num_prompts": prompts,
        "max_tokens": MAX_TOKENS, "read_timeout_s": READ_TIMEOUT_S, "seed": 1})
    proc, run = tokenswarm_run(tmp_path, scenario, "--url", fault_proxy.url, timeout_s=300)
    summary = json.loads((run / "v" / "summary.json").read_text())
    assert summary["status"] == "completed", proc.stdout + proc.stderr  # the run went on past every fault
    records = read_jsonl(run / "v" / "requests.jsonl")
    conversation = {p["index"]: p["conversation_id"] for p in read_jsonl(run / "v" / "prompts.jsonl")}
    assert sorted(r["prompt_index"] for r in records) == list(range(prompts))  # one record per prompt
    by_id = {conversation[r["prompt_index"]]: r for r in records}

    faults = fault_proxy.by_mode()
    assert sorted(faults) == sorted(MODES), faults
    for mode, fault in faults.items():  # a reply too short to reach the fault point would go whole
        assert fault.reached, (mode, bytes(fault.delivered))
    for mode, error_class in EXPECTED.items():
        record, fault = by_id[f"fault-{mode}"], faults[mode]
        assert (record["status"], record["error_class"]) == ("error" if error_class else "ok", error_class), record
        # what arrived before the fault is kept: the bytes and the content chunks the proxy delivered
        delivered = bytes(fault.delivered)
        chunks, _ = content_events(delivered)
        if error_class is None:  # a complete stream is read up to the end of its [DONE] line, no further
            delivered = delivered[:delivered.index(DONE_LINE) + len(DONE_LINE)]
        assert record["bytes_received"] == len(delivered), (mode, record)
        assert record["n_chunks"] == chunks and len(record["chunk_offsets_ms"]) == chunks, (mode, record)
        if mode in ("reset", "stall", "cut"):
            assert chunks > 0, (mode, fault.delivered)  # mid-stream, after content
        if mode == "silence":
            assert chunks == 0 and record["ttft_ms"] is None
        if error_class == "timeout":  # it waited its read timeout, not the proxy's two-minute hold
            assert READ_TIMEOUT_S * 1000 <= record["e2e_ms"] < (READ_TIMEOUT_S + 20) * 1000, record
    slow = by_id["fault-slow"]  # one byte at a time: complete, the server's own counts
    _, usage = content_events(bytes(faults["slow"].delivered))
    assert usage and slow["output_tokens"] == usage["completion_tokens"] and slow["output_tokens_source"] == "usage"
    assert slow["prompt_tokens"] == usage["prompt_tokens"] == slow["expected_prompt_tokens"]
    assert len(faults["slow"].delivered) > 1000  # many one-byte reads, not one

    for cid, record in by_id.items():
        if cid.startswith("clean-"):
            assert record["status"] == "ok" and record["output_tokens"] > 0, record
    requests = summary["requests"]
    assert requests["errors_by_class"] == {"stream_cut": 2, "timeout": 2}, requests
    assert (requests["completed"], requests["errors"]) == (CLEAN + 1, 4), requests
    locust = summary["locust_crosscheck"]
    assert (locust["requests"], locust["failures"]) == (prompts, 4), locust
    # the server counted the faulted requests too: no more than the incomplete ones can explain
    # (a faulted request sent twice would show here)
    assert summary["server_metrics"]["within_tolerance"] is True, summary["server_metrics"]
