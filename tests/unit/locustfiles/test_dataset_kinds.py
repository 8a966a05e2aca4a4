"""locustfiles/dataset.py: a prompt's inputs (embeddings, rerank), its images' sizes and content parts in
``prompts.jsonl``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from locustfiles.dataset import DataFileError, Prompt

PARTS = [{"type": "text", "text": "What is in these pictures?"},
         {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
         {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]


def line(**fields: Any) -> str:
    obj = {"index": 0, "conversation_id": "c", "messages": [{"role": "user", "content": "q"}], "prompt_tokens": 3,
           "max_tokens": 4, **fields}
    return json.dumps(obj)


def test_a_prompt_with_images_round_trips() -> None:
    prompt = Prompt(2, "conv-2", ({"role": "user", "content": PARTS},), 11, 16, image_sizes=("256x256", "512x384"))
    text = prompt.to_json()
    assert "\n" not in text and json.loads(text)["image_sizes"] == ["256x256", "512x384"]
    back = Prompt.from_json(text)
    assert back == prompt
    assert back.messages[0]["content"] == PARTS and back.image_sizes == ("256x256", "512x384")


def test_a_prompt_with_inputs_round_trips() -> None:
    prompt = Prompt(5, "c5", ({"role": "user", "content": "the query"},), 40, 0,
                    inputs=("first document", "zweites Dokument", "ドキュメント"))
    text = prompt.to_json()
    assert "ドキュメント" in text  # written as UTF-8, not escaped
    assert Prompt.from_json(text) == prompt


def test_embeddings_prompts_without_messages_round_trip() -> None:
    prompt = Prompt(0, "c0", (), 12, 0, inputs=("a", "b"))
    assert Prompt.from_json(prompt.to_json()) == prompt


def test_a_text_prompt_writes_neither_field() -> None:
    obj = json.loads(Prompt(0, "c", ({"role": "user", "content": "x"},), 1, 1).to_json())
    assert "inputs" not in obj and "image_sizes" not in obj
    back = Prompt.from_json(line())
    assert back.inputs == () and back.image_sizes == ()


def test_a_content_part_of_any_named_type_is_taken() -> None:
    parts = [{"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}]
    assert Prompt.from_json(line(messages=[{"role": "user", "content": parts}])).messages[0]["content"] == parts


@pytest.mark.parametrize("content", [
    [{"text": "no type"}],
    [{"type": 3, "text": "x"}],
    [{"type": "text", "text": "ok"}, "a bare string"],
    [{"type": None}],
    {"type": "text", "text": "an object, not a list"},
    None,
    7,
])
def test_content_that_is_neither_text_nor_typed_parts_is_refused(content: Any) -> None:
    with pytest.raises(DataFileError) as info:
        Prompt.from_json(line(messages=[{"role": "user", "content": content}]))
    message = str(info.value)
    assert "'messages'" in message and "string 'type'" in message and "content parts" in message


@pytest.mark.parametrize(("field", "value", "kind"), [
    ("inputs", [1, 2], None),
    ("inputs", "one text", "a string"),
    ("inputs", ["a", None], None),
    ("image_sizes", [256], None),
    ("image_sizes", {"w": 256}, None),
])
def test_inputs_and_image_sizes_must_be_lists_of_strings(field: str, value: Any, kind: str | None) -> None:
    with pytest.raises(DataFileError) as info:
        Prompt.from_json(line(**{field: value}))
    message = str(info.value)
    assert message.startswith(f"prompt field '{field}' must be a list of strings, got "), message
    if kind is not None:
        assert message.endswith(kind), message
