"""locustfiles/endpoints.py: each endpoint's request body, one-body replies read, the run's flags checked."""

from __future__ import annotations

import json
from typing import Any

import pytest

from locustfiles.dataset import Prompt
from locustfiles.endpoints import (
    CHAT,
    COMPLETIONS,
    EMBEDDINGS,
    ENDPOINTS,
    ONE_BODY,
    PATHS,
    RERANK,
    prompt_text,
    read_json_reply,
    request_body,
    request_shape,
)
from locustfiles.validity import ReplyCheck

STREAM_FIELDS = ("max_tokens", "stream", "stream_options")
IMAGE_PART = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}


def prompt(content: Any = "Why is the sky blue?", inputs: tuple[str, ...] = (), max_tokens: int = 32,
           earlier: tuple[dict[str, Any], ...] = ()) -> Prompt:
    return Prompt(0, "c0", (*earlier, {"role": "user", "content": content}), 7, max_tokens, inputs=inputs)


def test_the_endpoints_and_their_paths() -> None:
    assert {name: e.path for name, e in ENDPOINTS.items()} == {
        CHAT: "/v1/chat/completions", COMPLETIONS: "/v1/completions", EMBEDDINGS: "/v1/embeddings",
        RERANK: "/v1/rerank"}
    assert ONE_BODY == {EMBEDDINGS, RERANK} and len(PATHS) == 4
    assert (ENDPOINTS[EMBEDDINGS].needs, ENDPOINTS[RERANK].needs) == ("--embeddings", "--reranking")
    assert (ENDPOINTS[EMBEDDINGS].unit, ENDPOINTS[RERANK].unit) == ("inputs", "documents")


def test_chat_sends_every_message_and_streams_with_usage() -> None:
    history = ({"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"})
    p = prompt("And now?", earlier=history, max_tokens=12)
    body = request_body(ENDPOINTS[CHAT], p, {})
    assert body == {"messages": [*history, {"role": "user", "content": "And now?"}], "max_tokens": 12,
                    "stream": True, "stream_options": {"include_usage": True}}
    assert isinstance(body["messages"], list)


def test_completions_sends_the_last_user_message_s_text() -> None:
    p = prompt("Tell me a story.", earlier=({"role": "user", "content": "first"},
                                             {"role": "assistant", "content": "reply"}), max_tokens=5)
    body = request_body(ENDPOINTS[COMPLETIONS], p, {})
    assert body == {"prompt": "Tell me a story.", "max_tokens": 5, "stream": True,
                    "stream_options": {"include_usage": True}}
    assert "messages" not in body


def test_completions_of_a_message_with_content_parts_sends_their_text_alone() -> None:
    parts = [{"type": "text", "text": "Describe "}, IMAGE_PART, {"type": "text", "text": "this picture."}]
    p = prompt(parts)
    assert prompt_text(p) == "Describe this picture."
    assert request_body(ENDPOINTS[COMPLETIONS], p, {})["prompt"] == "Describe this picture."
    assert prompt_text(prompt([IMAGE_PART])) == ""  # an image alone: no text


def test_embeddings_sends_the_inputs_as_floats_and_no_stream_fields() -> None:
    p = prompt(inputs=("one text", "another text", "a third"))
    body = request_body(ENDPOINTS[EMBEDDINGS], p, {})
    assert body == {"input": ["one text", "another text", "a third"], "encoding_format": "float"}
    assert not set(STREAM_FIELDS) & set(body)


def test_rerank_sends_the_query_its_documents_and_top_n() -> None:
    p = prompt("which is about cats?", inputs=("dogs bark", "cats purr"))
    body = request_body(ENDPOINTS[RERANK], p, {})
    assert body == {"query": "which is about cats?", "documents": ["dogs bark", "cats purr"], "top_n": 2}
    assert not set(STREAM_FIELDS) & set(body)


@pytest.mark.parametrize("name", [CHAT, COMPLETIONS])
def test_the_streaming_endpoints_send_max_tokens_and_stream_fields(name: str) -> None:
    body = request_body(ENDPOINTS[name], prompt(max_tokens=99), {})
    assert (body["max_tokens"], body["stream"], body["stream_options"]) == (99, True, {"include_usage": True})


@pytest.mark.parametrize("name", [CHAT, COMPLETIONS, EMBEDDINGS, RERANK])
def test_extra_fields_are_added_and_win(name: str) -> None:
    extra = {"grammar": "root ::= \"x\"", "max_tokens": 3, "encoding_format": "base64", "top_n": 1}
    body = request_body(ENDPOINTS[name], prompt(inputs=("a", "b")), extra)
    for key, value in extra.items():
        assert body[key] == value
    assert extra == {"grammar": "root ::= \"x\"", "max_tokens": 3, "encoding_format": "base64", "top_n": 1}


def test_the_body_does_not_share_the_prompt_s_tuples() -> None:
    p = prompt(inputs=("a",))
    body = request_body(ENDPOINTS[EMBEDDINGS], p, {})
    body["input"].append("b")
    assert p.inputs == ("a",)


# llama.cpp's /v1/embeddings reply (OpenAI's shape) for two inputs
EMBEDDINGS_REPLY = {"model": "m", "object": "list",
                    "usage": {"prompt_tokens": 11, "total_tokens": 11},
                    "data": [{"embedding": [0.1, -0.2, 0.3], "index": 0, "object": "embedding"},
                             {"embedding": [0.0, 0.5, 0.25], "index": 1, "object": "embedding"}]}
RERANK_REPLY = b'{"results":[{"index":0,"relevance_score":0.3}],"usage":{"prompt_tokens":19}}'


