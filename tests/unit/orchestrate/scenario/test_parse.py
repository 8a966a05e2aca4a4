"""orchestrate/scenario/parse.py: YAML → frozen Scenario/Variant, and one-line ``FILE:LINE key.path: message`` errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from orchestrate.errors import ScenarioError, TokenswarmError
from orchestrate.scenario.parse import LOAD_KEYS, TOP_KEYS, VARIANT_KEYS, load_scenario, parse_scenario
from orchestrate.scenario.settings import variant_settings
from orchestrate.scenario.spec import LAUNCHER_KINDS, SAMPLING_KEYS, SERVER_KEYS, Factor, LoadSpec, Scenario, ServerSpec
from tests.helpers import ROOT, SCENARIO_PATH
from tests.helpers import parse_text as parse
from tests.helpers import scenario_error as error_of

PATH = SCENARIO_PATH

FA_STUDY = """\
name: fa-study
description: flash attention on and off
server:
  launcher: embedded
  model: tiny
  flags:
    parallel: 32
    ctx-size: 65536
    flash-attn: auto
load:
  users: 32
  num_prompts: 1000
  max_tokens: 256
  sampling:
    max_prompt_tokens: 1024
variants:
  - name: fa-auto
  - name: fa-off
    server:
      flags:
        flash-attn: "off"
    load:
      users: 8
      sampling:
        fixed_output_tokens: 64
