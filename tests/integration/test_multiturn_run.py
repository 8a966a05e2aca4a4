"""Multi-turn replay end to end: the real embedded llama.cpp server, real `locust` processes.

One run of three variants on one seeded multi-turn file (``sharegpt_synth``, every conversation
past its opening pair): the prompt cache on, off (``cache_prompt: false``), and the history grown
from the server's own replies. The per-slot context (6144 / 4 slots = 1536 tokens) is small enough
that the sampler cuts a conversation, large enough that some reach a fourth turn.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import requests

from orchestrate.server.launchers.base import free_port
from orchestrate.standins.sharegpt_synth import write_sharegpt
from tests.helpers import read_jsonl, tokenswarm_run, write_scenario

pytestmark = pytest.mark.integration

CONVERSATIONS = 16
LOAD = {"users": 4, "num_prompts": CONVERSATIONS, "max_tokens": 8, "mode": "multi_turn", "max_turns": 4}
SERVER = {"flags": {"parallel": 4, "threads": 1, "ctx-size": 6144}}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("multiturn")
    dataset = write_sharegpt(tmp / "conversations.json", 60, seed=1, multi_turn_rate=1.0)
    scenario = write_scenario(tmp, server=SERVER, load={**LOAD, "dataset": str(dataset)}, variants=[
        {"name": "cache"}, {"name": "nocache", "load": {"cache_prompt": False}},
        {"name": "model", "load": {"history": "model", "think_time_s": [0, 0.02]}}])
    proc, run = tokenswarm_run(tmp, scenario)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return run


def files(run: Path, variant: str) -> tuple[dict[str, Any], list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """summary.json, the records, and the prompts file's conversations by index."""
    folder = run / variant
    prompts = {p["index"]: p for p in read_jsonl(folder / "prompts.jsonl")}
    return json.loads((folder / "summary.json").read_text()), read_jsonl(folder / "requests.jsonl"), prompts


def by_turn(records: list[dict[str, Any]]) -> dict[tuple[int, int], dict[str, Any]]:
    keyed = {(r["prompt_index"], r["turn"]): r for r in records}
    assert len(keyed) == len(records)  # every turn of every conversation sent once
    return keyed


def test_every_turn_is_sent_in_order_with_the_measured_history_and_cached_tokens_rise(run: Path) -> None:
    summary, records, prompts = files(run, "cache")
    planned = sum(len(p["turns"]) for p in prompts.values())
    assert summary["status"] == "completed" and len(prompts) == CONVERSATIONS
    assert summary["requests"]["sent"] == summary["requests"]["completed"] == summary["planned_prompts"] == planned
    keyed = by_turn(records)
    assert set(keyed) == {(i, k) for i, p in prompts.items() for k in range(len(p["turns"]))}
    per_slot = summary["server"]["facts"]["per_slot_ctx"]
    assert per_slot == 1536
    for (i, k), r in keyed.items():
        prompt_tokens, max_tokens = prompts[i]["turns"][k]
        assert r["conversation"] == prompts[i]["conversation_id"]
        # what /apply-template + /tokenize measured for the growing history is what the server counted
        assert r["prompt_tokens"] == r["expected_prompt_tokens"] == prompt_tokens
        assert r["output_tokens"] == r["max_tokens"] == max_tokens
        assert r["prompt_tokens"] == r["cached_tokens"] + r["prefill_tokens"]
        assert prompt_tokens + max_tokens <= per_slot
        if k:  # the same user, one turn after the other: sent after the previous reply ended
            prev = keyed[(i, k - 1)]
            assert r["send_ts"] >= prev["send_ts"] + prev["e2e_ms"] / 1000 - 1e-3

    rows = {row["turn"]: row for row in summary["turns"]}
    assert sorted(rows) == [0, 1, 2, 3] and rows[3]["requests"] >= 1
    cached = [rows[k]["cached_tokens_mean"] for k in (1, 2, 3)]
    assert 0 < cached[0] < cached[1] < cached[2], cached
    assert all(rows[k]["cache_hit_share"] > 0.2 for k in (1, 2, 3))
    assert rows[1]["prefill_tokens_mean"] < rows[1]["prompt_tokens_mean"]

    conv = summary["conversations"]
    assert (conv["planned"], conv["completed"], conv["turns_planned"]) == (CONVERSATIONS, CONVERSATIONS, planned)
    plan = json.loads((run / "cache" / "conversations.json").read_text())
    assert conv["cut"] == plan["cut"] == plan["cut_by"]["exceeds_slot_context"] >= 1
    assert conv["turns_dropped"] == plan["turns_dropped"] >= conv["cut"]
    assert "| turn | requests | TTFT p50" in (run / "cache" / "summary.md").read_text()
    print("cache: cached tokens per turn", [round(rows[k]["cached_tokens_mean"], 1) for k in sorted(rows)])


