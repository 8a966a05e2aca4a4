"""``dataset: FILE.jsonl``: rows of prompts and their images, checked line by line and sampled with the seed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrate.errors import DatasetError
from orchestrate.load.images import picture
from orchestrate.load.promptrows import is_prompt_rows, read_prompt_rows, row_prompts


def write_rows(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.mark.parametrize(("line", "message"), [
    ("not json", "rows.jsonl:2: not JSON"),
    ('{"images": []}', 'rows.jsonl:2: each line must be an object with a non-empty "prompt" string'),
    ('{"prompt": "x", "image": "a.png"}', "rows.jsonl:2: unknown field 'image'"),
    ('{"prompt": "x", "images": "a.png"}', 'rows.jsonl:2: "images" must be a list of image paths'),
    ('{"prompt": "x", "max_tokens": 0}', 'rows.jsonl:2: "max_tokens" must be an integer >= 1, got 0'),
    ('{"prompt": "x", "images": ["missing.png"]}', "missing.png: no such image"),
    ('{"prompt": "x", "images": ["notes.txt"]}', "rows.jsonl:2: notes.txt: not an image this reads"),
    ('{"prompt": "x", "images": ["broken.png"]}', "broken.png: not a readable image"),
])
def test_a_bad_line_is_one_error_naming_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    (tmp_path / "broken.png").write_bytes(b"not a png")
    path = write_rows(tmp_path, ['{"prompt": "fine"}', line])
    with pytest.raises(DatasetError) as info:
        read_prompt_rows(path)
    assert message in str(info.value) and str(path) in str(info.value)


def test_rows_carry_their_images_inline_and_their_own_max_tokens(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(picture(64, 48, 1))
    path = write_rows(tmp_path, [json.dumps({"prompt": f"p{i}", **({"images": ["a.png", "a.png"], "max_tokens": 3}
                                                                   if i == 0 else {})}) for i in range(5)])
    rows = read_prompt_rows(path)
    assert is_prompt_rows(str(path)) and not is_prompt_rows("x.json")
    assert rows[0].sizes == ("64x48", "64x48") and rows[1].images == ()
    sample = row_prompts(rows, 5, 0, 16, lambda texts: [10] * len(texts), "fake", None)
    first = next(p for p in sample.prompts if p.conversation_id == "line-1")
    parts = first.messages[0]["content"]
    assert [part["type"] for part in parts] == ["text", "image_url", "image_url"] and first.max_tokens == 3
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,") and first.image_sizes == ("64x48",) * 2
    assert sorted(p.max_tokens for p in sample.prompts) == [3, 16, 16, 16, 16]
    again = row_prompts(rows, 5, 0, 16, lambda texts: [10] * len(texts), "fake", None)
    assert [p.conversation_id for p in again.prompts] == [p.conversation_id for p in sample.prompts]  # the seed's order


def test_rows_that_do_not_fit_a_slot_are_dropped_and_counted(tmp_path: Path) -> None:
    rows = read_prompt_rows(write_rows(tmp_path, [json.dumps({"prompt": "x" * n}) for n in (1, 50, 2, 60)]))
    sample = row_prompts(rows, 4, 0, 8, lambda texts: [len(t) for t in texts], "chars", 40)
    assert len(sample.prompts) == 2 and sample.dropped == {"exceeds_slot_context": 2} and sample.shortfall == 2
    with pytest.raises(DatasetError, match="no prompt fits a slot of 5 tokens"):
        row_prompts(rows, 4, 0, 8, lambda texts: [len(t) for t in texts], "chars", 5)
