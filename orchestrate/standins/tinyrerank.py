"""A tiny, generated reranking GGUF, so ``llama-server --reranking`` can serve ``/v1/rerank``.

Ground floor (imports no stage). Rerank load needs a model the real server (build 11434) serves on
``/v1/rerank``, and no reranker can be downloaded here. So this module writes one with the ``gguf``
package: a 2-layer, 128-wide model with random weights (seeded, byte-for-byte reproducible) and the
vocabulary of :mod:`orchestrate.standins.tinymodel`, shaped as llama.cpp's Qwen3-Reranker conversion
(``conversion/qwen.py``) shapes one:

- architecture ``qwen3`` (llama with per-head Q/K RMSNorm): of the llama-like architectures it is
  the one that loads a ``cls.output.weight`` head (plain ``llama`` refuses the extra tensor);
- ``cls.output.weight`` of 2 rows, ``qwen3.classifier.output_labels`` = ``["yes", "no"]`` (so
  ``n_cls_out`` = 2) and ``qwen3.pooling_type`` = RANK. Under RANK pooling the server reads the last
  token's hidden state, applies the head and (for ``qwen3``) a softmax, and reports
  ``relevance_score`` = P("yes"), in (0, 1);
- a named ``rerank`` chat template, ``<s>{query}</s>{document}</s>``, which the server fills for each
  document (``format_prompt_rerank``): the classic ``[BOS] query [EOS] document [EOS]`` layout, spelled
  out so it does not hang on the vocabulary's add-EOS/add-SEP flags. Each document is its own sequence,
  so ``usage.prompt_tokens`` is the sum over documents of ``tokens(query) + tokens(document) + 3``.

Why not the tiny generation model, or Gemma 3 270M, with ``--reranking``? Both load and answer, but
without a classification head the pooled output is the whole hidden state and build 11434 reads
``n_cls_out`` (1) float per sequence at offset ``seq_idx``: a document that shares a batch with
another gets a dimension of the first one's hidden state as its score, so scores change with batching.
With a 2-row head each sequence's pooled output is exactly 2 floats and the scores are stable.

The layers are large enough (``LAYER_STD``) that attention mixes the query and the document into the
last (template) token, so each query/document pair gets its own score. The output layer is tied to
the embeddings (no ``output.weight``); the model is for ranking, not generation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

from orchestrate.standins.tinymodel import BOS_ID, EOS_ID, UNK_ID, build_vocab, generated_gguf

FORMAT_VERSION = 1
"""Bump when the generator changes, so cached files are rebuilt."""

ARCHITECTURE = "qwen3"
LABELS = ("yes", "no")
"""Classifier labels: the score is the softmax probability of the first."""
RERANK_TEMPLATE = "<s>{query}</s>{document}</s>"
"""The ``rerank`` chat template: the server replaces ``{query}`` and ``{document}`` per document and
tokenizes the result with special tokens parsed, so it reads ``[BOS] query [EOS] document [EOS]`` and
each document costs ``tokens(query) + tokens(document) + 3`` (SentencePiece gives text after a special
token its space prefix, so the query and the document tokenize as they do alone)."""
LAYER_STD = 0.1
"""Layer weights are large enough for attention to carry the prompt into the last token's state."""


@dataclass(frozen=True)
class TinyRerankSpec:
    """Shape and seed of a generated reranker; equal specs give identical files."""

    n_layer: int = 2
    n_embd: int = 128
    n_head: int = 4
    n_head_kv: int = 4
    n_ff: int = 256
    n_words: int = 2000
    context_length: int = 4096
    seed: int = 0


def build_tiny_reranker(path: Path, spec: TinyRerankSpec = TinyRerankSpec()) -> Path:
    """Write the GGUF for ``spec`` to ``path`` (overwriting it) and return ``path``."""
    tokens, scores, types, _ = build_vocab(spec.n_words)
    n_vocab, d = len(tokens), spec.n_embd
    head_dim = d // spec.n_head
    kv = spec.n_head_kv * head_dim
    rng = np.random.default_rng([spec.seed, 0x5E1A])
    f16 = np.float16
    writer = gguf.GGUFWriter(str(path), ARCHITECTURE)
    writer.add_name("tokenswarm-tiny-reranker")
    writer.add_context_length(spec.context_length)
    writer.add_embedding_length(d)
    writer.add_block_count(spec.n_layer)
    writer.add_feed_forward_length(spec.n_ff)
    writer.add_head_count(spec.n_head)
    writer.add_head_count_kv(spec.n_head_kv)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_dimension_count(head_dim)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_pooling_type(gguf.PoolingType.RANK)
    writer.add_classifier_output_labels(list(LABELS))
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(UNK_ID)
    writer.add_bos_token_id(BOS_ID)
    writer.add_eos_token_id(EOS_ID)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_chat_template([{"name": "rerank", "template": RERANK_TEMPLATE}])
    embd = rng.standard_normal((n_vocab, d)) / np.sqrt(d)
    head = rng.standard_normal((len(LABELS), d)) / np.sqrt(d)
    writer.add_tensor("token_embd.weight", embd.astype(f16))
    writer.add_tensor("output_norm.weight", np.ones(d, dtype=np.float32))
    writer.add_tensor("cls.output.weight", head.astype(f16))
    for layer in range(spec.n_layer):
        lrng = np.random.default_rng([spec.seed, layer, 0x5E1A])
        shapes = {"attn_q": (d, d), "attn_k": (kv, d), "attn_v": (kv, d), "attn_output": (d, d),
                  "ffn_gate": (spec.n_ff, d), "ffn_up": (spec.n_ff, d), "ffn_down": (d, spec.n_ff)}
        for norm in ("attn_norm", "ffn_norm"):
            writer.add_tensor(f"blk.{layer}.{norm}.weight", np.ones(d, dtype=np.float32))
        for norm in ("attn_q_norm", "attn_k_norm"):
            writer.add_tensor(f"blk.{layer}.{norm}.weight", np.ones(head_dim, dtype=np.float32))
        for name, shape in shapes.items():
            weight = lrng.standard_normal(shape) * LAYER_STD
            writer.add_tensor(f"blk.{layer}.{name}.weight", weight.astype(f16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def tiny_reranker_path(spec: TinyRerankSpec = TinyRerankSpec(), cache_dir: Path | None = None,
                       build: bool = True) -> Path:
    """The cached GGUF for ``spec`` (``tinymodel.generated_gguf``)."""
    return generated_gguf("tiny-reranker", spec, FORMAT_VERSION, build_tiny_reranker, cache_dir, build)
