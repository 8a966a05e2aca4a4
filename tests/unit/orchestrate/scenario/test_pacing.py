"""orchestrate/scenario/pacing.py: ``rate``/``arrival``/``burstiness``/``late_ms`` and ``stages`` in a scenario,
one-line errors, the Locust flags they become, and how a staged run says why it stopped."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from locustfiles.pacing_params import Stage
from orchestrate.load.locust_run import LoadPlan, locust_command
from orchestrate.results import VariantPaths
from orchestrate.scenario import pacing
from orchestrate.scenario.settings import variant_settings
from orchestrate.scenario.spec import LoadSpec
from tests.helpers import parse_text as parse
from tests.helpers import scenario_error as error_of


def test_a_rate_makes_an_open_loop_with_defaults() -> None:
    load = parse("""\
        load:
          rate: 20
          users: 16
    """).variants[0].load
    assert (load.rate, load.arrival, load.burstiness, load.late_ms, load.users) == (20.0, "poisson", 1.0, 10.0, 16)
    assert load.stages == ()


def test_rate_settings_and_flags() -> None:
    variant = parse("""\
        load:
          rate: 2.5
          arrival: poisson
          burstiness: 0.5
          late_ms: 50
          seed: 3
    """).variants[0]
    settings = variant_settings(variant)
    assert settings["load.rate"] == 2.5 and settings["load.burstiness"] == 0.5 and settings["load.arrival"] == "poisson"
    assert pacing.locust_args(variant.load) == ["--rate", "2.5", "--arrival", "poisson", "--burstiness", "0.5",
                                                   "--late-ms", "50", "--seed", "3"]
    assert "load.rate" not in variant_settings(parse("load: {users: 2}").variants[0])  # a closed loop's settings as before


def test_stages_replace_users() -> None:
    variant = parse("""\
        load:
          spawn_rate: 2
          stages:
            - {duration_s: 10, users: 4}
            - {duration_s: 10, users: 16, spawn_rate: 8}
            - {duration_s: 20, users: 32}
    """).variants[0]
    load = variant.load
    assert load.stages == (Stage(10.0, 4, 2.0), Stage(10.0, 16, 8.0), Stage(20.0, 32, 2.0))
    assert load.users == 32 and pacing.stages_duration_s(load) == 40.0
    args = pacing.locust_args(load)
    assert args[0] == "--stages" and json.loads(args[1])[1] == {"duration_s": 10.0, "users": 16, "spawn_rate": 8.0}
    assert variant_settings(variant)["load.stages"][2] == {"duration_s": 20.0, "users": 32, "spawn_rate": 2.0}
    assert variant.sweep is None  # a list of stages is one value, not a sweep


def test_a_stage_without_spawn_rate_reaches_its_users_in_a_second() -> None:
    """Also ramping down: Locust stops users at the spawn rate, so 6 → 1 users needs 6/s, not 1/s."""
    load = parse("load: {stages: [{duration_s: 3, users: 5}, {duration_s: 1, users: 6}, "
                 "{duration_s: 2, users: 1}]}").variants[0].load
    assert load.stages == (Stage(3.0, 5, 5.0), Stage(1.0, 6, 6.0), Stage(2.0, 1, 6.0))


def test_a_rate_can_be_swept() -> None:
    variant = parse("load: {rate: [5, 10], users: 4}").variants[0]
    assert variant.sweep is not None and [s.rate for s in variant.steps] == [5.0, 10.0]


@pytest.mark.parametrize("text, expected", [
    ("""\
        load:
          rate: 10
          stages: [{duration_s: 1, users: 1}]
     """, "study.yaml:3 load.stages: cannot be combined with rate: choose a request rate (open loop) or ramp "
          "stages of users"),
    ("""\
        load:
          rate: 0
     """, "study.yaml:2 load.rate: must be > 0 requests/s, got 0"),
    ("""\
        load:
          rate: fast
     """, "study.yaml:2 load.rate: must be a number, got 'fast'"),
    ("""\
        load:
          users: 4
          burstiness: 2
     """, "study.yaml:3 load.burstiness: only means something with rate (open-loop arrivals), e.g. rate: 20"),
    ("""\
        load:
          rate: 4
          arrival: uniform
     """, "study.yaml:3 load.arrival: must be one of poisson, constant, got 'uniform'"),
    ("""\
        load:
          rate: 4
          arrival: constant
          burstiness: 2
     """, "study.yaml:4 load.burstiness: only applies to arrival: poisson (constant arrivals are evenly spaced)"),
    ("""\
        load:
          rate: 4
          burstiness: 0
     """, "study.yaml:3 load.burstiness: must be > 0 (1 = Poisson, < 1 burstier, > 1 more regular), got 0"),
    ("""\
        load:
          rate: 4
          late_ms: -1
     """, "study.yaml:3 load.late_ms: must be >= 0, got -1"),
    ("""\
        load:
          stages: []
     """, "study.yaml:2 load.stages: must be a non-empty list of {duration_s, users, spawn_rate}, got []"),
    ("""\
        load:
          stages: {duration_s: 1, users: 2}
     """, "study.yaml:2 load.stages: must be a non-empty list of {duration_s, users, spawn_rate}, "
          "got {'duration_s': 1, 'users': 2}"),
    ("""\
        load:
          stages:
            - {duration_s: 1, users: 2}
            - 5
     """, "study.yaml:4 load.stages.1: must be a mapping, got int"),
    ("""\
        load:
          stages:
            - {duration_s: 0, users: 2}
     """, "study.yaml:3 load.stages.0.duration_s: must be > 0 seconds, got 0"),
    ("""\
        load:
          stages:
            - {duration_s: 2, users: 0}
     """, "study.yaml:3 load.stages.0.users: must be >= 1, got 0"),
    ("""\
        load:
          stages:
            - {duration_s: 2}
     """, "study.yaml:3 load.stages.0: each stage needs duration_s and users; users is missing"),
    ("""\
        load:
          stages:
            - {duration_s: 2, users: 1, ramp: 3}
     """, "study.yaml:3 load.stages.0.ramp: unknown key; allowed: duration_s, spawn_rate, users"),
    ("""\
        load:
          users: 8
        variants:
          - name: ramp
            load:
              stages: [{duration_s: 2, users: 1}]
     """, "study.yaml:2 load.users: stages set the users of each stage; remove users (or stages)"),
], ids=["rate_and_stages", "rate_zero", "rate_not_number", "burstiness_without_rate", "bad_arrival",
        "burstiness_with_constant", "burstiness_zero", "late_negative", "stages_empty", "stages_not_list",
        "stage_not_mapping", "stage_zero_duration", "stage_zero_users", "stage_missing_users",
        "stage_unknown_key", "stages_with_users"])
def test_one_line_errors(text: str, expected: str) -> None:
    assert error_of(text) == expected


def plan(load: LoadSpec) -> LoadPlan:
    return LoadPlan("http://127.0.0.1:1", load, 30, None)


def test_the_locust_command_carries_the_mode(tmp_path: Path) -> None:
    paths = VariantPaths(tmp_path)
    closed = locust_command(plan(LoadSpec(users=4)), paths)
    assert "--rate" not in closed and "--stages" not in closed
    rate = locust_command(plan(LoadSpec(users=2, rate=40.0, arrival="constant")), paths)
    assert rate[rate.index("--rate") + 1] == "40" and rate[rate.index("--arrival") + 1] == "constant"
    staged = locust_command(plan(LoadSpec(stages=(Stage(2.0, 1, 1.0),))), paths)
    assert json.loads(staged[staged.index("--stages") + 1]) == [{"duration_s": 2.0, "users": 1, "spawn_rate": 1.0}]


def test_a_staged_run_that_ran_out_of_stages_says_so() -> None:
    staged = LoadSpec(stages=(Stage(2.0, 1, 1.0), Stage(3.0, 2, 2.0)))
    assert pacing.stopped_by(staged, "num_prompts", lambda: False) == "stages_end"
    assert pacing.stopped_by(staged, "time_cap", lambda: False) == "stages_end"  # the cap was after the stages
    assert pacing.stopped_by(staged, "num_prompts", lambda: True) == "num_prompts"
    assert pacing.stopped_by(replace(staged, max_seconds=4.0), "time_cap", lambda: False) == "time_cap"
    assert pacing.stopped_by(staged, "server_died", lambda: False) == "server_died"
    assert pacing.stopped_by(LoadSpec(), "num_prompts", lambda: False) == "num_prompts"


def test_describe() -> None:
    assert pacing.describe(LoadSpec(users=16, rate=20.0)) == "open loop 20 req/s (poisson), at most 16 in flight"
    assert pacing.describe(LoadSpec(rate=2.0, burstiness=0.5)).startswith("open loop 2 req/s (poisson, burstiness 0.5)")
    assert pacing.describe(LoadSpec(stages=(Stage(10, 4, 4), Stage(20, 16, 8)))) == \
        "2 stages: 4 → 16 users over 30 s"
