"""A tiny, generated llama-architecture GGUF for zero-setup runs and tests.

Ground floor (imports no stage; the server stage's launchers make their ``tiny`` models here).
No model can be downloaded here, and tests need output that is exact, fast and never stops early.
So this module writes its own model with the ``gguf`` package: a 2-layer, 128-wide llama with
random weights (seeded, byte-for-byte reproducible), an SPM vocabulary of byte tokens plus
whole-word pieces for :func:`orchestrate.standins.lexicon.pseudo_words` (and every "▁"-prefix of them, so
llama.cpp's SPM bigram merges reach the whole word), and a ChatML template.

The output layer is rigged: every embedding carries a constant in dimension 0 that survives
RMSNorm, and ``output.weight`` is strongly positive in that dimension only for whole-word rows
(strongly negative elsewhere). So the model only ever samples whole words: each streamed chunk
is one word, EOS never fires and each request runs exactly to ``max_tokens``. Among words, each
word has a primary successor (a long cycle through the vocabulary) and a weaker secondary one, so
text varies under default sampling while a 1-layer draft (:func:`tiny_draft_spec`) mostly agrees.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gguf
import numpy as np

from orchestrate import cache
from orchestrate.standins.lexicon import pseudo_words

FORMAT_VERSION = 1
"""Bump when the generator changes, so cached files are rebuilt."""

SPACE = "\u2581"  # "▁", SentencePiece's word-boundary marker
SPECIALS = (("<unk>", gguf.TokenType.UNKNOWN), ("<s>", gguf.TokenType.CONTROL),
            ("</s>", gguf.TokenType.CONTROL), ("<|im_start|>", gguf.TokenType.CONTROL),
            ("<|im_end|>", gguf.TokenType.CONTROL))
UNK_ID, BOS_ID, EOS_ID = 0, 1, 2
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

WORD_GATE = 4.0
"""Dim-0 weight of output rows: +for whole words, -for everything else (a ~64-logit gap)."""
PRIMARY, SECONDARY = 1.0, 0.75
"""Strength of a word's primary and secondary successor (logit gap of about 2 between them)."""
LAYER_STD = 0.01
"""Layer weights are small so the residual stream stays dominated by the last token's embedding."""


@dataclass(frozen=True)
class TinyModelSpec:
    """Shape and seed of a generated model; equal specs give identical files."""

    n_layer: int = 2
    n_embd: int = 128
    n_head: int = 4
    n_head_kv: int = 4
    n_ff: int = 256
    n_words: int = 2000
    context_length: int = 4096
    seed: int = 0


def tiny_draft_spec(spec: TinyModelSpec = TinyModelSpec()) -> TinyModelSpec:
    """A 1-layer draft of ``spec``: same vocabulary, embeddings, output and first layer."""
    return dataclasses.replace(spec, n_layer=1)


DEEP = TinyModelSpec(n_layer=16, n_ff=4096)
"""``tiny-deep``: the same vocabulary, embeddings, output and first layers as ``tiny``, 16 layers with
wide feed-forwards (about 50 MB): decoding it is bound by reading its weights, as a real model's is,
so its 1-layer draft (``tiny-deep-draft``, which mostly agrees with it) pays off at low concurrency
and stops paying off as batching amortizes those reads (``scenarios/demo-sweep.yaml``)."""
MODELS = {"tiny": TinyModelSpec(), "tiny-draft": tiny_draft_spec(),
          "tiny-deep": DEEP, "tiny-deep-draft": tiny_draft_spec(DEEP)}
"""The generated models a scenario can name."""


def build_vocab(n_words: int) -> tuple[list[str], list[float], list[int], list[int]]:
    """Tokens, scores, types and the ids of whole-word tokens (in ``pseudo_words`` order)."""
    tokens = [text for text, _ in SPECIALS]
    types = [int(kind) for _, kind in SPECIALS]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [int(gguf.TokenType.BYTE)] * 256
    pieces: dict[str, None] = dict.fromkeys([*"abcdefghijklmnopqrstuvwxyz", SPACE])
    words = pseudo_words(n_words, seed=0)
    for word in words:
        whole = SPACE + word
        pieces.update(dict.fromkeys(whole[:i] for i in range(2, len(whole) + 1)))
    first = len(tokens)
    tokens += list(pieces)
    types += [int(gguf.TokenType.NORMAL)] * len(pieces)
    scores = [0.0] * first + [float(len(p)) for p in pieces]
    index = {piece: first + i for i, piece in enumerate(pieces)}
    return tokens, scores, types, [index[SPACE + w] for w in words]


