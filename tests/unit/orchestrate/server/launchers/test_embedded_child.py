"""orchestrate/server/launchers/embedded_child.py: an ``EmbeddedConfig`` → xllamacpp's ``CommonParams``.

Only ``build_params``: the parameters are built and read back; no server is started.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from orchestrate.server.launchers.embedded import EmbeddedConfig

xl = pytest.importorskip("xllamacpp", reason="the embedded extra (pip install 'tokenswarm[embedded]')")
from orchestrate.server.launchers.embedded_child import FLASH_ATTN, build_params  # noqa: E402 (needs xllamacpp)


def params(**fields: object) -> Any:
    """Built from the config as the child gets it: through JSON, as the launcher's ``--config``."""
    config = EmbeddedConfig(model_path="/m.gguf", **fields)  # type: ignore[arg-type]
    return build_params(json.loads(json.dumps(config.to_dict())))


def test_settings_reach_the_server_parameters() -> None:
    p = params(parallel=3, ctx_size=4096, threads=2, host="127.0.0.2", port=1234, alias="tiny",
                       api_keys=("k1", "k2"), verbosity=2, metrics=True)
    got = {"model": p.model.path, "parallel": p.n_parallel, "ctx": p.n_ctx,
           "threads": p.cpuparams.n_threads, "batch_threads": p.cpuparams_batch.n_threads,
           "hosts": p.hostnames, "port": p.port, "alias": p.model_alias, "keys": p.api_keys,
           "verbosity": p.verbosity, "metrics": p.endpoint_metrics}
    assert got == {"model": "/m.gguf", "parallel": 3, "ctx": 4096, "threads": 2, "batch_threads": 2,
                   "hosts": ["127.0.0.2"], "port": 1234, "alias": {"tiny"}, "keys": ["k1", "k2"], "verbosity": 2,
                   "metrics": True}


def test_context_zero_means_2048_per_slot() -> None:
    """``ctx_size: 0`` (the default) gives every slot llama-server's 2048 tokens, not llama.cpp's model default."""
    assert params(parallel=3).n_ctx == 6144
    assert params().n_ctx == 4 * 2048


@pytest.mark.parametrize("choice", ["on", "off", "auto"])
def test_flash_attention_choice(choice: str) -> None:
    assert params(flash_attn=choice).flash_attn_type == getattr(
        xl.llama_flash_attn_type, FLASH_ATTN[choice])
    assert len({getattr(xl.llama_flash_attn_type, v) for v in FLASH_ATTN.values()}) == 3


def test_a_draft_model_turns_on_speculative_decoding() -> None:
    none = params().speculative
    assert none.types == [xl.common_speculative_type.COMMON_SPECULATIVE_TYPE_NONE]
    draft = params(draft_model_path="/d.gguf", draft_n_max=7, threads=3).speculative
    assert draft.types == [xl.common_speculative_type.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
    assert (draft.draft.mparams.path, draft.draft.n_max) == ("/d.gguf", 7)
    assert (draft.draft.cpuparams.n_threads, draft.draft.cpuparams_batch.n_threads) == (3, 3)


def test_no_alias_keeps_the_server_default() -> None:
    assert params().model_alias == set() and params().api_keys == []


def test_embeddings_reranking_pooling_batches_and_a_projector_reach_the_parameters() -> None:
    plain = params()
    assert (plain.embedding, plain.pooling_type, plain.mmproj.path) == (False, -1, "")
    got = params(embeddings=True, pooling="mean", batch_size=1024, ubatch_size=1024, mmproj_path="/p.gguf")
    assert (got.embedding, got.n_batch, got.n_ubatch, got.mmproj.path) == (True, 1024, 1024, "/p.gguf")
    assert got.pooling_type == xl.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    ranked = params(reranking=True)
    assert ranked.embedding and ranked.pooling_type == xl.llama_pooling_type.LLAMA_POOLING_TYPE_RANK


def test_the_optional_settings_are_written_only_when_set() -> None:
    assert set(EmbeddedConfig(model_path="/m.gguf").to_dict()).isdisjoint(
        {"swa_full", "batch_size", "ubatch_size", "embeddings", "pooling", "reranking", "mmproj_path"})
    assert EmbeddedConfig(model_path="/m.gguf", embeddings=True, pooling="mean").to_dict()["pooling"] == "mean"
