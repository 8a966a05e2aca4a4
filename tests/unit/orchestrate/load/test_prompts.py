"""orchestrate/load/prompts.py: dataset resolution and the estimate fallback (no server needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from locustfiles.dataset import Prompt
from orchestrate.load.prompts import prepare_prompts
from orchestrate.report.notes import notes
from orchestrate.report.schema.runfacts import Sampling
from orchestrate.report.schema.summary import Summary
from orchestrate.scenario.spec import LoadSpec
from orchestrate.server.preflight import ServerFacts
from orchestrate.standins.datasets import resolve_dataset


def test_synthetic_dataset_is_generated_once_and_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path))
    path = resolve_dataset("synthetic:50")
    assert path == tmp_path / "datasets" / "sharegpt-synthetic-50.json"
    assert len(json.loads(path.read_text())) == 50
    mtime = path.stat().st_mtime_ns
    assert resolve_dataset("synthetic:50").stat().st_mtime_ns == mtime
    assert resolve_dataset("~/x.json") == Path.home() / "x.json"


def test_synthetic_multiturn_conversations_all_go_past_the_opening_pair(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path))
    multi = json.loads(resolve_dataset("synthetic-multiturn:60").read_text())
    plain = json.loads(resolve_dataset("synthetic:60").read_text())
    assert len(multi) == 60 and (tmp_path / "datasets" / "sharegpt-synthetic-multiturn-60.json").exists()
    long = [len(c["conversations"]) >= 4 for c in multi]
    # every conversation but the single-turn shapes goes on; the plain file keeps about 15 %
    assert sum(long) >= 40 and sum(len(c["conversations"]) >= 4 for c in plain) < sum(long)


def test_server_without_tokenize_falls_back_to_the_estimate_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path))
    out = tmp_path / "prompts.jsonl"
    load = LoadSpec(dataset="synthetic:200", num_prompts=20, max_tokens=64)
    with requests.Session() as session:  # never used: no /tokenize
        prepared = prepare_prompts(load, ServerFacts(has_tokenize=False), "http://127.0.0.1:9", out, session)
    assert prepared.token_counter == "estimate_chars_div_4"
    prompts = [Prompt.from_json(line) for line in out.read_text().splitlines()]
    assert len(prompts) == 20 and [p.index for p in prompts] == list(range(20))
    assert all(p.max_tokens <= 64 for p in prompts)
    text = prompts[0].messages[0]["content"]
    assert prompts[0].prompt_tokens == -(-len(text) // 4)  # ceil(chars / 4)
    assert any("ESTIMATED" in n for n in notes(Summary(sampling=Sampling(token_counter=prepared.token_counter))))
