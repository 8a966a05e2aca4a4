"""orchestrate/scenario/settings.py: a variant's settings, flat — what the confound check compares, so two
spellings of one experiment must be equal and what does not change a measurement must be absent."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from locustfiles.dataset import SamplingConfig
from locustfiles.pacing_params import Stage
from orchestrate.scenario.settings import (
    load_of,
    on_off,
    retry_description,
    ui_settings,
    variant_settings,
)
from orchestrate.scenario.spec import LoadSpec, Search, ServerSpec, Sweep, Variant


def settings(server: ServerSpec | None = None, load: LoadSpec | None = None, **variant: Any) -> dict[str, Any]:
    return variant_settings(Variant("v", server or ServerSpec(), load or LoadSpec(), **variant))


def test_the_same_experiment_spelled_two_ways_is_equal() -> None:
    """``fa: false`` and ``flash-attn: off``; a sampling default left out and set explicitly."""
    short = settings(ServerSpec(flags={"fa": False, "np": 4}))
    long = settings(ServerSpec(flags={"flash-attn": "off", "parallel": 4}),
                    LoadSpec(sampling={"max_prompt_tokens": SamplingConfig().max_prompt_tokens}))
    assert short == long
    assert short["server.flags.flash-attn"] == "off" and short["server.flags.parallel"] == 4


def test_what_does_not_change_a_measurement_is_left_out() -> None:
    base = settings()
    assert settings(ServerSpec(port=9000, host="0.0.0.0", ready_timeout_s=5),
                    LoadSpec(read_timeout_s=1, server_lost_after_s=1)) == base
    assert settings(load=LoadSpec(users=3)) != base


def test_each_launcher_adds_what_it_runs() -> None:
    docker = settings(ServerSpec(launcher="docker", image="img:1", docker={"gpus": [0]}))
    assert docker["server.image"] == "img:1" and docker["server.docker.gpus"] == [0]
    assert settings(ServerSpec(launcher="process", binary="/b/llama-server"))["server.binary"] == "/b/llama-server"
    assert "server.binary" not in settings() and "server.image" not in settings()


def test_an_external_server_has_no_scenario_server_settings() -> None:
    """Nothing of its server section is applied: its flags and model would be claims, not settings."""
    out = settings(ServerSpec(launcher="external", url="http://h:1", model="big.gguf", flags={"parallel": 8}))
    assert {k: v for k, v in out.items() if k.startswith("server.")} == {"server.launcher": "external",
                                                                        "server.url": "http://h:1"}


def test_load_modes_sweeps_and_sampling_defaults() -> None:
    out = settings(load=LoadSpec(rate=2.0, sampling={"min_prompt_tokens": 10}))
    assert out["load.rate"] == 2.0 and out["load.arrival"] == "poisson"
    assert out["load.sampling.min_prompt_tokens"] == 10
    assert out["load.sampling.max_total_tokens"] == SamplingConfig().max_total_tokens
    assert out["load.sampling.fixed_output_tokens"] is None
    swept = settings(load=LoadSpec(users=1), sweep=Sweep("users", (1, 8)))
    assert swept["load.users"] == [1, 8], "a sweep's variants compare by all of their values"
    assert "load.rate" not in settings() and "load.mode" not in settings()


def test_on_off_only_for_value_switches() -> None:
    assert on_off({"flash-attn": True, "fa": False, "cont-batching": True, "flash-attn-x": False}) == \
        {"flash-attn": "on", "fa": "off", "cont-batching": True, "flash-attn-x": False}


def test_the_retry_rule_as_a_person_reads_it() -> None:
    v = Variant("v", ServerSpec(), LoadSpec(), retry_with={"flash-attn": False, "draft_model": None, "parallel": 2,
                                                           "cont-batching": True})
    assert retry_description(v) == "flash-attn=off, draft_model=none, parallel=2, cont-batching=True"
    assert retry_description(Variant("v", ServerSpec(), LoadSpec())) == ""


READ = ("users", "spawn_rate", "rate", "arrival", "burstiness", "stages", "ignores_eos", "dataset", "num_prompts",
        "max_seconds", "max_tokens", "seed", "cache_prompt")
"""What the report reads of a load (``ignores_eos``: ``ignore_eos`` as sent)."""


@pytest.mark.parametrize("load", [
    LoadSpec(users=8, spawn_rate=2.0, num_prompts=50, max_tokens=64, seed=3, max_seconds=30.0),
    LoadSpec(users=4, rate=2.5, arrival="poisson", burstiness=0.5),
    LoadSpec(users=4, rate=2.5, arrival="constant"),
    LoadSpec(users=16, stages=(Stage(10.0, 4, 4.0), Stage(10.0, 16, 8.0)), spawn_rate=8.0),
    LoadSpec(dataset="random", ignore_eos=None),
    LoadSpec(ignore_eos=True),
], ids=["closed", "open-poisson", "open-constant", "stages", "random-ignores-eos", "ignore-eos"])
def test_a_load_reads_back_from_its_settings(load: LoadSpec) -> None:
    """A folder whose run.json predates its ``load``: the report reads the same load from the settings."""
    back = load_of(settings(load=load))
    assert back is not None
    assert {key: getattr(back, key) for key in READ} == {key: getattr(load, key) for key in READ}


def test_a_result_without_one_load_reads_none() -> None:
    assert load_of(settings(load=LoadSpec(users=1), sweep=Sweep("users", (1, 8)))) is None
    assert load_of(settings(load=LoadSpec(rate=1.0), sweep=Sweep("rate", (1.0, 2.0)))) is None
    assert load_of(settings(search=Search("users", 1, 8))) is None
    assert load_of({}) is None
    swept = load_of(settings(load=LoadSpec(users=4, max_tokens=8), sweep=Sweep("max_tokens", (8, 16))))
    assert swept is not None and swept.users == 4 and swept.max_tokens == LoadSpec().max_tokens


def test_the_web_ui_settings_are_what_the_person_changed() -> None:
    asked = LoadSpec(users=32, spawn_rate=32.0)
    assert ui_settings(asked, replace(asked, users=16, spawn_rate=2.0)) == {"load.users": 16, "load.spawn_rate": 2.0}
    assert ui_settings(asked, replace(asked, users=16)) == {"load.users": 16}
    assert ui_settings(asked, asked) == {}


def test_a_ramps_users_are_its_largest_stages() -> None:
    """Settings that name stages and no users (a hand-made folder): the ramp's users, its spawn rates as parsed."""
    back = load_of({"load.stages": [{"users": 1, "duration_s": 2.0},
                                    {"users": 3, "duration_s": 2.0, "spawn_rate": 1.0}]})
    assert back is not None and back.users == 3
    assert back.stages == (Stage(2.0, 1, 1.0), Stage(2.0, 3, 1.0))
