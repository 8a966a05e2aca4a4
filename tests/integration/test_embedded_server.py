"""The embedded llama.cpp server with the tiny model: starts, streams exact output, stops clean."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from orchestrate.errors import ServerExitedError
from orchestrate.server.diagnose import failure_cause
from orchestrate.server.launchers.embedded import EmbeddedConfig, EmbeddedLauncher
from orchestrate.standins.lexicon import pseudo_words

pytestmark = pytest.mark.integration


def stream_chat(url: str, max_tokens: int, prompt: str = "plea woul prul") -> tuple[list[str], list[dict[str, Any]]]:
    """Content pieces and all parsed chunks of one streamed chat completion."""
    body: dict[str, Any] = {"messages": [{"role": "user", "content": prompt}], "stream": True,
            "max_tokens": max_tokens, "stream_options": {"include_usage": True}}
    contents: list[str] = []
    chunks: list[dict[str, Any]] = []
    with requests.post(f"{url}/v1/chat/completions", json=body, stream=True, timeout=30) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            chunks.append(chunk)
            contents += [c["delta"]["content"] for c in chunk["choices"] if c["delta"].get("content")]
    return contents, chunks


def test_streams_exactly_max_tokens_one_word_each_and_stops_clean(
        embedded: Callable[..., EmbeddedLauncher]) -> None:
    server = embedded(parallel=2)
    assert server.url is not None and server.ready_s is not None and server.exit_status() is None
    props = requests.get(f"{server.url}/props", timeout=5).json()
    assert props["total_slots"] == 2
    assert props["default_generation_settings"]["n_ctx"] == 2048
    contents, chunks = stream_chat(server.url, 16)
    words = set(pseudo_words(2000))
    assert len(contents) == 16
    assert all(c.startswith(" ") and c[1:] in words for c in contents), contents
    assert chunks[-1]["usage"]["completion_tokens"] == 16
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    metrics = requests.get(f"{server.url}/metrics", timeout=5).text
    assert "llamacpp:tokens_predicted_total 16" in metrics
    tokens = requests.post(f"{server.url}/tokenize", json={"content": " ".join(sorted(words)[:50])},
                           timeout=5).json()["tokens"]
    assert len(tokens) == 50  # every pseudo-word is one token

    pid = server.process.pid if server.process else -1
    server.stop()
    server.stop()  # idempotent
    assert server.exit_status() is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


def test_draft_model_is_used_and_mostly_accepted(
        embedded: Callable[..., EmbeddedLauncher], tiny_model: Path, tiny_draft_model: Path) -> None:
    server = embedded(model_path=str(tiny_model), draft_model_path=str(tiny_draft_model), parallel=1)
    assert server.url is not None
    assert requests.get(f"{server.url}/slots", timeout=5).json()[0]["speculative"] is True
    contents, chunks = stream_chat(server.url, 64)
    assert len(contents) == 64
    timings = chunks[-1]["timings"]
    assert timings["predicted_n"] == 64
    assert 0 < timings["draft_n_accepted"] <= timings["draft_n"]


@pytest.mark.parametrize("content", [None, b"not a gguf file" * 100])
def test_bad_model_file_fails_fast_with_cause(tmp_path: Path, content: bytes | None) -> None:
    model = tmp_path / "model.gguf"
    if content is not None:
        model.write_bytes(content)
    launcher = EmbeddedLauncher(EmbeddedConfig(model_path=str(model)), tmp_path / "server.log")
    started = time.monotonic()
    with launcher, pytest.raises(ServerExitedError) as caught:
        launcher.start()
    assert time.monotonic() - started < 10
    assert caught.value.returncode == 1
    assert caught.value.cause is not None and "GGUF" in caught.value.cause
    expected_hint = "does not exist" if content is None else "not a GGUF file"
    assert caught.value.hint is not None and expected_hint in caught.value.hint
    assert launcher.exit_status() == 1


def test_failure_cause_prefers_first_llama_error() -> None:
    lines = ["0.00.000.425 I srv init: initializing ...",
             "0.00.006.716 E gguf_init_from_file: failed to open GGUF file 'x' (No such file)",
             "0.00.007.283 E srv          init: exiting due to model loading error",
             "Traceback (most recent call last):", '  File "x.py", line 1', "RuntimeError: boom"]
    assert failure_cause(lines) == "gguf_init_from_file: failed to open GGUF file 'x' (No such file)"
    assert failure_cause(lines[3:]) == "RuntimeError: boom"
    assert failure_cause([]) is None
