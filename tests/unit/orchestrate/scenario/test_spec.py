"""orchestrate/scenario/spec.py: the frozen specs' own logic — a retry's settings, command-line overrides
(which end a sweep when they set its key), a sweep step's label and the run's ``scenario.yaml``."""

from __future__ import annotations

from pathlib import Path

import yaml

from orchestrate.scenario.spec import LoadSpec, Scenario, ServerSpec, Sweep, Variant


def test_a_retry_changes_flags_and_server_keys_and_has_no_retry_itself() -> None:
    """Server keys replace (a mapping merges key by key); anything else is a flag."""
    v = Variant("v", ServerSpec(flags={"parallel": 4, "flash-attn": "on"}, docker={"gpus": "all", "env": {"A": "1"}}),
                LoadSpec(), retry_with={"flash-attn": "off", "ready_timeout_s": 60.0, "docker": {"env": {"B": "2"}}})
    retry = v.with_retry()
    assert retry.server.flags == {"parallel": 4, "flash-attn": "off"}
    assert retry.server.ready_timeout_s == 60.0
    assert retry.server.docker == {"gpus": "all", "env": {"A": "1", "B": "2"}}
    assert retry.retry_with is None and retry.name == "v" and retry.load == v.load
    assert v.server.flags == {"parallel": 4, "flash-attn": "on"} and v.server.docker["env"] == {"A": "1"}, \
        "the first try's spec is not changed"
    plain = Variant("p", ServerSpec(), LoadSpec())
    assert plain.with_retry() is plain


def sweep_scenario() -> Scenario:
    steps = (LoadSpec(users=1), LoadSpec(users=8))
    swept = Variant("s", ServerSpec(), steps[0], sweep=Sweep("users", (1, 8)), steps=steps)
    return Scenario("t", Path("t.yaml"), "", (swept, Variant("plain", ServerSpec(), LoadSpec(users=2))))


def test_overrides_reach_every_variant_and_every_step() -> None:
    scenario = sweep_scenario().with_overrides(server={"url": "http://h:1", "launcher": "external"},
                                               load={"max_tokens": 9}, repeats=2)
    swept, plain = scenario.variants
    assert {v.server.launcher for v in scenario.variants} == {"external"} and scenario.repeats == 2
    assert swept.load.max_tokens == 9 and [s.max_tokens for s in swept.steps] == [9, 9]
    assert [s.users for s in swept.steps] == [1, 8] and swept.sweep is not None
    assert plain.load.max_tokens == 9 and plain.load.users == 2


def test_overriding_the_swept_key_runs_that_one_value() -> None:
    swept, plain = sweep_scenario().with_overrides(load={"users": 4}).variants
    assert swept.sweep is None and swept.steps == () and swept.load.users == 4
    assert plain.load.users == 4


def test_step_labels_are_folder_names() -> None:
    assert Sweep("users", (1,)).label(8) == "users-8"
    assert Sweep("rate", (0.5,)).label(0.5) == "rate-0.5" and Sweep("rate", (2.0,)).label(2.0) == "rate-2"


def test_as_run_is_every_variants_merged_settings_as_plain_yaml() -> None:
    run = sweep_scenario().as_run()
    again = yaml.safe_load(yaml.safe_dump(run, sort_keys=False))
    assert again["name"] == "t" and again["source"] == "t.yaml" and again["repeats"] == 1
    assert [v["name"] for v in again["variants"]] == ["s", "plain"]
    assert again["variants"][0]["sweep"]["values"] == [1, 8] and again["variants"][1]["load"]["users"] == 2
    assert set(again["host_limits"]) == {"foreign_cpu_pct", "steal_pct"}
