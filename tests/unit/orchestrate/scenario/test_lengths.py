"""orchestrate/scenario/lengths.py: ``dataset: random``'s lengths and ``ignore_eos``, validated with file:line;
their settings and command-line forms."""

from __future__ import annotations

import random

import pytest

from orchestrate.scenario.lengths import length_arg, length_settings, override_problem
from orchestrate.scenario.settings import variant_settings
from orchestrate.scenario.spec import LoadSpec, TokenLength
from tests.helpers import parse_text as parse
from tests.helpers import scenario_error as error_of


def test_random_takes_vllms_defaults_and_sends_ignore_eos() -> None:
    (v,) = parse("load:\n  dataset: random\n  max_tokens: 64\n").variants
    assert v.load.input_tokens == TokenLength.fixed(1024) and v.load.output_tokens is None
    assert v.load.ignores_eos
    settings = variant_settings(v)
    assert (settings["load.input_tokens"], settings["load.output_tokens"], settings["load.ignore_eos"]) == (
        "1024", "64", True)
    assert not any(key.startswith("load.sampling.") for key in settings)  # ShareGPT's filters mean nothing here


def test_lengths_fixed_uniform_and_normal_parse_and_draw_within_their_bounds() -> None:
    (v,) = parse("""\
        load:
          dataset: random
          input_tokens: {min: 100, max: 300}
          output_tokens: {mean: 64, stdev: 16, min: 32, max: 96}
          prefix_tokens: 50
          ignore_eos: false
    """).variants
    load = v.load
    assert (load.input_tokens, load.output_tokens, load.prefix_tokens, load.ignores_eos) == (
        TokenLength(100, 300), TokenLength(32, 96, 64.0, 16.0), 50, False)
    rng = random.Random(0)
    inputs = [load.input_tokens.draw(rng) for _ in range(500)]
    outputs = [load.output_tokens.draw(rng) for _ in range(500)]
    assert min(inputs) >= 100 and max(inputs) <= 300 and len(set(inputs)) > 100
    assert 32 <= min(outputs) and max(outputs) <= 96 and abs(sum(outputs) / 500 - 64) < 3
    assert (str(load.input_tokens), str(load.output_tokens)) == ("100-300", "64±16 (32-96)")
    assert variant_settings(v)["load.prefix_tokens"] == 50


def test_sharegpt_leaves_ignore_eos_off_unless_asked() -> None:
    (off, on) = parse("""\
        load: {dataset: synthetic}
        variants:
          - name: plain
          - name: asked
            load: {ignore_eos: true}
    """).variants
    assert length_settings(off.load) == {"load.ignore_eos": False}
    assert length_settings(on.load) == {"load.ignore_eos": True}


@pytest.mark.parametrize("load, expected", [
    ("{input_tokens: 200}", "study.yaml:1 load.input_tokens: only means something with dataset: random"),
    ("{dataset: random, input_tokens: 0}", "study.yaml:1 load.input_tokens: must be >= 1, got 0"),
    ("{dataset: random, output_tokens: {min: 5}}", "study.yaml:1 load.output_tokens: must be a number of tokens, "
     "{min: A, max: B} (uniform) or {mean: M, stdev: S, min: A, max: B} (normal, clipped), got {'min': 5}"),
    ("{dataset: random, input_tokens: {min: 9, max: 3}}",
     "study.yaml:1 load.input_tokens: needs min <= mean <= max, got {'min': 9, 'max': 3}"),
    ("{dataset: random, input_tokens: {mean: 10, stdev: 2, min: 11}}",
     "study.yaml:1 load.input_tokens: needs min <= mean <= max, got {'mean': 10, 'stdev': 2, 'min': 11}"),
    ("{dataset: random, input_tokens: 100, prefix_tokens: 100}",
     "study.yaml:1 load.prefix_tokens: must be below the shortest input (100 tokens), got 100"),
    ("{dataset: random, ignore_eos: yes please}", "study.yaml:1 load.ignore_eos: must be true or false, got 'yes please'"),
    ("{dataset: random, mode: multi_turn}", "study.yaml:1 load.mode: does not combine with dataset: random (its "
     "lengths are input_tokens and output_tokens; it has no conversations)"),
])
def test_bad_lengths_are_one_line_naming_the_key(load: str, expected: str) -> None:
    assert error_of(f"load: {load}\n") == expected


def test_command_line_lengths_and_what_they_refuse() -> None:
    assert length_arg("200") == TokenLength.fixed(200) and length_arg("100:300") == TokenLength(100, 300)
    for bad in ("0", "5:3", "x", "1:2:3"):
        with pytest.raises(ValueError, match="must be N"):
            length_arg(bad)
    sharegpt, random_load = LoadSpec(dataset="sharegpt-v3"), LoadSpec(dataset="random")
    assert override_problem(sharegpt, {"input_tokens", "prefix_tokens"}) == (
        "--input-tokens, --prefix-tokens only apply with --dataset random")
    assert override_problem(sharegpt, {"users"}) is None and override_problem(random_load, {"dataset"}) is None
    assert override_problem(LoadSpec(dataset="random", mode="multi_turn"), {"dataset"}) == (
        "--dataset random does not combine with the scenario's mode: multi_turn")
    assert override_problem(LoadSpec(dataset="random", input_tokens=TokenLength.fixed(50), prefix_tokens=60),
                            {"prefix_tokens"}) == "--prefix-tokens must be below the shortest input (50 tokens), got 60"
