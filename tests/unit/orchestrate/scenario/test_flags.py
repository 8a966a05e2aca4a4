"""orchestrate/scenario/flags.py: scenario flags → llama-server argv, the reference study's command."""

from __future__ import annotations

import pytest

from orchestrate.scenario.flags import flag_args, llama_server_argv
from orchestrate.scenario.spec import ServerSpec


def test_reference_study_command() -> None:
    spec = ServerSpec(launcher="docker", flags={"n-gpu-layers": 99, "ctx-size": 65536, "parallel": 32,
                                                "cont-batching": True, "spec-type": "draft-mtp",
                                                "spec-draft-n-max": 4, "flash-attn": False})
    assert llama_server_argv(spec, "/models/gemma-4-E4B-Q4_K_M.gguf", "/models/gemma-4-E4B-MTP.gguf",
                             "0.0.0.0", 8080) == [
        "--model", "/models/gemma-4-E4B-Q4_K_M.gguf", "--host", "0.0.0.0", "--port", "8080", "--metrics",
        "--model-draft", "/models/gemma-4-E4B-MTP.gguf",
        "--n-gpu-layers", "99", "--ctx-size", "65536", "--parallel", "32", "--cont-batching",
        "--spec-type", "draft-mtp", "--spec-draft-n-max", "4", "--flash-attn", "off"]


@pytest.mark.parametrize("flags, argv", [
    ({"fa": True}, ["-fa", "on"]),                 # YAML `on` is a boolean; flash-attn takes a value
    ({"flash-attn": "auto"}, ["--flash-attn", "auto"]),
    ({"no-mmap": True, "mlock": False}, ["--no-mmap"]),
    ({"c": 4096}, ["-c", "4096"]),
    ({"lora": ["a.gguf", "b.gguf"]}, ["--lora", "a.gguf", "--lora", "b.gguf"]),
])
def test_flag_rendering(flags: dict[str, object], argv: list[str]) -> None:
    assert flag_args(flags) == argv


@pytest.mark.parametrize("flag", ["model", "port", "host", "model-draft", "metrics"])
def test_flags_tokenswarm_sets_itself_are_refused(flag: str) -> None:
    with pytest.raises(ValueError, match=f"server.flags.{flag}"):
        flag_args({flag: "x"})


@pytest.mark.parametrize("flags", [{"parallel; rm -rf /": 1}, {"--api-key": "x"}, {"a b": 1}, {"": 1}])
def test_a_flag_name_cannot_smuggle_anything(flags: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="not a llama-server flag name"):
        flag_args(flags)


def test_a_value_is_always_one_argument() -> None:
    assert flag_args({"alias": "x --api-key stolen; echo pwned"}) == ["--alias", "x --api-key stolen; echo pwned"]
