"""orchestrate/scenario/sweep.py: a load key listing values becomes steps; prompts are dealt without reuse."""

from __future__ import annotations

from pathlib import Path

import pytest

from locustfiles.dataset import Prompt
from orchestrate.errors import ScenarioError
from orchestrate.scenario.parse import parse_scenario
from orchestrate.scenario.settings import variant_settings
from orchestrate.scenario.sweep import deal_prompts, sampling_load, warmup_load

HEAD = """name: s
server: {launcher: embedded, model: tiny}
"""


def parse(load: str, variants: str = "") -> object:
    return parse_scenario(HEAD + "load:\n" + load + variants, Path("s.yaml"))


def test_a_listed_key_becomes_steps_and_the_variant_keeps_the_first():
    scenario = parse("  users: [1, 4, 16]\n  num_prompts: 10\n  max_tokens: 32\n  settle_s: 0.5\n")
    (v,) = scenario.variants
    assert v.sweep.key == "users" and v.sweep.values == (1, 4, 16)
    assert v.sweep.settle_s == 0.5 and v.sweep.warmup_prompts == 8
    assert [s.users for s in v.steps] == [1, 4, 16] and v.load.users == 1
    assert {s.num_prompts for s in v.steps} == {10}
    assert variant_settings(v)["load.users"] == [1, 4, 16]  # two swept variants compare step by step
    assert sampling_load(v).num_prompts == 8 + 30
    assert warmup_load(v).users == 16


def test_a_max_tokens_sweep_samples_under_the_largest_cap():
    (v,) = parse("  max_tokens: [16, 128, 64]\n  num_prompts: 4\n").variants
    assert sampling_load(v).max_tokens == 128 and [s.max_tokens for s in v.steps] == [16, 128, 64]


@pytest.mark.parametrize("load, message", [
    ("  users: [1, 2]\n  max_tokens: [8, 16]\n", "only one load key may list values"),
    ("  seed: [1, 2]\n", "cannot be swept"),
    ("  users: []\n", "at least one value"),
    ("  users: [2, 2]\n", "lists a value twice"),
    ("  users: [1, 0]\n", "load.users"),
    ("  users: 4\n  settle_s: 1\n", "only means something in a sweep"),
    ("  users: [1, 2]\n  warmup_prompts: -1\n", "load.warmup_prompts"),
])
def test_bad_sweeps_are_one_line_naming_the_key(load: str, message: str):
    with pytest.raises(ScenarioError) as err:
        parse(load)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith("s.yaml:")


def test_overriding_the_swept_key_runs_that_value_only():
    scenario = parse("  users: [1, 4]\n  num_prompts: 5\n")
    (v,) = scenario.with_overrides(load={"users": 3}).variants
    assert v.sweep is None and v.steps == () and v.load.users == 3
    (w,) = scenario.with_overrides(load={"num_prompts": 2}).variants
    assert [s.num_prompts for s in w.steps] == [2, 2] and w.sweep is not None


def test_prompts_are_dealt_in_order_without_reuse_and_capped_per_step():
    (v,) = parse("  max_tokens: [10, 50]\n  num_prompts: 3\n  warmup_prompts: 2\n").variants
    prompts = [Prompt(i, f"c{i}", ({"role": "user", "content": f"p{i}"},), 5, 40) for i in range(8)]
    warmup, steps = deal_prompts(prompts, list(v.steps), v.sweep)
    assert [p.conversation_id for p in warmup] == ["c0", "c1"]
    assert [[p.conversation_id for p in s] for s in steps] == [["c2", "c3", "c4"], ["c5", "c6", "c7"]]
    assert [p.index for p in steps[1]] == [0, 1, 2]  # each step is its own Locust run
    assert {p.max_tokens for p in steps[0]} == {10} and {p.max_tokens for p in steps[1]} == {40}
