"""locustfiles/validity.py: a reply judged against the run's JSON schema or its tools."""

from __future__ import annotations

from typing import Any

import pytest

from locustfiles.validity import REASONS, ReplyCheck, ToolCall

PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
          "required": ["name", "age"], "additionalProperties": False}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time"}}  # no parameters: any JSON arguments match
TOOLS = {"tools": [WEATHER, TIME]}


def call(name: str, *pieces: str) -> ToolCall:
    return ToolCall(name, list(pieces))


def schema_check(schema: dict[str, Any] = PERSON) -> ReplyCheck:
    return ReplyCheck({"schema": schema})


def test_the_reasons_are_the_documented_ones_in_order() -> None:
    assert REASONS == ("cut_short", "not_json", "schema_mismatch", "no_tool_call", "unknown_tool",
                       "arguments_not_json", "arguments_mismatch")


def test_json_that_matches_the_schema_is_valid() -> None:
    check = schema_check()
    assert check.reason('{"name": "Ada", "age": 36}', []) is None
    assert check.reason(' \n{"age": 0, "name": ""}\n', [], "stop") is None  # whitespace around JSON parses


@pytest.mark.parametrize("text", ["", None, "Sure! Here is the JSON: {", '{"name": "Ada", "age": 36', "Ada, 36"])
def test_text_that_does_not_parse_is_not_json(text: str | None) -> None:
    assert schema_check().reason(text, []) == "not_json"
    assert schema_check().reason(text, [], "stop") == "not_json"


@pytest.mark.parametrize("text", ['{"name": "Ada"}', '{"name": "Ada", "age": -1}', '{"name": "Ada", "age": "36"}',
                                  '{"name": "Ada", "age": 36, "extra": true}', "[]", "36", '"Ada"'])
def test_json_that_does_not_match_is_a_schema_mismatch(text: str) -> None:
    assert schema_check().reason(text, []) == "schema_mismatch"


def test_a_reply_cut_at_max_tokens_that_does_not_parse_is_cut_short() -> None:
    assert schema_check().reason('{"name": "Ad', [], "length") == "cut_short"


def test_a_cut_reply_that_parses_and_mismatches_stays_a_schema_mismatch() -> None:
    assert schema_check().reason('{"name": "Ada"}', [], "length") == "schema_mismatch"
    assert schema_check().reason('{"name": "Ada", "age": 1}', [], "length") is None  # cut, but whole and valid


def test_an_empty_schema_takes_any_json_but_not_prose() -> None:
    check = schema_check({})
    assert check.reason("[1, 2, 3]", []) is None and check.reason("null", []) is None
    assert check.reason("hello", []) == "not_json"


def test_a_schema_check_ignores_tool_calls() -> None:
    assert schema_check().reason('{"name": "Ada", "age": 1}', [call("anything", "not json")]) is None


def test_one_valid_tool_call() -> None:
    check = ReplyCheck(TOOLS)
    assert check.reason(None, [call("get_weather", '{"city": ', '"Paris"}')]) is None
    assert check.reason("", [call("get_time", "{}")], "tool_calls") is None


def test_a_reply_without_a_tool_call() -> None:
    assert ReplyCheck(TOOLS).reason("It is sunny in Paris.", []) == "no_tool_call"


def test_a_call_of_a_tool_not_offered() -> None:
    assert ReplyCheck(TOOLS).reason(None, [call("get_stock_price", '{"symbol": "X"}')]) == "unknown_tool"
    assert ReplyCheck(TOOLS).reason(None, [call("", '{"city": "Paris"}')]) == "unknown_tool"  # no name streamed


@pytest.mark.parametrize("pieces", [('{"city": "Par',), (), ("city=Paris",)])
def test_arguments_that_do_not_parse(pieces: tuple[str, ...]) -> None:
    assert ReplyCheck(TOOLS).reason(None, [call("get_weather", *pieces)]) == "arguments_not_json"


@pytest.mark.parametrize("arguments", ['{"town": "Paris"}', '{"city": 75}', '["Paris"]'])
def test_arguments_that_do_not_match_the_tool_s_parameters(arguments: str) -> None:
    assert ReplyCheck(TOOLS).reason(None, [call("get_weather", arguments)]) == "arguments_mismatch"


def test_a_tool_without_parameters_takes_any_json_arguments() -> None:
    check = ReplyCheck(TOOLS)
    assert check.reason(None, [call("get_time", '{"zone": "UTC", "n": 3}')]) is None
    assert check.reason(None, [call("get_time", "now")]) == "arguments_not_json"


@pytest.mark.parametrize(("second", "reason"), [
    (call("get_weather", '{"city": 1}'), "arguments_mismatch"),
    (call("get_news", "{}"), "unknown_tool"),
    (call("get_time", "{"), "arguments_not_json"),
])
def test_every_call_is_judged_not_only_the_first(second: ToolCall, reason: str) -> None:
    check = ReplyCheck(TOOLS)
    first = call("get_weather", '{"city": "Paris"}')
    assert check.reason(None, [first, second]) == reason
    assert check.reason(None, [first, call("get_time", "{}")]) is None


def test_the_first_bad_call_gives_the_reason() -> None:
    calls = [call("get_news", "{}"), call("get_weather", "{")]
    assert ReplyCheck(TOOLS).reason(None, calls) == "unknown_tool"


def test_schema_and_tools_together_check_the_schema_first() -> None:
    check = ReplyCheck({"schema": PERSON, **TOOLS})
    assert check.reason("nope", []) == "not_json"
    assert check.reason('{"name": "Ada", "age": 3}', []) == "no_tool_call"
    assert check.reason('{"name": "Ada", "age": 3}', [call("get_time", "{}")]) is None


def test_an_unchecked_spec_finds_nothing() -> None:
    check = ReplyCheck({})
    assert check.schema is None and check.tools == {}
    assert check.reason("not json at all", [], "length") is None


def test_a_schema_jsonschema_refuses_is_refused_when_the_check_is_built() -> None:
    from jsonschema.exceptions import SchemaError
    with pytest.raises(SchemaError):
        ReplyCheck({"schema": {"type": 5}})
    with pytest.raises(SchemaError):
        ReplyCheck({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"required": "x"}}}]})


def test_a_tool_call_cut_at_max_tokens_is_cut_short_but_other_reasons_stay() -> None:
    check = ReplyCheck(TOOLS)
    assert check.reason(None, [call("get_weather", '{"city": "Pa')], "length") == "cut_short"
    assert check.reason(None, [call("get_weather", '{"city": 2}')], "length") == "arguments_mismatch"
    assert check.reason("I would call a tool but", [], "length") == "no_tool_call"
