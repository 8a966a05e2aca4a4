"""The generated tiny vision projector: reproducible, readable as a phi4 mmproj 128 wide, cached, and
its image-token formula (checked against the real server in tests/integration/test_tinyvision_server.py)."""

from __future__ import annotations

from pathlib import Path

import gguf
import pytest

from orchestrate.standins import tinyvision
from orchestrate.standins.tinymodel import TinyModelSpec
from orchestrate.standins.tinyvision import (
    MMPROJS,
    TinyVisionSpec,
    build_tiny_mmproj,
    image_tokens,
    resized_size,
    tiny_mmproj_path,
)


def test_same_spec_gives_identical_bytes(tmp_path: Path) -> None:
    a = build_tiny_mmproj(tmp_path / "a.gguf")
    b = build_tiny_mmproj(tmp_path / "b.gguf")
    c = build_tiny_mmproj(tmp_path / "c.gguf", TinyVisionSpec(seed=1))
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_reads_back_as_a_phi4_projector_to_the_tiny_models_width(tmp_path: Path) -> None:
    spec = TinyVisionSpec()
    reader = gguf.GGUFReader(build_tiny_mmproj(tmp_path / "m.gguf", spec))

    def value(key: str) -> object:
        return reader.fields[key].contents()

    assert value("general.architecture") == "clip"
    assert value("clip.projector_type") == "phi4"
    assert value("clip.has_vision_encoder") is True
    assert value("clip.vision.projection_dim") == 128 == TinyModelSpec().n_embd == spec.n_embd_text
    assert value("clip.vision.patch_size") == spec.patch_size
    assert value("clip.vision.image_max_pixels") == spec.max_tokens * spec.patch_size ** 2
    tensors = {t.name: t for t in reader.tensors}
    assert [int(n) for n in tensors["mm.2.weight"].shape] == [128, 128]  # ggml order: in, out
    assert [int(n) for n in tensors["mm.0.weight"].shape] == [spec.n_embd, 128]
    assert [int(n) for n in tensors["v.patch_embd.weight"].shape] == [16, 16, 3, spec.n_embd]
    assert f"v.blk.{spec.n_layer - 1}.ffn_down.weight" in tensors
    assert MMPROJS["tiny"] == spec


def test_cache_builds_once_and_reuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert tiny_mmproj_path(cache_dir=tmp_path, build=False).parent == tmp_path
    assert not any(tmp_path.iterdir())  # build=False only names it
    first = tiny_mmproj_path(cache_dir=tmp_path)
    assert first.parent == tmp_path and first.name.startswith("tiny-mmproj-") and first.suffix == ".gguf"

    def no_rebuild(path: Path, spec: TinyVisionSpec = TinyVisionSpec()) -> Path:
        raise AssertionError("rebuilt a cached projector")

    monkeypatch.setattr(tinyvision, "build_tiny_mmproj", no_rebuild)
    assert tiny_mmproj_path(cache_dir=tmp_path) == first
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no temp files left behind
    assert tiny_mmproj_path(TinyVisionSpec(seed=1), cache_dir=tmp_path, build=False) != first


@pytest.mark.parametrize(("width", "height", "size", "tokens"), [
    (64, 64, (64, 64), 16),
    (256, 256, (256, 256), 256),
    (512, 384, (512, 384), 768),
    (72, 88, (80, 96), 30),           # 4.5 and 5.5 patches round half away from zero, as C's std::round
    (1000, 700, (608, 416), 988),     # past max_tokens: scaled down, floored to whole patches
    (100, 37, (112, 48), 21),         # 96×32 is below min_tokens: scaled up, ceiled to whole patches
    (20, 20, (64, 64), 16),
    (1, 1, (64, 64), 16),
])
def test_image_tokens_follow_libmtmds_resize(width: int, height: int, size: tuple[int, int], tokens: int) -> None:
    spec = TinyVisionSpec()
    assert resized_size(spec, width, height) == size
    assert image_tokens(spec, width, height) == tokens == (size[0] // 16) * (size[1] // 16)


def test_image_tokens_grow_with_the_image() -> None:
    spec = TinyVisionSpec()
    assert [image_tokens(spec, side, side) for side in (64, 128, 256, 384, 512)] == [16, 64, 256, 576, 1024]
    assert image_tokens(spec, 2048, 2048) == spec.max_tokens
    assert image_tokens(TinyVisionSpec(patch_size=14, image_size=224), 256, 256) == 18 * 18
