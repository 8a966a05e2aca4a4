"""orchestrate/scenario/replay.py: the load section's multi-turn keys, validated with file:line, and their Locust flags."""

from __future__ import annotations

import pytest
import yaml

from orchestrate.scenario.replay import locust_args
from orchestrate.scenario.settings import variant_settings
from orchestrate.scenario.spec import LoadSpec
from tests.helpers import parse_text as parse
from tests.helpers import scenario_error as error_of


def test_defaults_are_single_mode_and_add_no_setting() -> None:
    (v,) = parse("load:\n  users: 2\n").variants
    assert (v.load.mode, v.load.history, v.load.think_time_s, v.load.max_turns) == ("single", "dataset", 0.0, None)
    assert not any(k in variant_settings(v) for k in ("load.mode", "load.history", "load.think_time_s"))
    assert locust_args(v.load) == ()


def test_multi_turn_keys_parse_and_become_settings_and_flags() -> None:
    scenario = parse("""\
        load:
          mode: multi_turn
          history: model
          think_time_s: [0.5, 2]
          max_turns: 8
          num_prompts: 20
          seed: 3
        variants:
          - name: fixed
            load: {think_time_s: 1}
          - name: range
        """)
    fixed, ranged = scenario.variants
    assert (ranged.load.mode, ranged.load.history, ranged.load.think_time_s, ranged.load.max_turns) == \
        ("multi_turn", "model", (0.5, 2.0), 8)
    assert ranged.sweep is None  # [min, max] is one value, not a sweep
    assert fixed.load.think_time_s == 1.0
    assert {k: v for k, v in variant_settings(ranged).items() if k in ("load.mode", "load.history", "load.think_time_s",
                                                                  "load.max_turns")} == {
        "load.mode": "multi_turn", "load.history": "model", "load.think_time_s": (0.5, 2.0), "load.max_turns": 8}
    assert locust_args(ranged.load) == ("--mode", "multi_turn", "--history", "model", "--think-time", "0.5,2",
                                        "--seed", "3")
    assert locust_args(fixed.load)[5] == "1"
    yaml.safe_dump(scenario.as_run())  # the resolved scenario still writes as YAML


MT = "mode: multi_turn"


@pytest.mark.parametrize("lines, expected", [
    (["mode: multi"], "study.yaml:2 load.mode: must be single or multi_turn, got 'multi'"),
    (["history: model"], "study.yaml:2 load.history: only means something with mode: multi_turn"),
    ([MT, "history: server"],
     "study.yaml:3 load.history: must be dataset or model (whose replies grow the history), got 'server'"),
    ([MT, "think_time_s: -1"], "study.yaml:3 load.think_time_s: must be >= 0, got -1"),
    ([MT, "think_time_s: [2, 1]"], "study.yaml:3 load.think_time_s: [min, max] needs min <= max, got [2.0, 1.0]"),
    ([MT, "think_time_s: [1, 2, 3]"], "study.yaml:3 load.think_time_s: must be seconds or [min, max], got [1, 2, 3]"),
    ([MT, "think_time_s: [1, x]"], "study.yaml:3 load.think_time_s.1: must be a number, got 'x'"),
    ([MT, "max_turns: 0"], "study.yaml:3 load.max_turns: must be >= 1, got 0"),
    ([MT, "rate: 5"], "study.yaml:2 load.mode: multi_turn plays each conversation at its user's pace "
                      "(think_time_s); it does not combine with rate (open loop)"),
])
def test_bad_values_are_one_line_naming_the_key(lines: list[str], expected: str) -> None:
    assert error_of("load:\n" + "".join(f"  {line}\n" for line in lines)) == expected


def test_loadspec_defaults_match_the_parser() -> None:
    assert (LoadSpec().mode, LoadSpec().history, LoadSpec().think_time_s) == ("single", "dataset", 0.0)
