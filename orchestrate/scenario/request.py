"""The load section's request keys: which endpoint, what rides with each request (a JSON schema, a grammar,
tools, images), and how replies are checked.

Stage: scenario. ``scenario._load`` validates them here, files included (a schema jsonschema refuses, a tools
file that is not OpenAI's shape is one line naming the file); ``request_fields`` turns them into the fields
added to every request body and the check of every reply, which reach Locust as ``--request-extra`` and
``--check`` (so workers on other hosts need none of the files).

```yaml
load:
  endpoint: chat                # completions, embeddings, rerank
  inputs_per_request: 8         # embeddings: texts per request; rerank: documents per query
  response_format: person.json  # a JSON schema; or {schema: a.json, check: b.json}, or {grammar: list.gbnf}
  tools: tools.json             # OpenAI tools; tool_choice: auto | required | none | a tool's name
  images: {count: 1, width: [256, 512], height: [256, 384], share: 0.5}
```
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Callable

from locustfiles.endpoints import CHAT, COMPLETIONS, ENDPOINTS, ONE_BODY
from orchestrate.scenario.spec import ImageSpec, LoadSpec, RequestSpec
from orchestrate.scenario.yamlsource import Checker

REQUEST_KEYS = ("endpoint", "inputs_per_request", "response_format", "tools", "tool_choice", "images")
FORMAT_KEYS = {"schema", "check", "grammar"}
IMAGE_KEYS = {"count", "width", "height", "share"}
TOOL_CHOICES = ("auto", "required", "none")
MAX_IMAGE_SIDE = 8192


def _file(check: Checker, value: Any, where: tuple[Any, ...], what: str) -> str:
    """A file named in the scenario, relative to the scenario's folder (else the working directory)."""
    if not isinstance(value, str) or not value:
        raise check.fail(where, f"must be the path of {what}, got {value!r}")
    path = Path(value).expanduser()
    beside = check.path.parent / path
    found = path if path.is_absolute() or not beside.is_file() else beside
    if not found.is_file():
        raise check.fail(where, f"{value}: no such file ({what})")
    return str(found)


def _json_file(check: Checker, path: str, where: tuple[Any, ...]) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise check.fail(where, f"{path}: cannot read: {exc}") from None
    except ValueError as exc:
        raise check.fail(where, f"{path}: not JSON: {exc}") from None


def _schema(check: Checker, value: Any, where: tuple[Any, ...]) -> str:
    path = _file(check, value, where, "a JSON schema file")
    schema_problem(_json_file(check, path, where), lambda message: check.fail(where, f"{path}: {message}"))
    return path


def schema_problem(schema: Any, fail: Callable[[str], Exception]) -> None:
    """Raise ``fail(message)`` when ``schema`` is not a JSON schema jsonschema accepts."""
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for
    if not isinstance(schema, dict):
        raise fail(f"a JSON schema must be an object, got {type(schema).__name__}")
    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise fail(f"not a valid JSON schema: {exc.message}") from None


def _tools(check: Checker, value: Any, where: tuple[Any, ...]) -> str:
    path = _file(check, value, where, "an OpenAI tools JSON file")
    tools = _json_file(check, path, where)
    if not isinstance(tools, list) or not tools:
        raise check.fail(where, f"{path}: must be a JSON list of tools, each {{type: function, function: {{name, "
                                f"parameters}}}}")
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or tool.get("type") != "function":
            raise check.fail(where, f"{path}: tool {i} must be {{type: function, function: {{name, parameters}}}}")
        if "parameters" in function:
            def fail(message: str, i: int = i) -> Exception:
                return check.fail(where, f"{path}: tool {i}'s parameters: {message}")
            schema_problem(function["parameters"], fail)
    return path


