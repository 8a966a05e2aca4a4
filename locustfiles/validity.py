"""Is a constrained reply valid? Its text parses and matches the JSON schema, or its tool calls name a known tool
with arguments that match that tool's parameters.

Stage: load (inside a Locust worker). ``--check`` hands every worker the same check as JSON (``{"schema": …}``
or ``{"tools": […]}``); each reply is judged once, when its stream ends, and the record keeps the verdict
(``valid``) and, when invalid, the first reason (one of ``REASONS``). The schema is checked with
``jsonschema``, imported only by a run that checks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

REASONS = ("cut_short", "not_json", "schema_mismatch", "no_tool_call", "unknown_tool", "arguments_not_json",
           "arguments_mismatch")
"""Why a reply was invalid, in the order they are checked."""


@dataclass
class ToolCall:
    """One streamed tool call, its pieces joined (``delta.tool_calls[i].function``)."""

    name: str = ""
    arguments: list[str] = field(default_factory=list)


def _validator(schema: dict[str, Any]) -> Any:
    from jsonschema.validators import validator_for  # a run that checks needs it; the others never import it
    cls = validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


class ReplyCheck:
    """The run's check, its validators built once per process."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.schema = _validator(spec["schema"]) if "schema" in spec else None
        self.tools = {tool["function"]["name"]: _validator(tool["function"].get("parameters") or {})
                      for tool in spec.get("tools", ())}

    def reason(self, text: str | None, calls: list[ToolCall], finish_reason: str | None = None) -> str | None:
        """None when the reply is valid, else why not (one of ``REASONS``): ``cut_short`` when a reply that does not
        parse was cut at its ``max_tokens`` (``finish_reason: length``), which is the request's limit, not the server's
        fault."""
        found = self._problem(text, calls)
        return "cut_short" if found and finish_reason == "length" and found.endswith("not_json") else found

    def _problem(self, text: str | None, calls: list[ToolCall]) -> str | None:
        if self.schema is not None:
            found = _first_problem(self.schema, text or "", "not_json", "schema_mismatch")
            if found:
                return found
        if self.tools:
            if not calls:
                return "no_tool_call"
            for call in calls:
                validator = self.tools.get(call.name)
                if validator is None:
                    return "unknown_tool"
                found = _first_problem(validator, "".join(call.arguments), "arguments_not_json", "arguments_mismatch")
                if found:
                    return found
        return None


def _first_problem(validator: Any, text: str, not_json: str, mismatch: str) -> str | None:
    try:
        value = json.loads(text)
    except ValueError:
        return not_json
    return None if validator.is_valid(value) else mismatch
