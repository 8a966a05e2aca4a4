"""orchestrate/scenario/request.py: the load section's request keys validated with their files, and what they
become (request body fields, the reply check, Locust's flags, the variant's settings)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrate.errors import ScenarioError
from orchestrate.scenario.parse import parse_scenario
from orchestrate.scenario.request import locust_args, request_fields, request_of, request_settings
from orchestrate.scenario.settings import variant_settings
from orchestrate.scenario.spec import ImageSpec, LoadSpec, RequestSpec
from tests.helpers import write_file

PERSON = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
LOOSE = {"type": "object"}
GRAMMAR = 'root ::= "yes" | "no"\n'
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The scenario's folder, with the files a request may name."""
    write_file(tmp_path, json.dumps(PERSON), "person.json")
    write_file(tmp_path, json.dumps(LOOSE), "loose.json")
    write_file(tmp_path, GRAMMAR, "yesno.gbnf")
    write_file(tmp_path, json.dumps([WEATHER]), "tools.json")
    return tmp_path


def load_of(folder: Path, load: str) -> LoadSpec:
    return parse_scenario(f"name: t\nload:\n{load}", folder / "study.yaml").variants[0].load


def request(folder: Path, load: str) -> RequestSpec:
    return load_of(folder, load).request


def error(folder: Path, load: str) -> str:
    with pytest.raises(ScenarioError) as info:
        load_of(folder, load)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_a_load_without_request_keys_is_plain_chat(folder: Path) -> None:
    assert request(folder, "  users: 2\n") == RequestSpec()


def test_a_schema_file_is_found_beside_the_scenario(folder: Path) -> None:
    spec = request(folder, "  response_format: person.json\n")
    assert spec.schema == str(folder / "person.json") and Path(spec.schema).is_absolute()
    assert (spec.endpoint, spec.check_schema, spec.grammar) == ("chat", None, None)


def test_a_schema_and_another_to_check_replies_by(folder: Path) -> None:
    spec = request(folder, "  response_format: {schema: loose.json, check: person.json}\n")
    assert (spec.schema, spec.check_schema) == (str(folder / "loose.json"), str(folder / "person.json"))


def test_a_grammar(folder: Path) -> None:
    spec = request(folder, "  response_format: {grammar: yesno.gbnf}\n")
    assert spec.grammar == str(folder / "yesno.gbnf") and spec.schema is None