def _unit_rows(rng: np.random.Generator, rows: int, dims: int) -> np.ndarray:
    x = rng.standard_normal((rows, dims))
    unit: np.ndarray = x / np.linalg.norm(x, axis=1, keepdims=True)
    return unit


def build_tiny_model(path: Path, spec: TinyModelSpec = TinyModelSpec()) -> Path:
    """Write the GGUF for ``spec`` to ``path`` (overwriting it) and return ``path``."""
    tokens, scores, types, word_ids = build_vocab(spec.n_words)
    n_vocab, d = len(tokens), spec.n_embd
    rng = np.random.default_rng([spec.seed, 0xE1B])
    # Embeddings: constant 1 in dim 0 (the "is text" signal), a random unit vector elsewhere.
    direction = _unit_rows(rng, n_vocab, d - 1)
    embd = np.concatenate([np.ones((n_vocab, 1)), direction], axis=1)
    # Output: whole words get +WORD_GATE in dim 0, everything else -WORD_GATE and nothing more.
    # Word u listens for the directions of the words whose primary/secondary successor it is.
    words = np.asarray(word_ids)
    order = words[rng.permutation(len(words))]
    output = np.zeros((n_vocab, d))
    output[:, 0] = -WORD_GATE
    output[words, 0] = WORD_GATE
    jump = len(order) // 2 + 1
    for offset, strength in ((1, PRIMARY), (jump, SECONDARY)):
        successor = np.roll(order, -offset)  # successor[k] follows order[k]
        output[successor, 1:] += strength * direction[order]
    f16 = np.float16
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tokenswarm-tiny")
    writer.add_context_length(spec.context_length)
    writer.add_embedding_length(d)
    writer.add_block_count(spec.n_layer)
    writer.add_feed_forward_length(spec.n_ff)
    writer.add_head_count(spec.n_head)
    writer.add_head_count_kv(spec.n_head_kv)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(d // spec.n_head)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(UNK_ID)
    writer.add_bos_token_id(BOS_ID)
    writer.add_eos_token_id(EOS_ID)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)
    writer.add_tensor("token_embd.weight", embd.astype(f16))
    writer.add_tensor("output_norm.weight", np.ones(d, dtype=np.float32))
    writer.add_tensor("output.weight", output.astype(f16))
    kv = spec.n_head_kv * (d // spec.n_head)
    for layer in range(spec.n_layer):
        lrng = np.random.default_rng([spec.seed, layer])
        shapes = {"attn_q": (d, d), "attn_k": (kv, d), "attn_v": (kv, d), "attn_output": (d, d),
                  "ffn_gate": (spec.n_ff, d), "ffn_up": (spec.n_ff, d), "ffn_down": (d, spec.n_ff)}
        writer.add_tensor(f"blk.{layer}.attn_norm.weight", np.ones(d, dtype=np.float32))
        writer.add_tensor(f"blk.{layer}.ffn_norm.weight", np.ones(d, dtype=np.float32))
        for name, shape in shapes.items():
            weight = lrng.standard_normal(shape) * LAYER_STD
            writer.add_tensor(f"blk.{layer}.{name}.weight", weight.astype(f16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def spec_hash(spec: Any, version: int = FORMAT_VERSION) -> str:
    """A short, stable hash of a generator's ``spec`` (a dataclass) and its ``version``."""
    blob = json.dumps({"v": version, **dataclasses.asdict(spec)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def generated_gguf(prefix: str, spec: Any, version: int, make: Callable[[Path, Any], Path],
                   cache_dir: Path | None = None, build: bool = True) -> Path:
    """``PREFIX-HASH.gguf`` in ``$TOKENSWARM_CACHE/models`` (or ``cache_dir``), written by ``make(tmp, spec)`` on first
    use unless ``build`` is False (``tokenswarm plan`` only shows where it will be): every generated model's cache."""
    directory = cache_dir if cache_dir is not None else cache.cache_dir("models")
    path = directory / f"{prefix}-{spec_hash(spec, version)}.gguf"
    return cache.cached(path, lambda tmp: make(tmp, spec)) if build else path


def tiny_model_path(spec: TinyModelSpec = TinyModelSpec(), cache_dir: Path | None = None,
                    build: bool = True) -> Path:
    """The cached GGUF for ``spec`` (``generated_gguf``)."""
    return generated_gguf("tiny", spec, FORMAT_VERSION, build_tiny_model, cache_dir, build)
