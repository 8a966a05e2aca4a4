"""A tiny, generated vision projector ("mmproj") GGUF, so the tiny model can take images.

Ground floor (imports no stage). Image requests need a multimodal projector next to the text model
(``llama-server --mmproj FILE``), and none can be downloaded here. So this module writes one with the
``gguf`` package for the generated tiny model (:mod:`orchestrate.standins.tinymodel`, 128 wide): a
1-layer, 64-wide SigLIP-style ViT with 16-pixel patches and llama.cpp's ``phi4`` projector (a 2-layer
GELU MLP to the text width), random weights (seeded, byte-for-byte reproducible). Encoding an image
takes milliseconds on one CPU core.

``phi4`` is chosen because its image token count grows with the image, as real models' do, and it
needs nothing from the text model's vocabulary: no begin/end markers, no row breaks, no merging of
patches. libmtmd (build 11434, ``mtmd_image_preprocessor_dyn_size``) resizes an image of W×H to
W'×H', multiples of the patch size p (16) that keep its aspect ratio, then each p×p patch is one token:

    W', H' = round(W / p)·p, round(H / p)·p   (each at least p; rounding half away from zero)
    if W'·H' > max_tokens·p²:  β = √(W·H / (max_tokens·p²)),  W', H' = ⌊W/β / p⌋·p, ⌊H/β / p⌋·p
    elif W'·H' < min_tokens·p²: β = √(min_tokens·p² / (W·H)), W', H' = ⌈W·β / p⌉·p, ⌈H·β / p⌉·p
    tokens = (W' / p) · (H' / p)

so 64×64 → 16 tokens, 256×256 → 256, 512×384 → 768, and past ``max_tokens`` (1,024: 512×512)
images are scaled down. :func:`image_tokens` computes it as the server does (in float32).
The server counts these tokens in ``usage.prompt_tokens``; the ChatML template needs no change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

from orchestrate.standins.tinymodel import generated_gguf

FORMAT_VERSION = 1
"""Bump when the generator changes, so cached files are rebuilt."""

PROJECTOR_TYPE = "phi4"
"""llama.cpp's name for the projector (``clip.projector_type``): SigLIP ViT, MLP, dynamic resolution."""
IMAGE_MEAN = IMAGE_STD = (0.5, 0.5, 0.5)
"""Pixel normalization: [0, 1] → [-1, 1]."""


@dataclass(frozen=True)
class TinyVisionSpec:
    """Shape and seed of a generated projector; equal specs give identical files."""

    n_layer: int = 1
    n_embd: int = 64
    n_head: int = 4
    n_ff: int = 128
    patch_size: int = 16
    image_size: int = 256
    """Side of the learned position grid, in pixels ((image_size / patch_size)² positions, interpolated
    to each image's own grid)."""
    min_tokens: int = 16
    """Smaller images are scaled up to at least this many tokens (patches)."""
    max_tokens: int = 1024
    """Larger images are scaled down to at most this many tokens."""
    n_embd_text: int = 128
    """The text model's width (``TinyModelSpec.n_embd``): the projector's output dimension."""
    seed: int = 0


MMPROJS = {"tiny": TinyVisionSpec()}
"""The generated projectors a scenario's ``mmproj:`` can name."""


def _round_half_away(x: np.float32) -> int:
    """C's ``std::round`` (Python's ``round`` rounds half to even)."""
    return int(math.floor(float(x) + 0.5)) if x >= 0 else -int(math.floor(-float(x) + 0.5))


def resized_size(spec: TinyVisionSpec, width: int, height: int) -> tuple[int, int]:
    """The size libmtmd resizes a W×H image to before encoding (``calc_size_preserved_ratio``,
    float32 arithmetic as in C++)."""
    if width <= 0 or height <= 0:
        return 0, 0
    f32 = np.float32
    align = spec.patch_size
    min_pixels = spec.min_tokens * align * align
    max_pixels = spec.max_tokens * align * align

    def round_by(x: np.float32) -> int:
        return _round_half_away(f32(x) / f32(align)) * align

    def ceil_by(x: np.float32) -> int:
        return math.ceil(float(f32(x) / f32(align))) * align

    def floor_by(x: np.float32) -> int:
        return math.floor(float(f32(x) / f32(align))) * align

    w_bar = max(align, round_by(f32(width)))
    h_bar = max(align, round_by(f32(height)))
    if h_bar * w_bar > max_pixels:
        beta = np.sqrt(f32(f32(height) * f32(width)) / f32(max_pixels), dtype=f32)
        h_bar = max(align, floor_by(f32(height) / beta))
        w_bar = max(align, floor_by(f32(width) / beta))
    elif h_bar * w_bar < min_pixels:
        beta = np.sqrt(f32(min_pixels) / f32(f32(height) * f32(width)), dtype=f32)
        h_bar = ceil_by(f32(height) * beta)
        w_bar = ceil_by(f32(width) * beta)
    return w_bar, h_bar