def _sizes(check: Checker, item: dict[str, Any], where: tuple[Any, ...]) -> tuple[tuple[int, int], ...]:
    sides: dict[str, list[int]] = {}
    for key in ("width", "height"):
        raw = item.get(key, 256)
        values = raw if isinstance(raw, list) else [raw]
        if not values:
            raise check.fail(where + (key,), "must be a size in pixels or a list of them")
        sides[key] = [check.number(v, where + (key,), int, 1) for v in values]
        if max(sides[key]) > MAX_IMAGE_SIDE:
            raise check.fail(where + (key,), f"must be at most {MAX_IMAGE_SIDE} pixels, got {max(sides[key])}")
    widths, heights = sides["width"], sides["height"]
    if len(widths) != len(heights) and 1 not in (len(widths), len(heights)):
        raise check.fail(where + ("height",), f"lists of widths and heights pair up: {len(widths)} widths, "
                                              f"{len(heights)} heights (give one of them once to use it for all)")
    n = max(len(widths), len(heights))
    return tuple((widths[i % len(widths)], heights[i % len(heights)]) for i in range(n))


def _images(check: Checker, raw: Any, where: tuple[Any, ...]) -> ImageSpec | None:
    if raw is None:
        return None
    item = check.mapping(raw, where, IMAGE_KEYS)
    share = check.number(item.get("share", 1.0), where + ("share",), float, 0)
    if share > 1:
        raise check.fail(where + ("share",), f"must be a fraction of the prompts, 0 to 1, got {share!r}")
    return ImageSpec(count=check.number(item.get("count", 1), where + ("count",), int, 1),
                     sizes=_sizes(check, item, where), share=share)


def parse_request(check: Checker, raw: dict[str, Any], at: Callable[..., tuple[Any, ...]]) -> dict[str, Any]:
    """``LoadSpec.request`` from a merged load section, validated with its files; ``{}`` when it sets none."""
    if not any(raw.get(key) is not None for key in REQUEST_KEYS):
        return {}
    endpoint = raw.get("endpoint", CHAT)
    if endpoint not in ENDPOINTS:
        raise check.fail(at("endpoint"), f"must be one of {', '.join(ENDPOINTS)}, got {endpoint!r}")
    fields: dict[str, Any] = {"endpoint": endpoint}
    fmt = raw.get("response_format")
    if isinstance(fmt, dict):
        item = check.mapping(fmt, at("response_format"), FORMAT_KEYS)
        if ("grammar" in item) == ("schema" in item) or ("check" in item and "schema" not in item):
            raise check.fail(at("response_format"), "give {schema: FILE} (and check: FILE to judge replies by another "
                                                    "schema) or {grammar: FILE.gbnf}")
        if "grammar" in item:
            fields["grammar"] = _file(check, item["grammar"], at("response_format", "grammar"), "a GBNF grammar")
        else:
            fields["schema"] = _schema(check, item["schema"], at("response_format", "schema"))
            if "check" in item:
                fields["check_schema"] = _schema(check, item["check"], at("response_format", "check"))
    elif fmt is not None:
        fields["schema"] = _schema(check, fmt, at("response_format"))
    if raw.get("tools") is not None:
        fields["tools"] = _tools(check, raw["tools"], at("tools"))
    choice = raw.get("tool_choice")
    if choice is not None:
        if "tools" not in fields:
            raise check.fail(at("tool_choice"), "only means something with tools: FILE")
        names = [tool["function"]["name"] for tool in _json_file(check, fields["tools"], at("tools"))]
        if not isinstance(choice, str) or not (choice in TOOL_CHOICES or choice in names):
            raise check.fail(at("tool_choice"), f"must be {', '.join(TOOL_CHOICES)} or a tool's name "
                                                f"({', '.join(names)}), got {choice!r}")
        fields["tool_choice"] = choice
    images = _images(check, raw.get("images"), at("images"))
    if images is not None:
        fields["images"] = images
    if "inputs_per_request" in raw:
        if endpoint not in ONE_BODY:
            raise check.fail(at("inputs_per_request"), "only means something with endpoint: embeddings or rerank")
        fields["inputs_per_request"] = check.number(raw["inputs_per_request"], at("inputs_per_request"), int, 1)
    _refuse_mismatches(check, raw, at, endpoint, fields)
    return {"request": RequestSpec(**fields)}


