"""`tokenswarm run` end to end: the real embedded llama.cpp server, real `locust` processes.

Every assertion is an exact truth of the setup: the tiny model never stops early, so each request
produces exactly its requested max_tokens; prompt tokens are what /tokenize measured beforehand.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrate.server.launchers.embedded import EmbeddedLauncher
from tests.conftest import reference_server
from tests.helpers import read_jsonl, tokenswarm_run, write_scenario

pytestmark = pytest.mark.integration


def test_exact_counts_tokens_and_locust_agreement(tmp_path: Path) -> None:
    proc, run = tokenswarm_run(tmp_path, write_scenario(tmp_path, load={"users": 6, "num_prompts": 15}))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    variant = run / "v"
    summary = json.loads((variant / "summary.json").read_text())
    prompts = read_jsonl(variant / "prompts.jsonl")
    records = read_jsonl(variant / "requests.jsonl")

    assert summary["status"] == "completed"
    assert len(prompts) == 15 and len(records) == 15
    assert summary["requests"] == {"sent": 15, "completed": 15, "errors": 0, "cancelled": 0, "no_content": 0, "short_replies": 0,
                                   "errors_by_class": {}, "unsent": 0}
    assert sorted(r["prompt_index"] for r in records) == list(range(15))  # each prompt once
    # The tiny model cannot stop early: output is exactly the requested max_tokens.
    assert summary["tokens"]["output"] == sum(p["max_tokens"] for p in prompts)
    by_index = {p["index"]: p for p in prompts}
    for r in records:
        assert r["output_tokens"] == r["max_tokens"] == by_index[r["prompt_index"]]["max_tokens"]
        assert r["n_chunks"] == r["output_tokens"]  # one token per SSE event
        # What /tokenize measured before the run is what the server counted.
        assert r["prompt_tokens"] == r["expected_prompt_tokens"] == by_index[r["prompt_index"]]["prompt_tokens"]
        assert 0 < r["ttft_ms"] <= r["e2e_ms"]  # equal when a whole reply arrives in one network read
        assert r["chunk_offsets_ms"][0] == pytest.approx(r["ttft_ms"], abs=1e-3)
    assert summary["tokens"]["prompt"] == sum(p["prompt_tokens"] for p in prompts)
    # Locust's own stats, read from its JSON alone, agree with the records.
    check = summary["locust_crosscheck"]
    assert (check["requests"], check["failures"]) == (15, 0)
    assert check["csv"] == {"requests": 15, "failures": 0}  # locust_stats.csv rewritten at shutdown
    assert check["output_tokens"] == summary["tokens"]["output"]
    assert check["prompt_tokens"] == summary["tokens"]["prompt"]
    assert summary["crosscheck_agrees"] is True
    assert summary["speculative"] is None
    assert summary["sampling"]["token_counter"] == "server_tokenize"
    facts = json.loads((variant / "server.json").read_text())["facts"]
    assert (facts["total_slots"], facts["per_slot_ctx"]) == (4, 2048)
    assert "<|im_start|>" in facts["chat_template"] and facts["speculative"] is False
    for name in ("locust_stats.csv", "locust_stats_history.csv", "locust_failures.csv", "locust_stats.json",
                 "summary.md", "server.json", "server.log"):
        assert (variant / name).exists(), name
    assert "15/15 done, 0 errors" in (variant / "summary.md").read_text()
    assert "15/15 done, 0 errors" in proc.stdout
    bench = json.loads((variant / "vllm_bench.json").read_text())  # vllm bench serve's --save-result JSON
    assert (bench["completed"], bench["total_output_tokens"]) == (15, summary["tokens"]["output"])
    # one variant: nothing to compare, so no comparison (not an empty table of single bars)
    assert not any((run / name).exists() for name in ("compare.md", "compare.json", "compare.png"))
    assert "comparison:" not in proc.stdout


def test_more_users_than_prompts_sends_exactly_n(tmp_path: Path) -> None:
    proc, run = tokenswarm_run(tmp_path, write_scenario(tmp_path, load={"users": 8, "num_prompts": 5}))
    summary = json.loads((run / "v" / "summary.json").read_text())
    assert summary["requests"]["sent"] == 5 and summary["locust_crosscheck"]["requests"] == 5


def test_draft_model_reports_acceptance(tmp_path: Path) -> None:
    proc, run = tokenswarm_run(tmp_path, write_scenario(
        tmp_path, server={"draft_model": "tiny-draft", "flags": {"parallel": 2, "spec-draft-n-max": 4}},
        load={"users": 2, "num_prompts": 6}))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((run / "v" / "summary.json").read_text())
    spec = summary["speculative"]
    assert spec is not None and spec["draft_tokens"] > 0
    assert 0 < spec["accepted_tokens"] <= spec["draft_tokens"]
    assert spec["acceptance_rate"] == pytest.approx(spec["accepted_tokens"] / spec["draft_tokens"])
    assert summary["server"]["facts"]["speculative"] is True


def test_url_runs_against_a_server_already_running(tmp_path: Path,
                                                   embedded: Callable[..., EmbeddedLauncher]) -> None:
    server = embedded(parallel=4)
    scenario = write_scenario(tmp_path, server={"model": "/nonexistent.gguf"})  # never launched
    proc, run = tokenswarm_run(tmp_path, scenario, "--url", server.url or "", "--num-prompts", "7",
                               "--max-tokens", "8", "--users", "3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((run / "v" / "summary.json").read_text())
    assert summary["requests"]["completed"] == 7
    assert max(r["output_tokens"] for r in read_jsonl(run / "v" / "requests.jsonl")) <= 8
    assert summary["server"]["launcher"] == {"kind": "external", "url": server.url}
    assert server.exit_status() is None  # tokenswarm did not stop a server it did not start
    # provenance: what the server reported, nothing of the scenario's server section
    settings = summary["settings"]
    assert not any(k.startswith(("server.model", "server.flags", "server.draft_model")) for k in settings), settings
    assert settings["server.reported.total_slots"] == 4 and settings["server.reported.model"].startswith("tiny")
    md = (run / "v" / "summary.md").read_text()
    assert "/nonexistent.gguf" not in md and "parallel" not in md.split("###")[0]
    assert "— as the server reported it" in md and "4 slots ×" in md and "not started by tokenswarm" in md
    assert "using the server at" in proc.stdout and "starting external" not in proc.stdout


def test_time_cap_ends_the_run_early_and_says_so(tmp_path: Path) -> None:
    """Requests in flight at the cap are recorded as cancelled, not lost. The scripted server makes
    it certain that both users are mid-stream then: each reply takes 2 s (400 tokens, 5 ms apart),
    so at 3 s each user has finished one and is half-way through the next."""
    scenario = write_scenario(tmp_path, load={"users": 2, "num_prompts": 50, "max_tokens": 400, "max_seconds": 3})
    with reference_server(tmp_path / "server", "--ttft-ms", "5", "--itl-ms", "5", "--output-tokens", "400") as url:
        proc, run = tokenswarm_run(tmp_path, scenario, "--url", url)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((run / "v" / "summary.json").read_text())
    assert summary["stopped_by"] == "time_cap"
    req = summary["requests"]
    assert (req["completed"], req["cancelled"], req["errors"], req["sent"]) == (2, 2, 0, 4), req
    assert any("time cap" in note for note in summary["notes"])
    records = read_jsonl(run / "v" / "requests.jsonl")
    assert sorted(r["status"] for r in records) == ["cancelled", "cancelled", "ok", "ok"]
    for r in records:  # a cancelled request keeps what had arrived: about half its reply
        assert (r["n_chunks"] == 400) if r["status"] == "ok" else (50 < r["n_chunks"] < 350), r
        assert r["ttft_ms"] is not None and r["e2e_ms"] > r["ttft_ms"]

def test_a_server_that_fails_to_load_is_reported_and_the_next_variant_runs(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"this is not a gguf file" * 10)
    scenario = write_scenario(tmp_path, variants=[{"name": "broken", "server": {"model": str(garbage)}},
                                                  {"name": "good"}])
    proc, run = tokenswarm_run(tmp_path, scenario)
    assert proc.returncode == 1  # not every variant completed
    broken = json.loads((run / "broken" / "summary.json").read_text())
    assert broken["status"] == "failed_to_load"
    assert "GGUF" in broken["server"]["cause"]
    assert broken["server"]["log_tail"]
    good = json.loads((run / "good" / "summary.json").read_text())
    assert good["status"] == "completed" and good["requests"]["completed"] == 12
    assert "failed_to_load" in proc.stdout


def test_a_variant_cut_by_the_time_cap_is_no_clean_effect(tmp_path: Path) -> None:
    """tiny vs the slower tiny-deep under one time cap: the deep one completes only the first few
    prompts, so the pair is confounded by its prompt set, and says how many prompts were common."""
    scenario = tmp_path / "cut.yaml"
    scenario.write_text("name: cut\nserver: {launcher: embedded, model: tiny, flags: {parallel: 4, threads: 1}}\n"
                        "load: {dataset: 'synthetic:400', users: 4, num_prompts: 40, max_tokens: 64, max_seconds: 5}\n"
                        "matrix:\n  model: [tiny, tiny-deep]\n"
                        "host_limits: {foreign_cpu_pct: 100, steal_pct: 100}\n")  # the prompt sets are judged here, not the host (nor a VM's steal)
    proc, run = tokenswarm_run(tmp_path, scenario)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fast = json.loads((run / "model-tiny" / "summary.json").read_text())
    slow = json.loads((run / "model-tiny-deep" / "summary.json").read_text())
    assert fast["completed_prompts"] == list(range(40))
    assert slow["stopped_by"] == "time_cap" and 0 < len(slow["completed_prompts"]) < 40
    compared = json.loads((run / "compare.json").read_text())
    (pair,) = compared["effects"]
    assert pair["confounded_by"] == ["prompt_set"] and pair["factor"] == "server.model"
    assert pair["n_common_prompts"] == len(slow["completed_prompts"])
    # and its figures over the prompts both completed, from the records
    assert pair["over_common_prompts"]["ttft_p50_ms"] > 0 and pair["over_common_prompts"]["decode_tok_s"] > 0
    assert f"different prompts ({pair['n_common_prompts']} in common of 40 and" in (run / "compare.md").read_text()
