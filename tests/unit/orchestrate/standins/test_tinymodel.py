"""The generated tiny model: reproducible, cached, and built so only whole words are sampled."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest

from orchestrate.standins import tinymodel
from orchestrate.standins.lexicon import pseudo_words
from orchestrate.standins.tinymodel import (
    SPACE,
    TinyModelSpec,
    build_tiny_model,
    build_vocab,
    tiny_draft_spec,
    tiny_model_path,
)

SMALL = TinyModelSpec(n_words=300)


def test_same_spec_gives_identical_bytes(tmp_path: Path) -> None:
    a = build_tiny_model(tmp_path / "a.gguf", SMALL)
    b = build_tiny_model(tmp_path / "b.gguf", SMALL)
    c = build_tiny_model(tmp_path / "c.gguf", TinyModelSpec(n_words=300, seed=1))
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_cache_builds_once_and_reuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = tiny_model_path(SMALL, cache_dir=tmp_path)
    assert first.parent == tmp_path and first.name.startswith("tiny-") and first.suffix == ".gguf"

    def no_rebuild(path: Path, spec: TinyModelSpec = SMALL) -> Path:
        raise AssertionError("rebuilt a cached model")

    monkeypatch.setattr(tinymodel, "build_tiny_model", no_rebuild)
    assert tiny_model_path(SMALL, cache_dir=tmp_path) == first
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no temp files left behind


def test_cache_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path))
    path = tiny_model_path(SMALL)
    assert path.parent == tmp_path / "models" and path.is_file()
    assert tiny_model_path(tiny_draft_spec(SMALL)) != path


def test_vocab_has_specials_bytes_and_whole_words_with_prefixes() -> None:
    tokens, scores, types, word_ids = build_vocab(300)
    assert tokens[:5] == ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
    assert tokens[5] == "<0x00>" and tokens[260] == "<0xFF>"
    assert len(set(tokens)) == len(tokens) == len(scores) == len(types)
    words = pseudo_words(300, seed=0)
    assert [tokens[i] for i in word_ids] == [SPACE + w for w in words]
    index = {t: i for i, t in enumerate(tokens)}
    for word in words:
        chain = [SPACE + word[:n] for n in range(1, len(word) + 1)]
        assert all(p in index for p in chain), word
        assert [scores[index[p]] for p in chain] == sorted(scores[index[p]] for p in chain)


def test_gguf_metadata_and_output_gate(tmp_path: Path) -> None:
    path = build_tiny_model(tmp_path / "m.gguf", SMALL)
    reader = gguf.GGUFReader(path)
    field = {name: f.contents() for name, f in reader.fields.items()}
    assert field["general.architecture"] == "llama"
    assert field["tokenizer.ggml.model"] == "llama"
    assert field["tokenizer.ggml.bos_token_id"] == 1 and field["tokenizer.ggml.eos_token_id"] == 2
    assert field["tokenizer.ggml.add_bos_token"] is True
    assert "<|im_start|>assistant\\n" in field["tokenizer.chat_template"]
    tensors = {t.name: np.asarray(t.data, dtype=np.float32) for t in reader.tensors}
    _, _, _, word_ids = build_vocab(SMALL.n_words)
    gate = tensors["output.weight"][:, 0]
    is_word = np.zeros(len(gate), dtype=bool)
    is_word[word_ids] = True
    assert (gate[is_word] > 0).all() and (gate[~is_word] < 0).all()
    assert np.abs(tensors["output.weight"][~is_word, 1:]).max() == 0


def test_draft_shares_vocab_embeddings_and_output(tmp_path: Path) -> None:
    draft_spec = tiny_draft_spec(SMALL)
    assert draft_spec.n_layer == 1 and draft_spec.seed == SMALL.seed
    main = gguf.GGUFReader(build_tiny_model(tmp_path / "main.gguf", SMALL))
    draft = gguf.GGUFReader(build_tiny_model(tmp_path / "draft.gguf", draft_spec))
    assert main.fields["tokenizer.ggml.tokens"].contents() == draft.fields["tokenizer.ggml.tokens"].contents()
    m = {t.name: t.data for t in main.tensors}
    d = {t.name: t.data for t in draft.tensors}
    assert set(d) < set(m) and not any(name.startswith("blk.1.") for name in d)
    for name in d:
        assert np.array_equal(m[name], d[name]), name