"""




# --- valid scenarios ----------------------------------------------------------------------------

def test_two_variants_deep_merge_over_the_top_level():
    scenario = parse(FA_STUDY)
    assert scenario.name == "fa-study"
    assert scenario.description == "flash attention on and off"
    assert scenario.path == PATH
    auto, off = scenario.variants
    assert (auto.name, off.name) == ("fa-auto", "fa-off")
    # fa-auto: the top level unchanged
    assert auto.server == ServerSpec(launcher="embedded", model="tiny",
                                     flags={"parallel": 32, "ctx-size": 65536, "flash-attn": "auto"})
    assert auto.load.users == 32 and auto.load.sampling == {"max_prompt_tokens": 1024}
    # fa-off: one flag replaced, the others kept; nested sampling merged key by key
    assert off.server.flags == {"parallel": 32, "ctx-size": 65536, "flash-attn": "off"}
    assert off.load.users == 8
    assert off.load.num_prompts == 1000 and off.load.max_tokens == 256
    assert off.load.sampling == {"max_prompt_tokens": 1024, "fixed_output_tokens": 64}
    # spawn_rate defaults to the users of each variant
    assert (auto.load.spawn_rate, off.load.spawn_rate) == (32.0, 8.0)
    assert isinstance(off.load.spawn_rate, float)
    # results/<run>/scenario.yaml holds every variant's merged settings
    as_run = scenario.as_run()
    assert [v["name"] for v in as_run["variants"]] == ["fa-auto", "fa-off"]
    assert as_run["variants"][1]["server"]["flags"]["flash-attn"] == off.server.flags["flash-attn"]


def test_merge_does_not_leak_between_variants():
    scenario = parse(FA_STUDY)
    assert scenario.variants[0].server.flags["flash-attn"] == "auto"
    assert "fixed_output_tokens" not in scenario.variants[0].load.sampling


def test_defaults_without_variants():
    scenario = parse("")
    assert scenario.name == "study"  # the file's stem
    assert scenario.description == ""
    (only,) = scenario.variants
    assert only.name == "default"
    assert only.server == ServerSpec()
    assert only.load == LoadSpec()
    assert (only.server.launcher, only.server.model, only.server.ready_timeout_s) == ("embedded", "tiny", 300.0)
    assert (only.load.dataset, only.load.users, only.load.spawn_rate, only.load.num_prompts,
            only.load.max_tokens, only.load.max_seconds) == ("synthetic", 32, 32.0, 1000, 256, None)


def test_top_level_only_gives_one_default_variant():
    scenario = parse("""\
        name: solo
        load:
          users: 4
          spawn_rate: 2
    """)
    (only,) = scenario.variants
    assert only.name == "default"
    assert (only.load.users, only.load.spawn_rate) == (4, 2.0)


def test_with_overrides_applies_to_every_variant_and_keeps_the_original():
    scenario = parse(FA_STUDY)
    changed = scenario.with_overrides(server={"launcher": "external", "url": "http://127.0.0.1:8080"},
                                      load={"users": 2, "num_prompts": 10})
    for v in changed.variants:
        assert (v.server.launcher, v.server.url) == ("external", "http://127.0.0.1:8080")
        assert (v.load.users, v.load.num_prompts) == (2, 10)
    # untouched fields survive; per-variant differences survive
    assert changed.variants[1].server.flags["flash-attn"] == "off"
    assert changed.variants[1].load.sampling["fixed_output_tokens"] == 64
    # frozen: the original is unchanged
    assert scenario.variants[0].load.users == 32 and scenario.variants[0].server.url is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        changed.variants[0].load.users = 3  # type: ignore[misc]


def test_with_no_overrides_is_equal():
    scenario = parse(FA_STUDY)
    assert scenario.with_overrides() == scenario


def test_packaged_dataset_and_allow_truncated():
    scenario = parse("""\
        load:
          dataset: sharegpt-v3
          allow_truncated: true
        variants:
          - name: a
          - name: b
            load: {allow_truncated: false}
    """)
    a, b = (v.load for v in scenario.variants)
    assert (a.dataset, a.allow_truncated, b.allow_truncated) == ("sharegpt-v3", True, False)
    assert LoadSpec().allow_truncated is False and "allow_truncated" in LOAD_KEYS
    assert "load.allow_truncated" not in variant_settings(scenario.variants[0])  # changes no measurement
    assert scenario.with_overrides(load={"allow_truncated": True}).variants[1].load.allow_truncated


def test_external_launcher_with_url():
    scenario = parse("""\
        server:
          launcher: external
          url: http://10.0.0.2:8080
    """)
    assert scenario.variants[0].server.url == "http://10.0.0.2:8080"


def test_demo_scenario_is_valid():
    scenario = load_scenario(ROOT / "scenarios" / "demo.yaml")
    assert scenario.name == "demo"
    assert [v.name for v in scenario.variants] == ["base"]


# --- errors: one line, exact line and key path ---------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    pytest.param("""\
        name: x
        foo: 1
     """, "study.yaml:2 foo: unknown key; allowed: cost, description, fail_if, host_limits, load, matrix, name, on_load_failure, repeats, search, server, slo, tune, variants",
     id="unknown_top_key"),
    pytest.param("""\
        name: x
        load:
          users: 2
          bogus: 3
     """, "study.yaml:4 load.bogus: unknown key; allowed: allow_truncated, arrival, burstiness, cache_prompt, dataset, endpoint, "
          "history, ignore_eos, images, input_tokens, inputs_per_request, late_ms, max_seconds, max_tokens, max_turns, mode, "
          "num_prompts, output_tokens, prefix_tokens, rate, read_timeout_s, response_format, sampling, seed, "
          "server_lost_after_s, settle_s, spawn_rate, stages, think_time_s, tool_choice, tools, trace, until, users, warmup_prompts",
     id="unknown_load_key"),
    pytest.param("""\
        name: x
        variants:
          - name: a
          - name: b
            server:
              model: m
              modle: m
     """, "study.yaml:7 variants.1.server.modle: unknown key; allowed: binary, docker, draft_model, flags, "
          "host, image, launcher, metrics_extra, model, port, ready_timeout_s, url",
     id="unknown_key_in_variant_server"),
    pytest.param("""\
        load:
          max_tokens: 5
          users: -1
     """, "study.yaml:3 load.users: must be >= 1, got -1", id="users_negative"),
    pytest.param("""\
        load:
          users: many
     """, "study.yaml:2 load.users: must be an integer, got 'many'", id="users_not_a_number"),
    pytest.param("""\
        load:
          users: 2.5
     """, "study.yaml:2 load.users: must be an integer, got 2.5", id="users_float"),
    pytest.param("""\
        load:
          num_prompts: 0
     """, "study.yaml:2 load.num_prompts: must be >= 1, got 0", id="num_prompts_zero"),
    pytest.param("""\
        load:
          spawn_rate: true
     """, "study.yaml:2 load.spawn_rate: must be a number, got True", id="spawn_rate_bool"),
    pytest.param("""\
        variants:
          - name: a
          - name: b
          - name: a
     """, "study.yaml:4 variants.2.name: duplicate variant name 'a'", id="duplicate_variant"),
    pytest.param("""\
        variants:
          - name: a
          - server:
              model: m
     """, "study.yaml:3 variants.1.name: each variant needs a name of letters, digits, '-' or '_', got None",
     id="variant_without_name"),
    pytest.param("""\
        server:
          model: tiny
          launcher: kubernetes
     """, "study.yaml:3 server.launcher: unknown launcher 'kubernetes'; available: embedded, process, docker, external",
     id="unknown_launcher"),
    pytest.param("""\
        variants:
          - name: a
            server:
              launcher: nope
     """, "study.yaml:4 variants.0.server.launcher: unknown launcher 'nope'; available: embedded, process, docker, external",
     id="unknown_launcher_in_variant"),
    pytest.param("""\
        name: x
        server:
          launcher: external
     """, "study.yaml:2 server.url: launcher external needs url: http://HOST:PORT (or pass --url)",
     id="external_without_url"),
    pytest.param("""\
        load:
          sampling:
            max_prompt_tokens: -5
     """, "study.yaml:3 load.sampling.max_prompt_tokens: must be >= 0, got -5", id="sampling_negative"),
    pytest.param("""\
        load:
          cache_prompt: maybe
     """, "study.yaml:2 load.cache_prompt: must be true or false, got 'maybe'", id="cache_prompt_not_bool"),
    pytest.param("""\
        server:
          flags: 5
     """, "study.yaml:2 server.flags: must be a mapping, got int", id="flags_not_a_mapping"),
    pytest.param("""\
        server:
          flags:
            - {parallel: 2}
     """, "study.yaml:2 server.flags: must be a mapping, got list", id="flags_list_of_mappings"),
    pytest.param("""\
        variants: 3
     """, "study.yaml:1 variants: must be a non-empty list of {name, server, load} overrides", id="variants_not_a_list"),
    pytest.param("""\
        variants: []
     """, "study.yaml:1 variants: must be a non-empty list of {name, server, load} overrides",
                 id="variants_empty"),
    pytest.param("""\
        load:
          dataset: synthetic:lots
     """, "study.yaml:2 load.dataset: must be a file path, 'sharegpt-v3', 'synthetic[:N]', 'synthetic-multiturn[:N]' "
          "(N >= 1), 'random' or 'trace', got 'synthetic:lots'", id="synthetic_count_not_a_number"),
    pytest.param("""\
        load:
          allow_truncated: "yes"
     """, "study.yaml:2 load.allow_truncated: must be true or false, got 'yes'", id="allow_truncated_not_a_bool"),
    pytest.param("""\
        load:
          dataset: synthetic-multiturn:0
     """, "study.yaml:2 load.dataset: must be a file path, 'sharegpt-v3', 'synthetic[:N]', 'synthetic-multiturn[:N]' "
          "(N >= 1), 'random' or 'trace', got 'synthetic-multiturn:0'", id="synthetic_multiturn_count_zero"),
    pytest.param("""\
        server:
          model:
     """, "study.yaml:2 server.model: must be a string, got None", id="model_left_empty"),
    pytest.param("""\
        name: has space
     """, "study.yaml:1 name: must be letters, digits, '-' or '_', got 'has space'", id="bad_scenario_name"),
    pytest.param("""\
        load:
          spawn_rate: 1e400
     """, "study.yaml:2 load.spawn_rate: must be a number, got '1e400'", id="yaml_1e400_is_a_string"),
    pytest.param("""\
        "foo\\nbar": 1
     """, "study.yaml:1 'foo\\nbar': unknown key; allowed: cost, description, fail_if, host_limits, load, matrix, name, on_load_failure, repeats, search, server, slo, tune, variants",
     id="key_with_newline_is_quoted"),
    pytest.param("""\
        - 1
        - 2
     """, "study.yaml:1 (top): must be a mapping, got list", id="top_level_list"),
    pytest.param("""\
        just a string
     """, "study.yaml:1 (top): must be a mapping, got str", id="top_level_scalar"),
])
def test_error_line_and_key_path(text: str, expected: str):
    assert error_of(text) == expected


def test_error_in_inherited_value_points_at_the_top_level():
    # the variant has a load section, but users: -1 is on line 2, in the top-level load
    message = error_of("""\
        load:
          users: -1
        variants:
          - name: a
            load:
              max_tokens: 5
    """)
    assert message == "study.yaml:2 load.users: must be >= 1, got -1"


def test_error_in_variant_value_points_at_the_variant():
    message = error_of("""\
        load:
          users: 4
        variants:
          - name: a
          - name: b
            load:
              users: 0
    """)
    assert message == "study.yaml:7 variants.1.load.users: must be >= 1, got 0"


def test_huge_integer_for_a_float_setting():
    message = error_of("load:\n  spawn_rate: " + "9" * 400 + "\n")
    assert message.startswith("study.yaml:2 load.spawn_rate: is too large, got 999")


@pytest.mark.parametrize("text, prefix", [
    pytest.param("name: x\nload:\n  users: [1, 2\n", "study.yaml:4: not valid YAML: expected ',' or ']'",
                 id="unclosed_flow_sequence"),
    pytest.param("name: x\nload: a\n  users: 2\n", "study.yaml:3: not valid YAML: mapping values are not allowed",
                 id="bad_indentation"),
    pytest.param("name: x\nload:\n\tusers: 2\n", "study.yaml:3: not valid YAML: found character '\\t'",
                 id="tab_indentation"),
    pytest.param("name: x\n---\nname: y\n", "study.yaml:2: not valid YAML: but found another document",
                 id="two_documents"),
    pytest.param("name: x\ndescription: a\x07b\n", "study.yaml:2: not valid YAML: unacceptable character #x0007",
                 id="control_character"),
    pytest.param("a: " + "[" * 700 + "]" * 700 + "\n", "study.yaml: not valid YAML: nested too deeply",
                 id="nested_too_deeply"),
])
def test_invalid_yaml(text: str, prefix: str):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, PATH)
    assert str(info.value).startswith(prefix)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("text, expected", [
    pytest.param("load:\n  users: !!int x\n", "study.yaml:2 load.users: cannot read 'x' as !!int", id="int"),
    pytest.param("load:\n  seed: 1\n  spawn_rate: !!float fast\n",
                 "study.yaml:3 load.spawn_rate: cannot read 'fast' as !!float", id="float"),
    pytest.param("load:\n  cache_prompt: !!bool maybe\n",
                 "study.yaml:2 load.cache_prompt: cannot read 'maybe' as !!bool", id="bool"),
    pytest.param("variants:\n  - name: a\n  - name: !!timestamp 2020-13-45\n",
                 "study.yaml:3 variants.1.name: cannot read '2020-13-45' as !!timestamp", id="timestamp"),
    pytest.param("b: !!int x\n? [a]\n: 1\n", "study.yaml:1 b: cannot read 'x' as !!int", id="before_a_complex_key"),
])
def test_value_that_does_not_fit_its_tag(text: str, expected: str):
    # PyYAML's constructors raise ValueError/KeyError/AttributeError here, not YAMLError
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, PATH)
    assert str(info.value) == expected


def test_complex_key_is_not_valid_yaml():
    with pytest.raises(ScenarioError) as info:
        parse_scenario("? [a, b]\n: 1\n", PATH)
    assert str(info.value) == "study.yaml:1: not valid YAML: found unhashable key"


def test_recursive_alias_does_not_hang():
    scenario = parse_scenario("name: x\ndescription: &a [*a]\n", PATH)
    assert scenario.name == "x"


def test_missing_file(tmp_path: Path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ScenarioError) as info:
        load_scenario(missing)
    assert str(info.value) == f"{missing}: no such scenario file"


def test_file_errors_name_the_file(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nload:\n  users: 0\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == f"{path}:3 load.users: must be >= 1, got 0"


def test_scenario_error_is_a_tokenswarm_error_and_a_value_error():
    with pytest.raises(TokenswarmError):
        parse("foo: 1\n")
    with pytest.raises(ValueError):
        parse("foo: 1\n")


# --- matrix: the cross product, named ------------------------------------------------------------

FA_X_DRAFT = """\
name: fa-x-draft
server:
  launcher: process
  model: /models/gemma-4-E4B.gguf
  flags:
    parallel: 32
