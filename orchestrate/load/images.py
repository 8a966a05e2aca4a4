"""Generated images for vision servers: seeded pictures of the sizes ``load.images`` names, attached to chat prompts
as OpenAI ``image_url`` parts (PNG data URIs).

Stage: load. Every image differs (its own seed): a server's prompt cache reuses identical image bytes, which would
flatter every request after the first. Each picture is a few coloured shapes on a plain background, so its PNG
is small (a few KB at 512×512) and the load is the server's decoding, encoding and prefill, not the network.
"""

from __future__ import annotations

import base64
import io
import random
from dataclasses import replace

from PIL import Image, ImageDraw

from locustfiles.dataset import Prompt
from orchestrate.scenario.spec import ImageSpec

SHAPES = 6


def picture(width: int, height: int, seed: int) -> bytes:
    """A PNG of ``width`` × ``height`` pixels: shapes and colours drawn from ``seed`` (equal seeds, equal bytes)."""
    rng = random.Random(seed)
    image = Image.new("RGB", (width, height), tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(image)
    for _ in range(SHAPES):
        x0, x1 = sorted(rng.randrange(width + 1) for _ in range(2))
        y0, y1 = sorted(rng.randrange(height + 1) for _ in range(2))
        colour = tuple(rng.randrange(256) for _ in range(3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)((x0, y0, x1, y1), fill=colour)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def data_uri(png: bytes, mime: str = "image/png") -> str:
    """The image as a ``data:`` URI, the form OpenAI's ``image_url`` and llama.cpp accept inline."""
    return f"data:{mime};base64,{base64.b64encode(png).decode('ascii')}"


def with_images(prompt: Prompt, uris: list[str], sizes: list[str]) -> Prompt:
    """``prompt`` whose last user message carries ``uris`` after its text (its token count stays the text's)."""
    last = prompt.messages[-1]
    parts = [{"type": "text", "text": last["content"]}] + [
        {"type": "image_url", "image_url": {"url": uri}} for uri in uris]
    return replace(prompt, messages=(*prompt.messages[:-1], {**last, "content": parts}), image_sizes=tuple(sizes))


def attach_images(prompts: list[Prompt], spec: ImageSpec, seed: int) -> list[Prompt]:
    """``spec.share`` of the prompts (chosen with ``seed``) carry ``spec.count`` generated images each, their sizes
    drawn from ``spec.sizes``; the others stay text-only."""
    rng = random.Random(seed)
    out = []
    for prompt in prompts:
        if rng.random() >= spec.share:
            out.append(prompt)
            continue
        sizes = [spec.sizes[rng.randrange(len(spec.sizes))] for _ in range(spec.count)]
        uris = [data_uri(picture(w, h, rng.getrandbits(32))) for w, h in sizes]
        out.append(with_images(prompt, uris, [f"{w}x{h}" for w, h in sizes]))
    return out
