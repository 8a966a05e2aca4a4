"""The reference server's tool calls: a request with ``tools`` is answered with one call, streamed as llama.cpp
streams it (its id and name first, then its arguments in pieces), on the same timeline content would have had.

Stage: tools (``refserver.py``'s; the standard library only). The call is the tool ``tool_choice`` names, else the
first, its required arguments filled by their JSON schema type, so a client's check of the call against the tools
it sent passes.
"""

from __future__ import annotations

import json
from typing import Any

ARGUMENT_VALUES = {"string": "Paris", "integer": 1, "number": 1.5, "boolean": True, "array": [], "object": {}}
"""The value a tool call's argument gets, by its JSON schema type."""


def tool_call(req: dict[str, Any], rid: str) -> dict[str, Any] | None:
    """The one call a request with ``tools`` gets (None without tools, or with ``tool_choice: none``): the tool
    ``tool_choice`` names, else the first, its required arguments filled by type (``ARGUMENT_VALUES``)."""
    tools, choice = req.get("tools"), req.get("tool_choice")
    if not isinstance(tools, list) or not tools or choice == "none":
        return None
    named = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    function = next((t["function"] for t in tools if t.get("function", {}).get("name") == named),
                    tools[0].get("function", {}))
    params = function.get("parameters") or {}
    args = {key: ARGUMENT_VALUES.get((params.get("properties") or {}).get(key, {}).get("type", "string"))
            for key in params.get("required", ())}
    return {"id": f"call_{rid}", "name": function.get("name", ""), "arguments": json.dumps(args)}


def tool_call_deltas(call: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """``n`` streamed deltas of one call, as llama.cpp sends them: its id and name (arguments empty), then the
    arguments' text in ``n - 1`` pieces."""
    first = {"index": 0, "id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": ""}}
    if n <= 1:  # one delta: the whole call in it
        return [{"tool_calls": [{**first, "function": {"name": call["name"], "arguments": call["arguments"]}}]}]
    text, pieces = call["arguments"], n - 1
    cuts = [round(i * len(text) / pieces) for i in range(pieces + 1)]
    rest = [{"index": 0, "function": {"arguments": text[a:b]}} for a, b in zip(cuts, cuts[1:])]
    return [{"tool_calls": [first]}] + [{"tool_calls": [piece]} for piece in rest]
