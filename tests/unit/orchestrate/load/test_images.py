"""orchestrate/load/images.py: seeded PNG pictures, attached to a share of the prompts as OpenAI image parts."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from locustfiles.dataset import Prompt
from locustfiles.endpoints import prompt_text
from orchestrate.load.images import attach_images, data_uri, picture, with_images
from orchestrate.scenario.spec import ImageSpec

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def prompts(n: int) -> list[Prompt]:
    return [Prompt(i, f"c{i}", ({"role": "user", "content": f"question {i}"},), 10 + i, 16) for i in range(n)]


def decode(uri: str) -> Image.Image:
    head, _, payload = uri.partition(",")
    assert head == "data:image/png;base64"
    return Image.open(io.BytesIO(base64.b64decode(payload)))


@pytest.mark.parametrize(("width", "height"), [(64, 64), (256, 64), (1, 1), (33, 517)])
def test_a_picture_is_a_png_of_the_asked_size(width: int, height: int) -> None:
    png = picture(width, height, seed=7)
    assert png.startswith(PNG_MAGIC)
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG" and image.size == (width, height) and image.mode == "RGB"


def test_equal_seeds_equal_bytes_other_seeds_other_pictures() -> None:
    assert picture(128, 96, 3) == picture(128, 96, 3)
    others = {picture(128, 96, seed) for seed in range(8)}
    assert len(others) == 8


def test_a_picture_is_small() -> None:
    assert len(picture(512, 512, 1)) < 64 * 1024  # shapes on a plain background: the load is the server's, not the network's


def test_a_data_uri_carries_the_bytes() -> None:
    png = picture(16, 8, 0)
    uri = data_uri(png)
    assert uri.startswith("data:image/png;base64,") and base64.b64decode(uri.split(",", 1)[1]) == png
    assert data_uri(b"x", "image/jpeg") == "data:image/jpeg;base64,eA=="


def test_with_images_puts_the_text_first_then_the_images() -> None:
    history = ({"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"})
    prompt = Prompt(0, "c", (*history, {"role": "user", "content": "what is this?"}), 12, 8)
    out = with_images(prompt, ["data:a", "data:b"], ["64x64", "32x16"])
    assert out.messages[:2] == history and out.messages[2]["role"] == "user"
    assert out.messages[2]["content"] == [{"type": "text", "text": "what is this?"},
                                          {"type": "image_url", "image_url": {"url": "data:a"}},
                                          {"type": "image_url", "image_url": {"url": "data:b"}}]
    assert out.image_sizes == ("64x64", "32x16") and out.prompt_tokens == 12 and out.max_tokens == 8
    assert prompt.messages[2]["content"] == "what is this?"  # the original is untouched
    assert prompt_text(out) == "what is this?"


def test_about_the_share_of_prompts_carry_images() -> None:
    spec = ImageSpec(count=2, sizes=((64, 64), (96, 32)), share=0.5)
    given = prompts(200)
    out = attach_images(given, spec, seed=11)
    assert len(out) == 200 and [p.index for p in out] == list(range(200))
    carrying = [p for p in out if p.image_sizes]
    assert 70 <= len(carrying) <= 130
    for before, after in zip(given, out):
        assert after.prompt_tokens == before.prompt_tokens and after.conversation_id == before.conversation_id
        if not after.image_sizes:
            assert after is before  # a text-only prompt passes unchanged
            continue
        assert len(after.image_sizes) == 2 and set(after.image_sizes) <= {"64x64", "96x32"}
        parts = after.messages[-1]["content"]
        assert parts[0] == {"type": "text", "text": before.messages[-1]["content"]}
        assert [part["type"] for part in parts] == ["text", "image_url", "image_url"]
        sizes = [decode(part["image_url"]["url"]).size for part in parts[1:]]
        assert [f"{w}x{h}" for w, h in sizes] == list(after.image_sizes)


def test_both_sizes_are_drawn() -> None:
    out = attach_images(prompts(60), ImageSpec(count=1, sizes=((64, 64), (96, 32)), share=1.0), seed=0)
    assert {p.image_sizes for p in out} == {("64x64",), ("96x32",)}


def test_every_image_differs() -> None:
    out = attach_images(prompts(20), ImageSpec(count=3, sizes=((32, 32),), share=1.0), seed=5)
    uris = [part["image_url"]["url"] for p in out for part in p.messages[-1]["content"][1:]]
    assert len(uris) == 60 and len(set(uris)) == 60  # identical bytes would be served from the server's cache


def test_the_same_seed_attaches_the_same_images() -> None:
    spec = ImageSpec(count=1, sizes=((32, 32), (48, 48)), share=0.5)
    assert attach_images(prompts(30), spec, 4) == attach_images(prompts(30), spec, 4)
    assert attach_images(prompts(30), spec, 4) != attach_images(prompts(30), spec, 5)


@pytest.mark.parametrize(("share", "expected"), [(0.0, 0), (1.0, 25)])
def test_a_share_of_none_or_all(share: float, expected: int) -> None:
    out = attach_images(prompts(25), ImageSpec(count=1, sizes=((16, 16),), share=share), seed=1)
    assert sum(1 for p in out if p.image_sizes) == expected