def test_an_absolute_path_is_taken_as_written(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    elsewhere = write_file(tmp_path_factory.mktemp("other"), json.dumps(PERSON), "p.json")
    assert request(folder, f"  response_format: {elsewhere}\n").schema == str(elsewhere)


def test_embeddings_and_rerank_take_inputs_per_request(folder: Path) -> None:
    spec = request(folder, "  endpoint: embeddings\n  inputs_per_request: 8\n")
    assert (spec.endpoint, spec.inputs_per_request) == ("embeddings", 8)
    assert request(folder, "  endpoint: rerank\n").inputs_per_request == 1


def test_tools_and_tool_choice(folder: Path) -> None:
    spec = request(folder, "  tools: tools.json\n  tool_choice: required\n")
    assert (spec.tools, spec.tool_choice) == (str(folder / "tools.json"), "required")


def test_image_sizes_pair_widths_with_one_height(folder: Path) -> None:
    images = request(folder, "  images: {count: 2, width: [64, 256], height: 64, share: 0.25}\n").images
    assert images == ImageSpec(count=2, sizes=((64, 64), (256, 64)), share=0.25)
    assert request(folder, "  images: {width: [64, 128], height: [32, 48]}\n").images == ImageSpec(
        sizes=((64, 32), (128, 48)))
    assert request(folder, "  images: {}\n").images == ImageSpec()  # one 256x256 image on every prompt


def test_a_bad_tools_file_and_a_bad_schema_file(folder: Path) -> None:
    write_file(folder, json.dumps({"tools": [WEATHER]}), "wrapped.json")
    write_file(folder, json.dumps([{"type": "function", "function": {"parameters": {}}}]), "nameless.json")
    write_file(folder, json.dumps({"type": 5}), "bad.json")
    write_file(folder, "{not json", "broken.json")
    write_file(folder, json.dumps([{"type": "function", "function": {"name": "f", "parameters": {"type": 5}}}]),
               "badparams.json")
    scenario = folder / "study.yaml"
    assert error(folder, "  tools: wrapped.json\n").startswith(
        f"{scenario}:3 load.tools: {folder / 'wrapped.json'}: must be a JSON list of tools")
    assert error(folder, "  tools: nameless.json\n").startswith(
        f"{scenario}:3 load.tools: {folder / 'nameless.json'}: tool 0 must be {{type: function, function: {{name")
    assert error(folder, "  tools: badparams.json\n").startswith(
        f"{scenario}:3 load.tools: {folder / 'badparams.json'}: tool 0's parameters: not a valid JSON schema")
    assert error(folder, "  response_format: bad.json\n").startswith(
        f"{scenario}:3 load.response_format: {folder / 'bad.json'}: not a valid JSON schema: ")
    assert error(folder, "  response_format: broken.json\n").startswith(
        f"{scenario}:3 load.response_format: {folder / 'broken.json'}: not JSON: ")


@pytest.mark.parametrize(("load", "where", "message"), [
    ("  endpoint: embedding\n", "3 load.endpoint",
     "must be one of chat, completions, embeddings, rerank, got 'embedding'"),
    ("  users: 2\n  response_format: nowhere.json\n", "4 load.response_format",
     "nowhere.json: no such file (a JSON schema file)"),
    ("  response_format: {schema: person.json, check: nowhere.json}\n", "3 load.response_format.check",
     "nowhere.json: no such file"),
    ("  response_format: {grammar: yesno.gbnf, schema: person.json}\n", "3 load.response_format",
     "give {schema: FILE}"),
    ("  response_format: {check: person.json}\n", "3 load.response_format", "give {schema: FILE}"),
    ("  response_format: {schema: person.json, strict: true}\n", "3 load.response_format.strict", "unknown key"),
    ("  response_format: 5\n", "3 load.response_format", "must be the path of a JSON schema file, got 5"),
    ("  tools: {name: get_weather}\n", "3 load.tools", "must be the path of an OpenAI tools JSON file"),
    ("  tool_choice: auto\n", "3 load.tool_choice", "only means something with tools: FILE"),
    ("  tools: tools.json\n  tool_choice: ''\n", "4 load.tool_choice", "must be auto, required, none or a tool's name"),
    ("  inputs_per_request: 4\n", "3 load.inputs_per_request",
     "only means something with endpoint: embeddings or rerank"),
    ("  endpoint: completions\n  inputs_per_request: 4\n", "4 load.inputs_per_request", "only means something"),
    ("  endpoint: embeddings\n  inputs_per_request: 0\n", "4 load.inputs_per_request", "must be >= 1, got 0"),
    ("  endpoint: embeddings\n  response_format: person.json\n", "4 load.response_format",
     "endpoint embeddings does not take response_format"),
    ("  endpoint: rerank\n  response_format: {grammar: yesno.gbnf}\n", "4 load.response_format",
     "endpoint rerank does not take response_format"),
    ("  endpoint: completions\n  images: {count: 1}\n", "4 load.images",
     "endpoint completions does not take images; use endpoint: chat"),
    ("  endpoint: completions\n  tools: tools.json\n", "4 load.tools",
     "endpoint completions does not take tools; use endpoint: chat"),
    ("  endpoint: embeddings\n  mode: multi_turn\n", "4 load.mode",
     "endpoint embeddings sends single requests; multi-turn replay needs endpoint: chat"),
    ("  images: {share: 1.5}\n", "3 load.images.share", "must be a fraction of the prompts, 0 to 1, got 1.5"),
    ("  images:\n    share: -0.5\n", "4 load.images.share", "must be >= 0"),
    ("  images:\n    count: 0\n", "4 load.images.count", "must be >= 1, got 0"),
    ("  images:\n    width: [64, 128]\n    height: [32, 48, 96]\n", "5 load.images.height",
     "lists of widths and heights pair up: 2 widths, 3 heights"),
    ("  images:\n    width: []\n", "4 load.images.width", "must be a size in pixels or a list of them"),
    ("  images:\n    width: 9000\n", "4 load.images.width", "must be at most 8192 pixels, got 9000"),
    ("  images:\n    height: [64, 0.5]\n", "4 load.images.height", "must be an integer, got 0.5"),
    ("  images:\n    colour: red\n", "4 load.images.colour", "unknown key"),
    ("  images: true\n", "3 load.images", "must be a mapping, got bool"),
])
def test_a_bad_request_key_is_one_line_at_its_line(folder: Path, load: str, where: str, message: str) -> None:
    found = error(folder, load)
    prefix = f"{folder / 'study.yaml'}:{where}: "
    assert found.startswith(prefix), found
    assert message in found[len(prefix):], found


def test_a_trace_is_chat_only(folder: Path) -> None:
    found = error(folder, "  dataset: trace\n  endpoint: rerank\n  trace: {path: x}\n")
    assert "load.endpoint: a trace is replayed as chat; remove endpoint" in found


def test_request_fields_of_plain_chat_are_none() -> None:
    assert request_fields(RequestSpec()) == ({}, None)
    assert request_fields(RequestSpec(endpoint="embeddings", inputs_per_request=4)) == ({}, None)


def test_a_schema_is_sent_as_a_json_schema_response_format_and_checked(folder: Path) -> None:
    extra, check = request_fields(request(folder, "  response_format: person.json\n"))
    assert extra == {"response_format": {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}}}
    assert check == {"schema": PERSON}