matrix:
  flash-attn: [on, off]
  draft_model:
    none: null
    mtp: /models/gemma-4-E4B-MTP.gguf
load:
  users: 8
"""

SAMPLING_DEFAULTS = {"load.sampling.fixed_output_tokens": None, "load.sampling.max_prompt_tokens": 1024,
                     "load.sampling.max_total_tokens": 2048, "load.sampling.min_output_tokens": 4,
                     "load.sampling.min_prompt_tokens": 4}


def expected_settings(fa: str, draft: str | None) -> dict[str, object]:
    return {"server.launcher": "process", "server.model": "/models/gemma-4-E4B.gguf", "server.draft_model": draft,
            "server.binary": "llama-server", "server.flags.parallel": 32, "server.flags.flash-attn": fa,
            "load.dataset": "synthetic", "load.users": 8, "load.spawn_rate": 8.0, "load.num_prompts": 1000,
            "load.max_seconds": None, "load.max_tokens": 256, "load.seed": 0, "load.cache_prompt": True, "load.ignore_eos": False,
            **SAMPLING_DEFAULTS}


def test_matrix_2x2_expands_into_four_named_variants_first_axis_slowest():
    scenario = parse(FA_X_DRAFT)
    assert [v.name for v in scenario.variants] == [
        "flash-attn-on_draft_model-none", "flash-attn-on_draft_model-mtp",
        "flash-attn-off_draft_model-none", "flash-attn-off_draft_model-mtp"]
    mtp = "/models/gemma-4-E4B-MTP.gguf"
    assert [variant_settings(v) for v in scenario.variants] == [
        expected_settings("on", None), expected_settings("on", mtp),
        expected_settings("off", None), expected_settings("off", mtp)]
    # the axis value lands in the flags as YAML read it; flags.py renders a boolean as on/off
    assert scenario.variants[2].server.flags == {"parallel": 32, "flash-attn": False}
    assert all(v.retry_with is None for v in scenario.variants)


def test_matrix_times_listed_variants():
    scenario = parse("""\
        matrix:
          flash-attn: [on, "off"]
        variants:
          - name: small
            load: {users: 4}
          - name: big
            server: {flags: {parallel: 64}}
    """)
    assert [(v.name, v.load.users, v.server.flags) for v in scenario.variants] == [
        ("small_flash-attn-on", 4, {"flash-attn": True}),
        ("small_flash-attn-off", 4, {"flash-attn": "off"}),
        ("big_flash-attn-on", 32, {"parallel": 64, "flash-attn": True}),
        ("big_flash-attn-off", 32, {"parallel": 64, "flash-attn": "off"})]
    # YAML's boolean and the string "off" are the same setting
    assert variant_settings(scenario.variants[0])["server.flags.flash-attn"] == "on"
    assert variant_settings(scenario.variants[1])["server.flags.flash-attn"] == "off"


def test_short_and_long_flag_names_are_one_setting():
    scenario = parse("""\
        variants:
          - name: short
            server: {flags: {fa: off, np: 32, c: 65536}}
          - name: long
            server: {flags: {flash-attn: off, parallel: 32, ctx-size: 65536}}
    """)
    short, long = (variant_settings(v) for v in scenario.variants)
    assert short == long and short["server.flags.flash-attn"] == "off"


def test_mapping_valued_axis_names_its_values():
    scenario = parse("""\
        matrix:
          draft_model: {none: null, mtp: /models/gemma-4-E4B-MTP.gguf}
    """)
    assert [(v.name, v.server.draft_model) for v in scenario.variants] == [
        ("draft_model-none", None), ("draft_model-mtp", "/models/gemma-4-E4B-MTP.gguf")]


def test_mapping_keys_read_as_booleans_or_numbers_are_named():
    scenario = parse("""\
        matrix:
          flash-attn: {on: "on", off: "off"}
          parallel: {1: 1, 32: 32}
    """)
    assert [v.name for v in scenario.variants] == ["flash-attn-on_parallel-1", "flash-attn-on_parallel-32",
                                                   "flash-attn-off_parallel-1", "flash-attn-off_parallel-32"]


@pytest.mark.parametrize("axis, value, where", [
    pytest.param("draft_model", "/m/d.gguf", lambda v: v.server.draft_model, id="server_key"),
    pytest.param("image", "llama:full-cuda", lambda v: v.server.image, id="server_key_image"),
    pytest.param("users", 4, lambda v: v.load.users, id="load_key"),
    pytest.param("max_tokens", 64, lambda v: v.load.max_tokens, id="load_key_max_tokens"),
    pytest.param("max_prompt_tokens", 512, lambda v: v.load.sampling["max_prompt_tokens"], id="sampling_key"),
    pytest.param("ctx-size", 8192, lambda v: v.server.flags["ctx-size"], id="flag"),
    pytest.param("threads", 2, lambda v: v.server.flags["threads"], id="flag_without_hyphen"),
])
def test_axis_key_resolution(axis: str, value: object, where):
    (variant,) = parse(f"matrix:\n  {axis}: [{value}]\n").variants
    assert where(variant) == value


def test_matrix_value_error_points_at_the_matrix_line():
    message = error_of("""\
        load:
          users: 4
        matrix:
          users:
            - 8
            - -1
    """)
    assert message == "study.yaml:6 matrix.users.1: must be >= 1, got -1"


@pytest.mark.parametrize("text, expected", [
    pytest.param("matrix:\n  flash-attn: []\n",
                 "study.yaml:2 matrix.flash-attn: must be a non-empty list of values or a mapping {name: value}, "
                 "got []",
                 id="empty_axis"),
    pytest.param("matrix:\n  users: {}\n",
                 "study.yaml:2 matrix.users: must be a non-empty list of values or a mapping {name: value}, got {}",
                 id="empty_mapping_axis"),
    pytest.param("matrix:\n  users: 4\n",
                 "study.yaml:2 matrix.users: must be a non-empty list of values or a mapping {name: value}, got 4",
                 id="scalar_axis"),
    pytest.param("name: x\nmatrix: {}\n",
                 "study.yaml:2 matrix: must be a mapping of axes to their values, e.g. {flash-attn: [on, off]}",
                 id="empty_matrix"),
    pytest.param("name: x\nmatrix: [a, b]\n",
                 "study.yaml:2 matrix: must be a mapping of axes to their values, e.g. {flash-attn: [on, off]}",
                 id="matrix_list"),
    pytest.param("matrix:\n  flags: [a]\n",
                 "study.yaml:2 matrix.flags: name the flag itself (e.g. flash-attn: [on, off]), not flags",
                 id="flags_axis"),
    pytest.param("matrix:\n  flash_attn!: [on]\n",
                 "study.yaml:2 matrix.flash_attn!: must be a server key (draft_model, image, ...), a load key "
                 "(users, max_tokens, ...) or a llama-server flag name (letters, digits, '-'), got 'flash_attn!'",
                 id="bad_axis_name"),
    pytest.param("matrix:\n  model:\n    - /a/m.gguf\n    - /b/m.gguf\n",
                 "study.yaml:4 matrix.model.1: two values are both named 'm' ('/a/m.gguf' and '/b/m.gguf'); "
                 "write the axis as a mapping {name: value}", id="same_value_name"),
    pytest.param("matrix:\n  docker:\n    - {gpus: all}\n",
                 "study.yaml:3 matrix.docker.0: cannot name the value {'gpus': 'all'}; write the axis as a "
                 "mapping {name: value}", id="unnamable_value"),
    pytest.param("matrix:\n  model:\n    bad name: /m.gguf\n",
                 "study.yaml:3 matrix.model.bad name: value names must be letters, digits, '-' or '_', got 'bad name'",
                 id="bad_value_name"),
    pytest.param("matrix:\n  launcher: [embedded, kubernetes]\n",
                 "study.yaml:2 matrix.launcher.1: unknown launcher 'kubernetes'; available: embedded, process, "
                 "docker, external", id="bad_value_validated_like_the_key"),
    pytest.param("matrix:\n  users: [1, 2]\nvariants:\n  - name: a\n  - name: b\n    load:\n      users: 3\n",
                 "study.yaml:7 variants.1.load.users: is also a matrix axis (matrix.users); set it in one place",
                 id="variant_sets_an_axis"),
    pytest.param("matrix:\n  parallel: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n  threads: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
                 "  seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n",
                 "study.yaml:1 matrix: expands to 1100 variants; at most 1000", id="too_large"),
])
def test_matrix_errors(text: str, expected: str):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, PATH)
    assert str(info.value) == expected


# --- matrix factors: one axis, several settings ---------------------------------------------------

FACTOR_STUDY = """\
server:
  launcher: process
  model: /models/gemma-4-E4B.gguf
  flags: {parallel: 32}