def _refuse_mismatches(check: Checker, raw: dict[str, Any], at: Callable[..., tuple[Any, ...]], endpoint: str,
                       fields: dict[str, Any]) -> None:
    """What an endpoint cannot carry, one line each."""
    if "images" in fields and (raw.get("mode", "single") != "single" or raw.get("dataset") == "trace"):
        raise check.fail(at("images"), "images ride on single prompts; multi-turn replay and traces send text")
    if endpoint == CHAT:
        return
    for key, label in (("schema", "response_format"), ("grammar", "response_format"), ("tools", "tools"),
                       ("images", "images")):
        if key in fields and (endpoint in ONE_BODY or key in ("tools", "images")):
            raise check.fail(at(label), f"endpoint {endpoint} does not take {label}"
                             + ("; use endpoint: chat" if endpoint == COMPLETIONS else ""))
    if raw.get("mode", "single") != "single":
        raise check.fail(at("mode"), f"endpoint {endpoint} sends single requests; multi-turn replay needs endpoint: chat")
    if raw.get("dataset") == "trace":
        raise check.fail(at("endpoint"), "a trace is replayed as chat; remove endpoint")


@functools.lru_cache(maxsize=16)
def request_fields(spec: RequestSpec) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The fields added to every request body, and the check of every reply (None: unchecked)."""
    extra: dict[str, Any] = {}
    check: dict[str, Any] = {}
    if spec.schema is not None:
        schema = json.loads(Path(spec.schema).read_text(encoding="utf-8"))
        if spec.endpoint == COMPLETIONS:  # llama.cpp reads response_format on chat only; json_schema on both
            extra["json_schema"] = schema
        else:
            extra["response_format"] = {"type": "json_schema", "json_schema": {"name": Path(spec.schema).stem,
                                                                                "schema": schema}}
        check["schema"] = (schema if spec.check_schema is None
                           else json.loads(Path(spec.check_schema).read_text(encoding="utf-8")))
    if spec.grammar is not None:
        extra["grammar"] = Path(spec.grammar).read_text(encoding="utf-8")
    if spec.tools is not None:
        tools = json.loads(Path(spec.tools).read_text(encoding="utf-8"))
        extra["tools"] = tools
        if spec.tool_choice != "none":  # a request that forbids calls has none to judge
            check["tools"] = tools
        if spec.tool_choice is not None:
            extra["tool_choice"] = (spec.tool_choice if spec.tool_choice in TOOL_CHOICES
                                    else {"type": "function", "function": {"name": spec.tool_choice}})
    return extra, check or None


def locust_args(load: LoadSpec) -> list[str]:
    """``--endpoint`` and, when set, ``--request-extra`` and ``--check`` (none for plain chat)."""
    spec = load.request
    args = [] if spec.endpoint == CHAT else ["--endpoint", spec.endpoint]
    extra, check = request_fields(spec)
    if extra:
        args += ["--request-extra", json.dumps(extra, separators=(",", ":"))]
    if check:
        args += ["--check", json.dumps(check, separators=(",", ":"))]
    return args


def request_settings(load: LoadSpec) -> dict[str, Any]:
    """``Variant.settings`` entries: what each request is, as far as it is not plain chat (so chat's settings stay as
    they were, and a constrained chat run differs from a free one in its constraint alone)."""
    spec = load.request
    out: dict[str, Any] = {}
    if spec.endpoint != CHAT:
        out["load.endpoint"] = spec.endpoint
    if spec.endpoint in ONE_BODY:
        out["load.inputs_per_request"] = spec.inputs_per_request
    for key in ("schema", "check_schema", "grammar", "tools", "tool_choice"):
        if getattr(spec, key) is not None:
            out[f"load.{key}"] = getattr(spec, key)
    if spec.images is not None:
        out["load.images"] = {"count": spec.images.count, "sizes": ["x".join(map(str, s)) for s in spec.images.sizes],
                              "share": spec.images.share}
    return out



def request_of(data: dict[str, Any]) -> RequestSpec:
    """A ``RequestSpec`` read back from its dict (a run's ``scenario.yaml`` copy)."""
    images = data.get("images")
    return RequestSpec(**{**data, "images": None if images is None else ImageSpec(
        count=images["count"], sizes=tuple((int(w), int(h)) for w, h in images["sizes"]), share=images["share"])})
