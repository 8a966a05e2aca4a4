"""Unit tests for orchestrate.standins.sharegpt_synth: determinism, length spread, sampler coverage."""

from __future__ import annotations

import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from locustfiles.dataset import DROP_RULES, SamplingConfig, load_sharegpt, sample_prompts
from orchestrate.standins.lexicon import pseudo_words
from orchestrate.standins.sharegpt_synth import generate_sharegpt, main, write_sharegpt
from tests.helpers import ROOT

VOCAB = set(pseudo_words(2000, seed=0))


def words(texts: list[str]) -> list[int]:
    return [len(t.split()) for t in texts]


def quantile(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))]


@pytest.fixture(scope="module", params=[0, 1, 2])
def data(request: pytest.FixtureRequest) -> list[dict]:
    return generate_sharegpt(2000, seed=request.param)


def opening_lengths(data: list[dict]) -> tuple[list[int], list[int]]:
    prompts, replies = [], []
    for c in data:
        turns = c["conversations"]
        if len(turns) >= 2 and turns[0]["from"] == "human" and turns[1]["from"] == "gpt":
            prompts.append(len(turns[0]["value"].split()))
            replies.append(len(turns[1]["value"].split()))
    return prompts, replies


def test_deterministic_and_seed_sensitive(tmp_path: Path) -> None:
    assert generate_sharegpt(50, seed=7) == generate_sharegpt(50, seed=7)
    assert generate_sharegpt(50, seed=7) != generate_sharegpt(50, seed=8)
    a = write_sharegpt(tmp_path / "a.json", 200, seed=3)
    b = write_sharegpt(tmp_path / "sub" / "b.json", 200, seed=3)
    assert a.read_bytes() == b.read_bytes()


def test_file_is_valid_sharegpt(tmp_path: Path) -> None:
    path = write_sharegpt(tmp_path / "d.json", 300)
    data = load_sharegpt(path)
    assert len(data) == 300 and len({c["id"] for c in data}) == 300
    roles = {t["from"] for c in data for t in c["conversations"]}
    assert roles == {"human", "gpt", "system"}


def test_cli_entry_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli.json"
    assert main([str(out), "--conversations", "40", "--seed", "5"]) == 0
    assert "40 conversations" in capsys.readouterr().out
    assert out.read_bytes() == write_sharegpt(tmp_path / "api.json", 40, seed=5).read_bytes()
    cmd = [sys.executable, "-m", "orchestrate.standins.sharegpt_synth", str(tmp_path / "m.json"),
           "--conversations", "3"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert len(load_sharegpt(tmp_path / "m.json")) == 3


def test_length_spread(data: list[dict]) -> None:
    prompts, replies = opening_lengths(data)
    assert 50 <= statistics.median(prompts) <= 70
    assert 150 <= quantile(prompts, 0.9) <= 300
    assert 900 <= max(prompts) <= 1500
    assert sum(p <= 3 for p in prompts) >= 20  # a few very short prompts
    assert 155 <= statistics.median(replies) <= 205
    assert 400 <= quantile(replies, 0.9) <= 650
    assert 1150 <= max(replies) <= 1250


def test_conversation_shapes(data: list[dict]) -> None:
    lengths = [len(c["conversations"]) for c in data]
    assert sum(n == 1 for n in lengths) >= 20
    assert sum(4 <= n <= 8 for n in lengths) >= 150
    assert max(lengths) <= 9  # 8 turns, plus a leading system turn
    assert sum(c["conversations"][0]["from"] == "system" for c in data if c["conversations"]) >= 20
    assert sum(t["value"] == "" for c in data for t in c["conversations"]) >= 10


def test_text_is_pseudo_words_with_some_out_of_vocabulary(data: list[dict]) -> None:
    texts = [t["value"] for c in data[:200] for t in c["conversations"]]
    tokens = [w for t in texts for w in t.split()]
    bare = [w.strip(".,?!").lower() for w in tokens]
    oov = [w for w in bare if w not in VOCAB]
    assert 0.01 <= len(oov) / len(bare) <= 0.03
    assert any(w.isdigit() for w in oov) and any("_" in w for w in oov)
    assert any(not w.isascii() for w in oov)
    assert any(w[0].isupper() for w in tokens) and any(w.endswith("?") for w in tokens)
    (_, top), = Counter(bare).most_common(1)
    assert 0.03 <= top / len(bare) <= 0.08  # Zipf-like head, not one dominant word


def test_every_sampler_rule_fires(data: list[dict]) -> None:
    res = sample_prompts(data, SamplingConfig(num_prompts=2000), words)
    assert res.examined == 2000
    assert all(res.dropped[rule] > 0 for rule in DROP_RULES if rule != "exceeds_slot_context")
    assert 1500 <= len(res.prompts) <= 1800
    slot = sample_prompts(data, SamplingConfig(num_prompts=2000, per_slot_context=512), words)
    assert all(slot.dropped[rule] > 0 for rule in DROP_RULES)