def image_tokens(spec: TinyVisionSpec, width: int, height: int) -> int:
    """How many prompt tokens llama-server counts for one W×H image with this projector."""
    w_bar, h_bar = resized_size(spec, width, height)
    return (w_bar // spec.patch_size) * (h_bar // spec.patch_size)


def _weight(rng: np.random.Generator, rows: int, cols: int, scale: float = 1.0) -> np.ndarray:
    """A ``rows``×``cols`` matrix (``cols`` inputs) of variance ``scale² / cols``."""
    w: np.ndarray = rng.standard_normal((rows, cols)) * (scale / math.sqrt(cols))
    return w.astype(np.float32)


def build_tiny_mmproj(path: Path, spec: TinyVisionSpec = TinyVisionSpec()) -> Path:
    """Write the mmproj GGUF for ``spec`` to ``path`` (overwriting it) and return ``path``."""
    if spec.image_size % spec.patch_size or spec.n_embd % spec.n_head:
        raise ValueError("image_size must be a multiple of patch_size, n_embd of n_head")
    d, p, d_text = spec.n_embd, spec.patch_size, spec.n_embd_text
    n_pos = (spec.image_size // p) ** 2
    rng = np.random.default_rng([spec.seed, 0x715])
    f32 = np.float32
    writer = gguf.GGUFWriter(str(path), "clip")
    writer.add_name("tokenswarm-tiny-vision")
    writer.add_description("random-weight phi4-type projector for the generated tiny model")
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_bool("clip.has_vision_encoder", True)
    writer.add_string("clip.projector_type", PROJECTOR_TYPE)
    writer.add_bool("clip.use_gelu", True)
    writer.add_uint32("clip.vision.embedding_length", d)
    writer.add_uint32("clip.vision.feed_forward_length", spec.n_ff)
    writer.add_uint32("clip.vision.block_count", spec.n_layer)
    writer.add_uint32("clip.vision.projection_dim", d_text)
    writer.add_uint32("clip.vision.attention.head_count", spec.n_head)
    writer.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    writer.add_uint32("clip.vision.image_size", spec.image_size)
    writer.add_uint32("clip.vision.patch_size", p)
    writer.add_uint32("clip.vision.image_min_pixels", spec.min_tokens * p * p)
    writer.add_uint32("clip.vision.image_max_pixels", spec.max_tokens * p * p)
    writer.add_array("clip.vision.image_mean", list(IMAGE_MEAN))
    writer.add_array("clip.vision.image_std", list(IMAGE_STD))
    # Patch embedding: a p×p×3 convolution (numpy shape out, in, kh, kw).
    patch = _weight(rng, d, 3 * p * p).reshape(d, 3, p, p)
    writer.add_tensor("v.patch_embd.weight", patch)
    writer.add_tensor("v.patch_embd.bias", np.zeros(d, dtype=f32))
    writer.add_tensor("v.position_embd.weight", (rng.standard_normal((n_pos, d)) * 0.1).astype(f32))
    for layer in range(spec.n_layer):
        lrng = np.random.default_rng([spec.seed, 0x715, layer])
        blk = f"v.blk.{layer}"
        for norm in ("ln1", "ln2"):
            writer.add_tensor(f"{blk}.{norm}.weight", np.ones(d, dtype=f32))
            writer.add_tensor(f"{blk}.{norm}.bias", np.zeros(d, dtype=f32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_out"):
            writer.add_tensor(f"{blk}.{name}.weight", _weight(lrng, d, d))
            writer.add_tensor(f"{blk}.{name}.bias", np.zeros(d, dtype=f32))
        writer.add_tensor(f"{blk}.ffn_up.weight", _weight(lrng, spec.n_ff, d))
        writer.add_tensor(f"{blk}.ffn_up.bias", np.zeros(spec.n_ff, dtype=f32))
        writer.add_tensor(f"{blk}.ffn_down.weight", _weight(lrng, d, spec.n_ff))
        writer.add_tensor(f"{blk}.ffn_down.bias", np.zeros(d, dtype=f32))
    writer.add_tensor("v.post_ln.weight", np.ones(d, dtype=f32))
    writer.add_tensor("v.post_ln.bias", np.zeros(d, dtype=f32))
    # Projector: ViT width → text width → text width; image embeddings of about unit norm, like the
    # tiny model's token embeddings, so they leave its next-word rigging alone.
    writer.add_tensor("mm.0.weight", _weight(rng, d_text, d))
    writer.add_tensor("mm.0.bias", np.zeros(d_text, dtype=f32))
    writer.add_tensor("mm.2.weight", _weight(rng, d_text, d_text, scale=1 / math.sqrt(d_text)))
    writer.add_tensor("mm.2.bias", np.zeros(d_text, dtype=f32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def tiny_mmproj_path(spec: TinyVisionSpec = TinyVisionSpec(), cache_dir: Path | None = None,
                     build: bool = True) -> Path:
    """The cached GGUF for ``spec`` (``tinymodel.generated_gguf``)."""
    return generated_gguf("tiny-mmproj", spec, FORMAT_VERSION, build_tiny_mmproj, cache_dir, build)