def test_an_embeddings_reply_gives_its_vectors_and_the_server_s_prompt_tokens() -> None:
    reply = read_json_reply(ENDPOINTS[EMBEDDINGS], json.dumps(EMBEDDINGS_REPLY).encode(), 2)
    assert (reply.prompt_tokens, reply.items, reply.error_class, reply.error_detail) == (11, 2, None, None)


def test_a_rerank_reply_gives_its_scores_and_prompt_tokens() -> None:
    reply = read_json_reply(ENDPOINTS[RERANK], RERANK_REPLY, 1)
    assert (reply.prompt_tokens, reply.items, reply.error_class) == (19, 1, None)


def test_a_reply_without_usage_has_no_prompt_tokens_but_is_fine() -> None:
    reply = read_json_reply(ENDPOINTS[RERANK], b'{"results":[{"index":0,"relevance_score":1.0}],"usage":null}', 1)
    assert (reply.prompt_tokens, reply.items, reply.error_class) == (None, 1, None)


@pytest.mark.parametrize(("name", "body", "asked", "items", "detail"), [
    (EMBEDDINGS, json.dumps(EMBEDDINGS_REPLY).encode(), 3, 2, "2 vectors for 3 inputs"),
    (EMBEDDINGS, json.dumps(EMBEDDINGS_REPLY).encode(), 1, 2, "2 vectors for 1 inputs"),
    (RERANK, RERANK_REPLY, 4, 1, "1 scores for 4 documents"),
])
def test_the_wrong_number_of_items_is_a_bad_reply(name: str, body: bytes, asked: int, items: int, detail: str) -> None:
    reply = read_json_reply(ENDPOINTS[name], body, asked)
    assert reply.error_class == "bad_reply" and reply.error_detail == detail
    assert reply.items == items and reply.prompt_tokens is not None  # what the server sent is kept


@pytest.mark.parametrize(("name", "body", "kind"), [
    (EMBEDDINGS, b"<html>502 Bad Gateway</html>", "JSONDecodeError"),
    (EMBEDDINGS, b"", "JSONDecodeError"),
    (EMBEDDINGS, RERANK_REPLY, "KeyError"),  # a rerank body where vectors were asked for
    (RERANK, json.dumps(EMBEDDINGS_REPLY).encode(), "KeyError"),
    (RERANK, b'{"results": null}', "TypeError"),
    (RERANK, b"[1, 2]", "TypeError"),
])
def test_a_body_that_is_not_the_shape_is_a_bad_reply(name: str, body: bytes, kind: str) -> None:
    reply = read_json_reply(ENDPOINTS[name], body, 1)
    assert reply.error_class == "bad_reply" and reply.items is None and reply.prompt_tokens is None
    assert reply.error_detail is not None and reply.error_detail.startswith(kind + ":")
    assert len(reply.error_detail) <= 200


def test_a_usage_that_is_not_an_object_is_a_bad_reply_too() -> None:
    reply = read_json_reply(ENDPOINTS[RERANK], b'{"results":[{"index":0}],"usage":[19]}', 1)
    assert reply.error_class == "bad_reply"


@pytest.mark.parametrize("tokens", ["NaN", "-1", "1.5", '"19"', "true"])
def test_a_prompt_token_count_that_is_not_a_count_is_left_out(tokens: str) -> None:
    body = b'{"results":[{"index":0}],"usage":{"prompt_tokens":%s}}' % tokens.encode()
    reply = read_json_reply(ENDPOINTS[RERANK], body, 1)
    assert reply.error_class is None and reply.items == 1 and reply.prompt_tokens is None


def test_a_plain_chat_shape_has_no_extra_and_no_check() -> None:
    shape = request_shape(CHAT, "", "")
    assert shape.endpoint is ENDPOINTS[CHAT] and shape.extra == {} and shape.check is None


def test_the_flags_make_the_run_s_shape() -> None:
    extra = {"response_format": {"type": "json_object"}}
    check = {"schema": {"type": "object", "required": ["name"]}}
    shape = request_shape(COMPLETIONS, json.dumps(extra), json.dumps(check))
    assert shape.endpoint is ENDPOINTS[COMPLETIONS] and shape.extra == extra
    assert isinstance(shape.check, ReplyCheck)
    assert shape.check.reason('{"name": "x"}', []) is None and shape.check.reason("{}", []) == "schema_mismatch"


def test_the_shape_is_read_once_per_process() -> None:
    assert request_shape(EMBEDDINGS, '{"dimensions": 8}', "") is request_shape(EMBEDDINGS, '{"dimensions": 8}', "")


@pytest.mark.parametrize(("endpoint", "extra", "check", "message"), [
    ("chat/completions", "", "", "--endpoint: unknown endpoint 'chat/completions'; one of chat, completions, "
                                 "embeddings, rerank"),
    (CHAT, "{not json", "", "--request-extra: not JSON"),
    (CHAT, "[1, 2]", "", "--request-extra: must be a JSON object"),
    (CHAT, '"text"', "", "--request-extra: must be a JSON object"),
    (CHAT, "", "{schema", "--check: JSONDecodeError"),
    (CHAT, "", '{"tools": [{"type": "function"}]}', "--check: KeyError"),
    (CHAT, "", "[]", "--check: AttributeError"),
])
def test_a_bad_flag_is_named(endpoint: str, extra: str, check: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        request_shape(endpoint, extra, check)
    assert str(info.value).startswith(message), str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("check", [
    {"schema": {"type": 5}},
    {"schema": {"properties": {"a": {"minimum": "zero"}}}},
    {"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "nothing"}}}]},
])
def test_a_schema_jsonschema_refuses_is_refused_in_check(check: dict[str, Any]) -> None:
    with pytest.raises(ValueError) as info:
        request_shape(CHAT, "", json.dumps(check))
    assert str(info.value).startswith("--check: SchemaError:"), str(info.value)
    assert len(str(info.value)) <= 300
