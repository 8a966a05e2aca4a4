"""The reference server's tool call: the tool asked for, its required arguments filled by type, streamed in pieces."""

from __future__ import annotations

import json

import pytest

from orchestrate.tools.refserver_calls import tool_call, tool_call_deltas

ADD = {"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "number"}, "c": {"type": "string"}},
    "required": ["a", "b"]}}}
ECHO = {"type": "function", "function": {"name": "echo"}}


def test_no_tools_or_tool_choice_none_is_no_call() -> None:
    assert tool_call({}, "r") is None and tool_call({"tools": [ADD], "tool_choice": "none"}, "r") is None


def test_the_named_tool_else_the_first_with_its_required_arguments() -> None:
    call = tool_call({"tools": [ECHO, ADD], "tool_choice": {"type": "function", "function": {"name": "add"}}}, "r1")
    assert call == {"id": "call_r1", "name": "add", "arguments": json.dumps({"a": 1, "b": 1.5})}
    assert tool_call({"tools": [ECHO, ADD], "tool_choice": "auto"}, "r2") == {"id": "call_r2", "name": "echo",
                                                                             "arguments": "{}"}


@pytest.mark.parametrize("n", [1, 2, 3, 7, 40])
def test_n_deltas_carry_the_name_first_then_the_whole_arguments(n: int) -> None:
    call = {"id": "c", "name": "add", "arguments": '{"a": 1, "b": 1.5}'}
    deltas = tool_call_deltas(call, n)
    assert len(deltas) == n and deltas[0]["tool_calls"][0]["function"]["name"] == "add"
    text = "".join(d["tool_calls"][0]["function"]["arguments"] for d in deltas)
    assert text == call["arguments"] and all(d["tool_calls"][0]["index"] == 0 for d in deltas)
