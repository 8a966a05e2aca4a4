"""orchestrate/server/launchers/llama_server_shim.py: llama-server flags → the embedded server's config.

Only the mapping: no server starts (``main`` returns before importing xllamacpp when a flag is wrong).
"""

from __future__ import annotations

import dataclasses

import pytest

from orchestrate.server.launchers.embedded import EmbeddedConfig
from orchestrate.server.launchers.llama_server_shim import (
    IGNORED_SWITCHES,
    IGNORED_WITH_VALUE,
    FlagError,
    config_of,
    main,
    parse_args,
)


def config(*argv: str) -> dict[str, object]:
    return config_of(parse_args(["--model", "/m.gguf", *argv]))


def test_defaults_match_the_embedded_config_and_its_fields() -> None:
    """Every key ``config_of`` makes is an ``EmbeddedConfig`` field, so the config builds from it."""
    defaults = config()
    assert set(defaults) == {f.name for f in dataclasses.fields(EmbeddedConfig)}
    assert defaults == {"model_path": "/m.gguf", "parallel": 1, "ctx_size": 0, "flash_attn": "auto",
                        "draft_model_path": None, "draft_n_max": 4, "threads": 1, "host": "127.0.0.1",
                        "port": 8080, "metrics": False, "alias": None, "api_keys": (), "verbosity": 3,
                        "swa_full": False, "batch_size": 0, "ubatch_size": 0, "embeddings": False, "pooling": None,
                        "reranking": False, "mmproj_path": None}
    EmbeddedConfig(**defaults)  # type: ignore[arg-type]


def test_long_names_map_to_their_fields() -> None:
    got = config("--model-draft", "/d.gguf", "--ctx-size", "8192", "--parallel", "8", "--flash-attn", "off",
                 "--threads", "3", "--host", "0.0.0.0", "--port", "9001", "--metrics", "--spec-draft-n-max",
                 "6", "--alias", "tiny", "--api-key", "k1", "--api-key", "k2", "--verbosity", "2", "--swa-full",
                 "--batch-size", "1024", "--ubatch-size", "512", "--embeddings", "--pooling", "mean", "--reranking",
                 "--mmproj", "/p.gguf")
    assert got == {"model_path": "/m.gguf", "draft_model_path": "/d.gguf", "ctx_size": 8192, "parallel": 8,
                   "flash_attn": "off", "threads": 3, "host": "0.0.0.0", "port": 9001, "metrics": True,
                   "draft_n_max": 6, "alias": "tiny", "api_keys": ("k1", "k2"), "verbosity": 2, "swa_full": True,
                   "batch_size": 1024, "ubatch_size": 512, "embeddings": True, "pooling": "mean", "reranking": True,
                   "mmproj_path": "/p.gguf"}


def test_short_names_are_the_same_flags() -> None:
    """The launchers write llama.cpp's short names (``-c``, ``-np``, ``-fa``) where a scenario does."""
    assert config("-md", "/d.gguf", "-c", "512", "-np", "2", "-fa", "on", "-t", "4", "-a", "x", "-v", "1") == config(
        "--model-draft", "/d.gguf", "--ctx-size", "512", "--parallel", "2", "--flash-attn", "on", "--threads", "4",
        "--alias", "x", "--verbosity", "1")
    assert config_of(parse_args(["-m", "/x.gguf"]))["model_path"] == "/x.gguf"


@pytest.mark.parametrize("flag", ["--spec-draft-n-max", "--draft-max", "--draft"])
def test_the_draft_length_under_each_name(flag: str) -> None:
    """Old and new llama-server names for the draft length all set ``draft_n_max``."""
    assert config(flag, "7")["draft_n_max"] == 7


def test_gpu_flags_are_accepted_and_change_nothing() -> None:
    """A scenario written for a GPU llama-server runs on the CPU stand-in unchanged."""
    with_value = [arg for flag in IGNORED_WITH_VALUE for arg in (flag, "99")]
    assert config(*with_value, *IGNORED_SWITCHES) == config()
    # the ones the process and docker launchers' scenarios use most, spelled out
    assert config("-ngl", "99", "--n-gpu-layers-draft", "99", "-cb", "--cont-batching", "--no-warmup",
                  "--jinja") == config()
    assert config("-b", "2048", "-ub", "512") == config("--batch-size", "2048", "--ubatch-size", "512")  # real here


@pytest.mark.parametrize("argv, words", [
    (["--model", "/m.gguf", "--rope-scaling", "yarn"], ["does not support --rope-scaling yarn", "--ctx-size"]),
    (["--model", "/m.gguf", "-c", "lots"], ["rejects", "-c/--ctx-size", "'lots'"]),
    (["--model", "/m.gguf", "-fa", "maybe"], ["rejects", "'maybe'", "'on', 'off', 'auto'"]),
    (["--parallel", "2"], ["rejects", "-m/--model"]),
    (["--model", "/m.gguf", "--para", "2"], ["does not support --para 2"]),  # no abbreviations
])
def test_an_unknown_flag_or_bad_value_is_a_flag_error(argv: list[str], words: list[str]) -> None:
    """Named, with the flags the stand-in takes, instead of argparse printing usage and exiting."""
    with pytest.raises(FlagError) as info:
        parse_args(argv)
    for word in words:
        assert word in str(info.value)


def test_main_refuses_a_bad_flag_with_exit_1_and_starts_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """Like llama-server: ``error: invalid argument: ...`` on stderr and exit 1, before loading anything."""
    assert main(["--model", "/nonexistent.gguf", "--no-such-flag"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: invalid argument: the embedded llama.cpp server does not support --no-such-flag")