def test_replies_are_checked_against_the_check_file_when_given(folder: Path) -> None:
    extra, check = request_fields(request(folder, "  response_format: {schema: loose.json, check: person.json}\n"))
    assert extra["response_format"]["json_schema"] == {"name": "loose", "schema": LOOSE}
    assert check == {"schema": PERSON}


def test_a_grammar_is_sent_as_its_text_and_not_checked(folder: Path) -> None:
    assert request_fields(request(folder, "  response_format: {grammar: yesno.gbnf}\n")) == ({"grammar": GRAMMAR},
                                                                                             None)


@pytest.mark.parametrize(("choice", "sent"), [
    (None, None), ("auto", "auto"), ("required", "required"), ("none", "none"),
    ("get_weather", {"type": "function", "function": {"name": "get_weather"}}),
])
def test_tools_are_sent_and_checked_and_a_tool_s_name_is_a_forced_choice(folder: Path, choice: str | None,
                                                                           sent: Any) -> None:
    load = "  tools: tools.json\n" + ("" if choice is None else f"  tool_choice: {choice}\n")
    extra, check = request_fields(request(folder, load))
    assert extra["tools"] == [WEATHER] and check == (None if choice == "none" else {"tools": [WEATHER]})
    assert extra.get("tool_choice") == sent
    assert ("tool_choice" in extra) == (choice is not None)


def test_a_tool_choice_that_names_no_tool_is_refused(folder: Path) -> None:
    with pytest.raises(ScenarioError, match=r"load.tool_choice: must be auto, required, none or a tool's name "
                                            r"\(get_weather\), got 'get_wether'"):
        request(folder, "  tools: tools.json\n  tool_choice: get_wether\n")


def test_schema_and_tools_together(folder: Path) -> None:
    extra, check = request_fields(request(folder, "  response_format: person.json\n  tools: tools.json\n"))
    assert set(extra) == {"response_format", "tools"} and check == {"schema": PERSON, "tools": [WEATHER]}


def test_plain_chat_adds_no_locust_flags(folder: Path) -> None:
    assert locust_args(load_of(folder, "  users: 2\n")) == []
    assert locust_args(load_of(folder, "  images: {count: 1}\n")) == []  # images ride in prompts.jsonl


def test_locust_flags_carry_the_endpoint_the_fields_and_the_check(folder: Path) -> None:
    assert locust_args(load_of(folder, "  endpoint: embeddings\n  inputs_per_request: 3\n")) == [
        "--endpoint", "embeddings"]
    args = locust_args(load_of(folder, "  endpoint: chat\n  response_format: person.json\n  tools: tools.json\n"))
    assert args[0::2] == ["--request-extra", "--check"]
    assert json.loads(args[1]) == {"response_format": {"type": "json_schema", "json_schema": {
        "name": "person", "schema": PERSON}}, "tools": [WEATHER]}
    assert json.loads(args[3]) == {"schema": PERSON, "tools": [WEATHER]}
    assert " " not in args[3]  # compact: one argument, no spaces
    grammar = locust_args(load_of(folder, "  endpoint: completions\n  response_format: {grammar: yesno.gbnf}\n"))
    assert grammar[:2] == ["--endpoint", "completions"] and grammar[2] == "--request-extra"
    assert json.loads(grammar[3]) == {"grammar": GRAMMAR} and "--check" not in grammar


