"""The generated tiny reranker: reproducible, readable as a Qwen3-style reranker (RANK pooling, a 2-row
``cls.output`` head, a ``rerank`` template) with the tiny model's vocabulary, and cached (served by the
real server in tests/integration/test_tinyrerank_server.py)."""

from __future__ import annotations

from pathlib import Path

import gguf
import pytest

from orchestrate.standins import tinyrerank
from orchestrate.standins.tinymodel import build_vocab
from orchestrate.standins.tinyrerank import TinyRerankSpec, build_tiny_reranker, tiny_reranker_path


def test_same_spec_gives_identical_bytes(tmp_path: Path) -> None:
    a = build_tiny_reranker(tmp_path / "a.gguf")
    b = build_tiny_reranker(tmp_path / "b.gguf")
    c = build_tiny_reranker(tmp_path / "c.gguf", TinyRerankSpec(seed=1))
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_reads_back_as_a_qwen3_reranker(tmp_path: Path) -> None:
    spec = TinyRerankSpec()
    reader = gguf.GGUFReader(build_tiny_reranker(tmp_path / "r.gguf", spec))

    def value(key: str) -> object:
        return reader.fields[key].contents()

    assert value("general.architecture") == "qwen3"
    assert value("qwen3.pooling_type") == int(gguf.PoolingType.RANK)
    assert value("qwen3.classifier.output_labels") == ["yes", "no"]
    assert value("tokenizer.chat_templates") == ["rerank"]
    template = value("tokenizer.chat_template.rerank")
    assert isinstance(template, str) and "{query}" in template and "{document}" in template
    assert value("tokenizer.ggml.tokens") == build_vocab(spec.n_words)[0]
    assert (value("tokenizer.ggml.bos_token_id"), value("tokenizer.ggml.eos_token_id")) == (1, 2)
    tensors = {t.name: t for t in reader.tensors}
    assert [int(n) for n in tensors["cls.output.weight"].shape] == [spec.n_embd, 2]  # ggml order: in, out
    assert "output.weight" not in tensors  # tied to the embeddings
    assert f"blk.{spec.n_layer - 1}.attn_k_norm.weight" in tensors


def test_cache_builds_once_and_reuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert tiny_reranker_path(cache_dir=tmp_path, build=False).parent == tmp_path
    assert not any(tmp_path.iterdir())  # build=False only names it
    first = tiny_reranker_path(cache_dir=tmp_path)
    assert first.parent == tmp_path and first.name.startswith("tiny-reranker-") and first.suffix == ".gguf"

    def no_rebuild(path: Path, spec: TinyRerankSpec = TinyRerankSpec()) -> Path:
        raise AssertionError("rebuilt a cached reranker")

    monkeypatch.setattr(tinyrerank, "build_tiny_reranker", no_rebuild)
    assert tiny_reranker_path(cache_dir=tmp_path) == first
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no temp files left behind
    assert tiny_reranker_path(TinyRerankSpec(seed=1), cache_dir=tmp_path, build=False) != first
