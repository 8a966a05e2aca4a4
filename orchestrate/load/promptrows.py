"""A JSONL file of your own prompts, each with the images it carries: ``dataset: FILE.jsonl``.

Stage: load. One JSON object a line:

    {"prompt": "What is in this picture?", "images": ["photos/cat.png"], "max_tokens": 64}

``images`` (paths relative to the file, PNG, JPEG, WebP or GIF) and ``max_tokens`` (default: the load's) are
optional. The rows are shuffled with the load's seed and the first ``num_prompts`` that fit a slot's context are
sent, each image inline as an ``image_url`` part (a ``data:`` URI), so workers on other hosts need none of the
files. Every problem is one line naming the file and line. The prompt's length is its text's as the server counts
it (chat template included); what its images add is the server's own count (``image_tokens`` in the records).
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from locustfiles.dataset import Prompt, SampleResult
from orchestrate.errors import DatasetError
from orchestrate.load.images import data_uri, with_images

MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp", ".gif": "image/gif"}
SUFFIX = ".jsonl"
DROP_RULES = ("exceeds_slot_context",)


@dataclass(frozen=True)
class PromptRow:
    """One line of the file, its images checked (they exist, and are images of a known kind)."""

    line: int
    prompt: str
    images: tuple[Path, ...] = ()
    sizes: tuple[str, ...] = ()
    """``WIDTHxHEIGHT`` of each image."""
    max_tokens: int | None = None


def is_prompt_rows(name: str) -> bool:
    """A dataset named by a ``.jsonl`` path is prompt rows (ShareGPT files are JSON arrays)."""
    return name.endswith(SUFFIX)


def _image(path: Path, where: str) -> str:
    if path.suffix.lower() not in MIME:
        raise DatasetError(f"{where}: {path.name}: not an image this reads ({', '.join(MIME)})")
    try:
        with Image.open(path) as image:
            width, height = image.size
    except FileNotFoundError:
        raise DatasetError(f"{where}: {path}: no such image") from None
    except (OSError, UnidentifiedImageError) as exc:
        raise DatasetError(f"{where}: {path}: not a readable image ({exc})") from None
    return f"{width}x{height}"


def _row(raw: str, path: Path, number: int) -> PromptRow:
    where = f"{path}:{number}"
    try:
        obj = json.loads(raw)
    except ValueError as exc:
        raise DatasetError(f"{where}: not JSON ({exc})") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("prompt"), str) or not obj["prompt"]:
        raise DatasetError(f'{where}: each line must be an object with a non-empty "prompt" string')
    unknown = set(obj) - {"prompt", "images", "max_tokens"}
    if unknown:
        raise DatasetError(f"{where}: unknown field {sorted(unknown)[0]!r}; a line has prompt, images, max_tokens")
    images = obj.get("images", [])
    if not isinstance(images, list) or not all(isinstance(x, str) and x for x in images):
        raise DatasetError(f'{where}: "images" must be a list of image paths')
    cap = obj.get("max_tokens")
    if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < 1):
        raise DatasetError(f'{where}: "max_tokens" must be an integer >= 1, got {cap!r}')
    files = tuple((path.parent / x).resolve() if not Path(x).is_absolute() else Path(x) for x in images)
    return PromptRow(number, obj["prompt"], files, tuple(_image(f, where) for f in files), cap)


@functools.lru_cache(maxsize=4)
def _read(path: Path, stamp: tuple[int, int]) -> tuple[PromptRow, ...]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, start=1):
            if raw.strip():
                rows.append(_row(raw, path, number))
    if not rows:
        raise DatasetError(f"{path}: no prompt in the file")
    return tuple(rows)


def read_prompt_rows(path: Path) -> tuple[PromptRow, ...]:
    """Every row, checked (read once per process while the file is unchanged); ``DatasetError`` names FILE:LINE."""
    try:
        st = path.stat()
    except OSError:
        raise DatasetError(f"load.dataset: {path} does not exist (or is not a file)") from None
    try:
        return _read(path.resolve(), (st.st_mtime_ns, st.st_size))
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text ({exc.reason})") from None


def row_prompts(rows: tuple[PromptRow, ...], num_prompts: int, seed: int, max_tokens: int,
                count: Callable[[list[str]], list[int]], counter_name: str, per_slot_ctx: int | None) -> SampleResult:
    """The first ``num_prompts`` rows in the seed's order that fit a slot (prompt + max_tokens), their images
    inline; ``count`` measures the texts (chat template included)."""
    order = list(rows)
    random.Random(seed).shuffle(order)
    counts = count([row.prompt for row in order])
    kept: list[Prompt] = []
    dropped = dict.fromkeys(DROP_RULES, 0)
    examined = 0
    for row, tokens in zip(order, counts):
        if len(kept) == num_prompts:
            break
        examined += 1
        asked = row.max_tokens or max_tokens
        if per_slot_ctx is not None and tokens + asked > per_slot_ctx:
            dropped["exceeds_slot_context"] += 1
            continue
        prompt = Prompt(len(kept), f"line-{row.line}", ({"role": "user", "content": row.prompt},), tokens, asked)
        if row.images:
            uris = [data_uri(f.read_bytes(), MIME[f.suffix.lower()]) for f in row.images]
            prompt = with_images(prompt, uris, list(row.sizes))
        kept.append(prompt)
    if not kept:
        raise DatasetError(f"no prompt fits a slot of {per_slot_ctx} tokens with its max_tokens ({examined} examined)")
    return SampleResult(kept, dropped, examined, counter_name, num_prompts)