def test_the_flags_are_what_the_locust_side_reads(folder: Path) -> None:
    from locustfiles.endpoints import request_shape
    args = locust_args(load_of(folder, "  endpoint: completions\n  response_format: person.json\n"))
    flags = dict(zip(args[0::2], args[1::2]))
    shape = request_shape(flags["--endpoint"], flags["--request-extra"], flags["--check"])
    assert shape.endpoint.name == "completions" and shape.check is not None
    assert shape.check.reason('{"name": "x"}', []) is None and shape.check.reason("{}", []) == "schema_mismatch"


def test_settings_of_plain_chat_are_none(folder: Path) -> None:
    assert request_settings(load_of(folder, "  users: 2\n")) == {}
    assert not any(key.startswith(("load.endpoint", "load.schema", "load.images"))
                   for key in variant_settings(parse_scenario("name: t\n", folder / "study.yaml").variants[0]))


def test_a_constrained_chat_run_differs_by_its_constraint_alone(folder: Path) -> None:
    settings = request_settings(load_of(folder, "  response_format: {schema: loose.json, check: person.json}\n"))
    assert settings == {"load.schema": str(folder / "loose.json"), "load.check_schema": str(folder / "person.json")}
    assert "load.endpoint" not in settings and "load.inputs_per_request" not in settings


def test_settings_of_embeddings_tools_and_images(folder: Path) -> None:
    assert request_settings(load_of(folder, "  endpoint: embeddings\n  inputs_per_request: 4\n")) == {
        "load.endpoint": "embeddings", "load.inputs_per_request": 4}
    assert request_settings(load_of(folder, "  endpoint: rerank\n")) == {
        "load.endpoint": "rerank", "load.inputs_per_request": 1}
    assert request_settings(load_of(folder, "  endpoint: completions\n")) == {"load.endpoint": "completions"}
    assert request_settings(load_of(folder, "  tools: tools.json\n  tool_choice: get_weather\n")) == {
        "load.tools": str(folder / "tools.json"), "load.tool_choice": "get_weather"}
    assert request_settings(load_of(folder, "  images: {count: 2, width: [64, 256], height: 64, share: 0.5}\n")) == {
        "load.images": {"count": 2, "sizes": ["64x64", "256x64"], "share": 0.5}}


def test_the_variant_s_settings_carry_the_request_s() -> None:
    variant = parse_scenario("name: t\nload:\n  endpoint: embeddings\n  inputs_per_request: 2\n",
                             Path("study.yaml")).variants[0]
    settings = variant_settings(variant)
    assert settings["load.endpoint"] == "embeddings" and settings["load.inputs_per_request"] == 2


@pytest.mark.parametrize("spec", [
    RequestSpec(),
    RequestSpec(endpoint="rerank", inputs_per_request=5),
    RequestSpec(schema="/a/s.json", check_schema="/a/c.json", tools="/a/t.json", tool_choice="f"),
    RequestSpec(images=ImageSpec(count=2, sizes=((64, 64), (256, 64)), share=0.5)),
])
def test_a_request_spec_reads_back_from_its_dict_and_from_the_run_s_yaml_copy(spec: RequestSpec) -> None:
    data = dataclasses.asdict(spec)
    assert request_of(data) == spec
    assert request_of(yaml.safe_load(yaml.safe_dump(data))) == spec  # tuples written as lists
    assert request_of({}) == RequestSpec()


def test_completions_get_the_schema_as_llama_cpp_s_json_schema(folder: Path) -> None:
    extra, check = request_fields(request(folder, "  endpoint: completions\n  response_format: person.json\n"))
    assert extra == {"json_schema": PERSON} and check == {"schema": PERSON}


def test_images_with_multi_turn_replay_are_refused(folder: Path) -> None:
    with pytest.raises(ScenarioError, match="load.images: images ride on single prompts"):
        request(folder, "  mode: multi_turn\n  images: {count: 1}\n")
    with pytest.raises(ScenarioError, match="load.images: images ride on single prompts"):
        request(folder, "  dataset: trace\n  trace: {path: mooncake-sample}\n  images: {count: 1}\n")