matrix:
  flash-attn: [on, off]
  drafter:
    none: {}
    mtp:
      draft_model: /models/gemma-4-E4B-MTP.gguf
      flags: {spec-type: draft-mtp, spec-draft-n-max: 4}
on_load_failure:
  retry_with: {flash-attn: off}
"""
DRAFTER_COVERS = ("server.draft_model", "server.flags.spec-type", "server.flags.spec-draft-n-max")


def test_a_factor_axis_sets_its_settings_together_and_is_named_like_any_axis():
    variants = parse(FACTOR_STUDY).variants
    assert [v.name for v in variants] == ["flash-attn-on_drafter-none", "flash-attn-on_drafter-mtp",
                                          "flash-attn-off_drafter-none", "flash-attn-off_drafter-mtp"]
    on_none, on_mtp, off_none, off_mtp = variants
    assert (on_none.server.draft_model, on_none.server.flags) == (None, {"parallel": 32, "flash-attn": True})
    assert (on_mtp.server.draft_model, on_mtp.server.flags) == (
        "/models/gemma-4-E4B-MTP.gguf", {"parallel": 32, "flash-attn": True, "spec-type": "draft-mtp",
                                         "spec-draft-n-max": 4})
    assert [v.factors for v in variants] == [{"drafter": Factor(value, DRAFTER_COVERS)}
                                             for value in ("none", "mtp", "none", "mtp")]
    # the flash-attn axis is a single setting, as before: no factor
    assert set(variant_settings(on_mtp)) - set(variant_settings(on_none)) == {"server.flags.spec-type",
                                                                "server.flags.spec-draft-n-max"}
    # the retry applies after the factor and keeps it; on the fa-off variants the rule changes nothing
    assert (on_mtp.retry_with, off_none.retry_with, off_mtp.retry_with) == ({"flash-attn": False}, None, None)
    retried = on_mtp.with_retry()
    assert retried.factors == on_mtp.factors
    assert variant_settings(retried) == variant_settings(off_mtp)


def test_a_factor_times_listed_variants():
    small, big = parse("""\
        matrix:
          drafter: {none: {}, simple: {draft_model: tiny-draft, users: 4}}
        variants:
          - name: small
          - name: big
            server: {flags: {parallel: 64}}
    """).variants[1::2]
    assert (small.name, small.server.draft_model, small.load.users) == ("small_drafter-simple", "tiny-draft", 4)
    assert big.name == "big_drafter-simple" and big.server.flags == {"parallel": 64}
    assert big.factors["drafter"].covers == ("server.draft_model", "load.users")


def test_axes_named_after_keys_that_take_a_mapping_stay_one_setting():
    variants = parse("""\
        server: {launcher: docker, model: /m/a.gguf}
        matrix:
          docker: {all: {gpus: all}, two: {gpus: [0, 1]}}
          sampling: {short: {max_prompt_tokens: 256}, long: {max_prompt_tokens: 1024}}
    """).variants
    assert [(v.name, v.server.docker, v.load.sampling, v.factors) for v in variants] == [
        ("docker-all_sampling-short", {"gpus": "all"}, {"max_prompt_tokens": 256}, {}),
        ("docker-all_sampling-long", {"gpus": "all"}, {"max_prompt_tokens": 1024}, {}),
        ("docker-two_sampling-short", {"gpus": [0, 1]}, {"max_prompt_tokens": 256}, {}),
        ("docker-two_sampling-long", {"gpus": [0, 1]}, {"max_prompt_tokens": 1024}, {})]


@pytest.mark.parametrize("text, expected", [
    pytest.param("matrix:\n  drafter:\n    none: {}\n    mtp:\n      draft_model: 3\n",
                 "study.yaml:5 matrix.drafter.mtp.draft_model: must be a string, got 3", id="bad_value_in_a_factor"),
    pytest.param("matrix:\n  drafter:\n    none: {}\n    mtp:\n      flags:\n        spec-draft-n-max: 4\n"
                 "        users: 2\n",
                 "study.yaml:7 matrix.drafter.mtp.flags.users: is a load key, not a llama-server flag; set it beside "
                 "flags", id="load_key_in_flags"),
    pytest.param("matrix:\n  drafter:\n    none: null\n    mtp: {draft_model: /m.gguf}\n",
                 "study.yaml:4 matrix.drafter.mtp: a llama-server flag takes no mapping; to set several settings at "
                 "once make every value of the axis a mapping of settings (a factor; {} for none)",
                 id="null_is_not_a_factor_value"),
    pytest.param("matrix:\n  drafter:\n    mtp:\n      flags: {spec-draft-n-max: 4}\n  draft-max: [2, 8]\n",
                 "study.yaml:5 matrix.draft-max.0: is also set by the matrix axis matrix.drafter; set it in one place",
                 id="another_axis_sets_a_factor_key"),
    pytest.param("matrix:\n  drafter:\n    none: {}\n    mtp: {draft_model: /m.gguf}\nvariants:\n  - name: a\n"
                 "    server:\n      draft_model: /other.gguf\n",
                 "study.yaml:8 variants.0.server.draft_model: is also set by the factor matrix.drafter; set it in "
                 "one place", id="variant_sets_a_factor_key"),
    pytest.param("server:\n  flags:\n    spec-type: draft-mtp\nmatrix:\n  drafter:\n    none: {}\n"
                 "    mtp: {flags: {spec-type: draft-mtp}}\n",
                 "study.yaml:3 server.flags.spec-type: is also set by the factor matrix.drafter, whose values that "
                 "leave it out would inherit it; set it in the factor's values", id="top_level_sets_a_factor_key"),
    pytest.param("matrix:\n  my_drafter:\n    none: {}\n",
                 "study.yaml:2 matrix.my_drafter: must be a server key (draft_model, image, ...), a load key "
                 "(users, max_tokens, ...) or a llama-server flag name (letters, digits, '-'), got 'my_drafter'",
                 id="factor_named_with_underscore"),
])
def test_factor_errors(text: str, expected: str):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, PATH)
    assert str(info.value) == expected


# --- on_load_failure: retry_with ---------------------------------------------------------------

RETRY_STUDY = """\
server:
  model: /models/gemma-4-E4B.gguf
  flags: {flash-attn: "on"}
