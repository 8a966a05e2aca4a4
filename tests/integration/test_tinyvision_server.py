"""The generated tiny projector with the real ``llama-server`` (build 11434, libmtmd): loaded with
``--mmproj`` beside the tiny model, it takes OpenAI chat requests with ``image_url`` parts (base64 PNG
data URIs), encodes, prefills and decodes, and counts exactly :func:`image_tokens` per image in
``usage.prompt_tokens``, a count that grows with the image's size."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests
from PIL import Image

from orchestrate.scenario.spec import ServerSpec
from orchestrate.server.launchers import make_launcher
from orchestrate.server.launchers.base import Launcher
from orchestrate.standins.tinyvision import TinyVisionSpec, image_tokens, tiny_mmproj_path

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SPEC = TinyVisionSpec()
MAX_TOKENS = 8


@pytest.fixture(scope="module")
def vision_server(llama_server_binary: Path, tiny_model: Path,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launcher]:
    """The real server with the tiny model and the tiny projector (2 slots of 2,048 tokens)."""
    spec = ServerSpec(launcher="process", binary=str(llama_server_binary), model=str(tiny_model),
                      flags={"parallel": 2, "ctx-size": 4096, "threads": 1, "mmproj": str(tiny_mmproj_path(SPEC))})
    folder = tmp_path_factory.mktemp("vision-server")
    with make_launcher(spec, folder / "server.log") as launcher:
        launcher.start()
        launcher.wait_ready(60)
        yield launcher


def png_data_uri(width: int, height: int) -> str:
    pixels = np.random.default_rng([width, height]).integers(0, 256, (height, width, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def chat(server: Launcher, image: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": "What is in this picture?"}]
    if image is not None:
        content.append({"type": "image_url", "image_url": {"url": image}})
    reply = requests.post(f"{server.url}/v1/chat/completions", timeout=60, json={
        "messages": [{"role": "user", "content": content}], "max_tokens": MAX_TOKENS})
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    assert body["choices"][0]["message"]["content"].strip()
    assert body["usage"]["completion_tokens"] == MAX_TOKENS
    return body


def test_images_are_encoded_and_counted_in_prompt_tokens(vision_server: Launcher) -> None:
    text_only = chat(vision_server)["usage"]["prompt_tokens"]
    counted = {}
    for width, height in ((64, 64), (72, 88), (512, 384)):
        usage = chat(vision_server, png_data_uri(width, height))["usage"]
        counted[width, height] = usage["prompt_tokens"] - text_only
    assert counted == {(64, 64): 16, (72, 88): 30, (512, 384): 768}
    assert counted == {size: image_tokens(SPEC, *size) for size in counted}