def test_cache_prompt_false_reports_no_cached_tokens_at_any_turn(run: Path) -> None:
    summary, records, prompts = files(run, "nocache")
    assert (run / "nocache" / "prompts.jsonl").read_text() == (run / "cache" / "prompts.jsonl").read_text()
    assert summary["requests"]["completed"] == summary["planned_prompts"] == len(by_turn(records))
    assert all(r["cached_tokens"] == 0 and r["prefill_tokens"] == r["prompt_tokens"] for r in records)
    rows = summary["turns"]
    assert [row["turn"] for row in rows] == [0, 1, 2, 3]
    assert all(row["cached_tokens_mean"] == 0 and row["cache_hit_share"] == 0 for row in rows)
    print("nocache: cached tokens per turn", [row["cached_tokens_mean"] for row in rows])


def test_history_model_sends_the_servers_replies_and_the_cache_reaches_into_them(run: Path) -> None:
    summary, records, prompts = files(run, "model")
    keyed = by_turn(records)
    assert summary["requests"]["completed"] == summary["planned_prompts"] == len(keyed)
    extends = 0
    for (i, k), r in keyed.items():
        if not k:
            assert r["expected_prompt_tokens"] == prompts[i]["turns"][0][0] == r["prompt_tokens"]
            continue
        prev = keyed[(i, k - 1)]
        assert r["expected_prompt_tokens"] is None
        # an 8-token reply in the history, not the dataset's long one
        assert r["prompt_tokens"] < prompts[i]["turns"][k][0]
        # the slot still holds the previous prompt and the reply it generated (all but its last token)
        extends += r["cached_tokens"] == prev["prompt_tokens"] + prev["output_tokens"] - 1
    later = sum(1 for _, k in keyed if k)
    assert extends >= later / 2, (extends, later)
    rows = summary["turns"]
    assert rows[1]["cached_tokens_mean"] > rows[0]["prompt_tokens_mean"]


def test_master_and_workers_play_each_conversation_on_one_user(tmp_path: Path) -> None:
    dataset = write_sharegpt(tmp_path / "conversations.json", 40, seed=2, multi_turn_rate=1.0)
    scenario = write_scenario(tmp_path, server=SERVER, load={**LOAD, "num_prompts": 8, "dataset": str(dataset)})
    proc, run = tokenswarm_run(tmp_path, scenario, "--workers", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary, records, prompts = files(run, "v")
    keyed = by_turn(records)
    assert set(keyed) == {(i, k) for i, p in prompts.items() for k in range(len(p["turns"]))}
    assert summary["requests"]["completed"] == summary["planned_prompts"] == len(records)
    workers: dict[int, set[str]] = defaultdict(set)
    for r in records:
        workers[r["prompt_index"]].add(r["worker"])
    assert all(len(w) == 1 for w in workers.values())  # a conversation stays on its user
    assert len({w for ws in workers.values() for w in ws}) == 2
    ledger = json.loads((run / "v" / "workers.json").read_text())
    assert sum(ledger["records_by_worker"].values()) == len(records) and ledger["workers_lost"] == 0
    assert summary["turns"][1]["cached_tokens_mean"] > 0


def test_web_ui_start_runs_the_multi_turn_user(tmp_path: Path) -> None:
    """``--ui``: the class is picked at init, so the form's Start (POST /swarm) plays conversations too."""
    dataset = write_sharegpt(tmp_path / "conversations.json", 40, seed=2, multi_turn_rate=1.0)
    scenario = write_scenario(tmp_path, server=SERVER, load={**LOAD, "num_prompts": 6, "dataset": str(dataset)})
    results, port = tmp_path / "results", free_port()
    proc = subprocess.Popen([sys.executable, "-m", "orchestrate.cli", "run", str(scenario), "--results-dir",
                             str(results), "--ui", "--ui-quit-on-stop", "--web-port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 60
        while True:  # the server starts and the prompts are sampled before Locust's UI answers
            try:
                requests.get(url, timeout=1)
                break
            except requests.ConnectionError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
                time.sleep(0.2)
        started = requests.post(f"{url}/swarm", data={"user_count": 3, "spawn_rate": 3}, timeout=10)
        assert started.json()["success"] is True
        out, _ = proc.communicate(timeout=120)  # the last turn answered: Locust quits, tokenswarm reports
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out
    (run,) = results.iterdir()
    summary, records, prompts = files(run, "v")
    assert set(by_turn(records)) == {(i, k) for i, p in prompts.items() for k in range(len(p["turns"]))}
    assert summary["stopped_by"] == "num_prompts" and summary["conversations"]["completed"] == 6