on_load_failure:
  retry_with: {flash-attn: off}
variants:
  - name: plain
  - name: mtp
    server:
      draft_model: /models/gemma-4-E4B-MTP.gguf
    on_load_failure:
      retry_with: {flash-attn: off, spec-draft-n-max: 2, ready_timeout_s: 600}
  - name: fa-off
    server: {flags: {flash-attn: "off"}}
"""


def test_retry_with_top_level_and_per_variant():
    plain, mtp, fa_off = parse(RETRY_STUDY).variants
    assert plain.retry_with == {"flash-attn": False}
    # the variant's rule replaces the top level's; values come back as validated (600 → 600.0)
    assert mtp.retry_with == {"flash-attn": False, "spec-draft-n-max": 2, "ready_timeout_s": 600.0}
    # a rule that would change nothing is dropped
    assert fa_off.retry_with is None
    retried = mtp.with_retry()
    assert retried.name == "mtp"
    assert retried.server.flags == {"flash-attn": False, "spec-draft-n-max": 2}
    assert retried.server.ready_timeout_s == 600.0
    assert retried.server.draft_model == mtp.server.draft_model
    assert retried.retry_with is None  # no second retry
    assert variant_settings(retried)["server.flags.flash-attn"] == "off"
    assert mtp.server.flags == {"flash-attn": "on"}  # frozen: the original is unchanged
    assert fa_off.with_retry() is fa_off


def test_retry_with_a_server_key():
    (variant,) = parse("""\
        server: {draft_model: /m/d.gguf}
        on_load_failure: {retry_with: {draft_model: null}}
    """).variants
    assert variant.retry_with == {"draft_model": None}
    assert variant.with_retry().server.draft_model is None


def test_retry_over_a_matrix():
    fa_on, fa_off = parse("""\
        matrix:
          flash-attn: [on, off]
        on_load_failure: {retry_with: {flash-attn: off}}
    """).variants
    assert (fa_on.retry_with, fa_off.retry_with) == ({"flash-attn": False}, None)
    assert variant_settings(fa_on.with_retry()) == variant_settings(fa_off)


@pytest.mark.parametrize("text, expected", [
    pytest.param("on_load_failure: {retry: {a: 1}}\n",
                 "study.yaml:1 on_load_failure.retry: unknown key; allowed: retry_with", id="unknown_key"),
    pytest.param("on_load_failure:\n  retry_with: {}\n",
                 "study.yaml:2 on_load_failure.retry_with: must be a non-empty mapping of server keys or flags to "
                 "use for one more try, e.g. {flash-attn: off}, got {}", id="empty"),
    pytest.param("on_load_failure:\n  retry_with:\n    users: 2\n",
                 "study.yaml:3 on_load_failure.retry_with.users: a retry changes how the server is started; "
                 "load settings cannot be retried", id="load_key"),
    pytest.param("on_load_failure:\n  retry_with:\n    port: 70000\n",
                 "study.yaml:3 on_load_failure.retry_with.port: must be <= 65535, got 70000", id="bad_value"),
    pytest.param("variants:\n  - name: a\n    on_load_failure:\n      retry_with:\n        launcher: nope\n",
                 "study.yaml:5 variants.0.on_load_failure.retry_with.launcher: unknown launcher 'nope'; "
                 "available: embedded, process, docker, external", id="bad_value_in_variant"),
    pytest.param("on_load_failure: 3\n", "study.yaml:1 on_load_failure: must be a mapping, got int",
                 id="not_a_mapping"),
])
def test_retry_errors(text: str, expected: str):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, PATH)
    assert str(info.value) == expected


# --- settings(): what defines a variant ----------------------------------------------------------

def test_settings_of_a_docker_variant_leave_out_what_does_not_define_the_experiment():
    (variant,) = parse("""\
        server:
          launcher: docker
          model: /models/m.gguf
          image: llama:full-cuda
          docker: {gpus: [0, 1]}
          port: 8081
          host: 127.0.0.1
          ready_timeout_s: 900
          flags: {fa: false, cont-batching: true}
        load:
          read_timeout_s: 5
          max_seconds: 900
          sampling: {max_prompt_tokens: 512}
    """).variants
    assert variant_settings(variant) == {
        "server.launcher": "docker", "server.model": "/models/m.gguf", "server.draft_model": None,
        "server.image": "llama:full-cuda", "server.docker.gpus": [0, 1],
        "server.flags.flash-attn": "off", "server.flags.cont-batching": True,
        "load.dataset": "synthetic", "load.users": 32, "load.spawn_rate": 32.0, "load.num_prompts": 1000,
        "load.max_seconds": 900.0, "load.max_tokens": 256, "load.seed": 0, "load.cache_prompt": True, "load.ignore_eos": False,
        **SAMPLING_DEFAULTS, "load.sampling.max_prompt_tokens": 512}


def test_settings_of_an_external_variant_name_the_url():
    (variant,) = parse("server: {launcher: external, url: 'http://10.0.0.2:8080'}\n").variants
    settings = variant_settings(variant)
    assert settings["server.url"] == "http://10.0.0.2:8080"
    assert "server.image" not in settings and "server.binary" not in settings


# --- property: never anything but a Scenario or a one-line ScenarioError ------------------------

ALL_KEYS = sorted(TOP_KEYS | SERVER_KEYS | LOAD_KEYS | SAMPLING_KEYS | VARIANT_KEYS)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.sampled_from((*LAUNCHER_KINDS, "docker", "tiny", "http://h:1", "a", "b")),
)
any_keys = st.one_of(st.sampled_from(ALL_KEYS), st.text(max_size=8), st.integers(-3, 3), st.booleans())
structures = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(any_keys, children, max_size=4)),
    max_leaves=12,
)


def weighted(*choices: tuple[int, st.SearchStrategy]) -> st.SearchStrategy:
    """Pick a strategy with the given weights (``one_of`` would pick uniformly)."""
    return st.sampled_from([s for w, s in choices for _ in range(w)]).flatmap(lambda s: s)


def section(allowed: set[str], **special: st.SearchStrategy) -> st.SearchStrategy:
    """Mostly a mapping of allowed keys, each present or not; sometimes stray keys or no mapping at all."""
    values = {k: special.get(k, weighted((2, scalars), (1, structures))) for k in sorted(allowed)}
    return weighted((8, st.fixed_dictionaries({}, optional=values)),
                    (1, st.dictionaries(any_keys, structures, max_size=3)), (1, structures))


names = weighted((9, st.sampled_from(["a", "b", "fa-off", "fa_on2"])), (1, scalars))
variant = st.fixed_dictionaries({"name": names}, optional={
    "server": section(SERVER_KEYS), "load": section(LOAD_KEYS, sampling=section(SAMPLING_KEYS))})
schema_shaped = st.fixed_dictionaries({}, optional={
    "name": names, "description": scalars,
    "server": section(SERVER_KEYS), "load": section(LOAD_KEYS, sampling=section(SAMPLING_KEYS)),
    "variants": weighted((4, st.lists(variant, max_size=3)), (1, structures)),
    "matrix": weighted((4, st.dictionaries(any_keys, st.lists(scalars, max_size=3), max_size=3)), (1, structures)),
    "on_load_failure": weighted((4, st.fixed_dictionaries({"retry_with": section(SERVER_KEYS)})), (1, structures))})
top_levels = weighted((9, schema_shaped), (1, structures))


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(top_levels)
@example({"server": {"flags": 5}})  # crashed with TypeError before the fix: set(5)
@example({"server": {"flags": [[]]}})  # TypeError: unhashable list
@example({"load": {"spawn_rate": 10 ** 400}})  # OverflowError in float()
@example({"foo\nbar": 1})  # a newline in the key path
def test_any_yaml_gives_a_scenario_or_a_one_line_error(data: object):
    text = yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), allow_unicode=True)
    try:
        result = parse_scenario(text, PATH)
    except ScenarioError as exc:
        assert "\n" not in str(exc)
        assert str(exc).startswith("study.yaml")
    else:
        assert isinstance(result, Scenario)
        assert result.variants


YAML_PIECES = ["users", "load", "server", "variants", "name", "flags", "launcher", "external", "sampling",
               "!!int ", "!!float ", "!!bool ", "!!timestamp ", "!!str ", "!!seq ", "!!map ", "&a ", "*a", "<<: ",
               ": ", "- ", "? ", "\n", "\n  ", "\n    ", "[", "]", "{", "}", ",", "'", "x", "-1", "0x", "2020-01-01",
               "~", "#", "|", "---", "\t", "\x07"]


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(YAML_PIECES), max_size=30).map("".join))
@example("? -\n")  # a complex key: the line map crashed on it once
@example("a: !!timestamp x\n")  # AttributeError inside PyYAML
@example("a: &r [*r, !!int x]\n")  # a bad tag inside a recursive alias
def test_any_text_gives_a_scenario_or_a_one_line_error(text: str):
    try:
        parse_scenario(text, PATH)
    except ScenarioError as exc:
        assert "\n" not in str(exc)


def test_metrics_extra_names_prometheus_metrics_or_says_what_is_wrong() -> None:
    scenario = parse("name: x\nserver:\n  metrics_extra: [tgi_batch_current_max_tokens, 'proxy:depth']\n")
    assert scenario.variants[0].server.metrics_extra == ("tgi_batch_current_max_tokens", "proxy:depth")
    assert error_of("name: x\nserver:\n  metrics_extra: [queue depth]\n") == (
        "study.yaml:3 server.metrics_extra: must be a list of Prometheus metric names (e.g. "
        "[tgi_batch_current_max_tokens]), got ['queue depth']")
