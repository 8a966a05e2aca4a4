"""orchestrate/scenario/trace.py: load.trace validated at its line; the keys a trace sets itself refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from locustfiles.dataset import Prompt
from orchestrate.errors import ScenarioError
from orchestrate.scenario.parse import parse_scenario
from orchestrate.scenario.settings import variant_settings


def parse(load: str):  # type: ignore[no-untyped-def]
    return parse_scenario(f"name: t\nload:\n{load}", Path("t.yaml"))


def test_a_trace_and_its_transformations_are_the_variant_s_settings() -> None:
    variant = parse("  dataset: trace\n  users: 4\n  trace: {path: mooncake-sample, time_scale: 2, "
                    "input_scale: 0.125, max_output_tokens: 32}\n").variants[0]
    trace = variant.load.trace
    assert trace is not None and (trace.time_scale, trace.input_scale, trace.block_tokens) == (2.0, 0.125, 512)
    assert variant.load.ignores_eos  # output lengths are the trace's: replies run to them
    assert parse("  dataset: trace\n  late_ms: 5\n  trace: {path: x}\n").variants[0].load.late_ms == 5.0
    settings = variant_settings(variant)
    assert settings["load.trace.time_scale"] == 2.0 and "load.num_prompts" not in settings


@pytest.mark.parametrize(("load", "message"), [
    ("  dataset: trace\n", "t.yaml:3 load.dataset: dataset: trace needs load.trace: {path: FILE}"),
    ("  dataset: trace\n  num_prompts: 9\n  trace: {path: x}\n", "t.yaml:4 load.num_prompts: a trace sets"),
    ("  dataset: trace\n  rate: 3\n  trace: {path: x}\n", "t.yaml:4 load.rate: a trace sets"),
    ("  dataset: trace\n  trace: {path: x, time_scale: 0}\n", "t.yaml:4 load.trace.time_scale: must be > 0"),
    ("  dataset: trace\n  trace: {path: x, format: csv}\n", "t.yaml:4 load.trace.format: must be one of mooncake"),
    ("  dataset: trace\n  trace: {path: x, speed: 2}\n", "t.yaml:4 load.trace.speed: unknown key"),
    ("  dataset: sharegpt-v3\n  trace: {path: x}\n", "t.yaml:4 load.trace: only means something with dataset: trace"),
])
def test_a_bad_trace_key_is_one_line_at_its_line(load: str, message: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse(load)
    assert str(err.value).startswith(message), str(err.value)


def test_a_prompt_keeps_its_time_in_the_prompts_file() -> None:
    prompt = Prompt(3, "trace-7", ({"role": "user", "content": "x"},), 12, 5, at_s=1.25)
    assert Prompt.from_json(prompt.to_json()) == prompt
    assert "at_s" not in Prompt(3, "a", (), 1, 1).to_json()


def test_the_plan_names_the_trace_its_window_and_its_clock() -> None:
    from orchestrate.commands.preview import plan_lines
    variant = parse("  dataset: trace\n  users: 8\n  trace: {path: mooncake-sample, duration_s: 40, "
                    "input_scale: 0.5, max_output_tokens: 16, time_scale: 2}\n").variants[0]
    lines = plan_lines(variant)
    assert "load: the requests of trace mooncake-sample (from 0 s for 40 s, input × 0.5, replies ≤ 16)" in lines[1]
    assert "load mode: trace replay at 2× its speed, at most 8 in flight" in lines
