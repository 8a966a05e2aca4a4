"""orchestrate/scenario/until.py: ``load.until`` and ``--until``, checked once; refused where no run has a window."""

from __future__ import annotations

import pytest

from orchestrate.errors import ScenarioError
from orchestrate.scenario.until import FIGURES, parse_until, parse_until_flag
from tests.helpers import parse_text


def test_targets_map_steady_figures_to_relative_half_widths() -> None:
    assert parse_until({"ttft_ms.p99": 0.05, "decode_tok_s": 0.02}) == {"ttft_ms.p99": 0.05, "decode_tok_s": 0.02}
    assert parse_until(None) == {}
    assert parse_until_flag("ttft_ms.p99=0.05, slo_attainment=0.01") == {"ttft_ms.p99": 0.05, "slo_attainment": 0.01}
    assert set(FIGURES) >= {"ttft_ms.p50", "tpot_ms.p99", "requests_per_s", "prefill_tok_s"}


@pytest.mark.parametrize(("raw", "message"), [
    ({"ttft_ms.p98": 0.05}, "unknown figure 'ttft_ms.p98'"),
    ({"ttft_ms.p99": 5}, "ttft_ms.p99: a relative half width between 0 and 1 \\(0.05: ±5 %\\), got 5"),
    ({"ttft_ms.p99": True}, "got True"),
    ({}, "must map figures"),
    ([0.05], "must map figures"),
])
def test_a_bad_target_says_what_is_wrong(raw: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_until(raw)


@pytest.mark.parametrize("text", ["ttft_ms.p99", "ttft_ms.p99=fast", ""])
def test_a_bad_flag_says_its_shape(text: str) -> None:
    with pytest.raises(ValueError, match="must be FIGURE=WIDTH"):
        parse_until_flag(text)


def test_the_scenario_key_reaches_the_load_and_is_checked_where_it_stands() -> None:
    scenario = parse_text("name: x\nload:\n  users: 4\n  until: {ttft_ms.p99: 0.05}\n")
    assert scenario.variants[0].load.until == {"ttft_ms.p99": 0.05}
    with pytest.raises(ScenarioError, match=r"^study.yaml:4 load.until: unknown figure 'ttft'"):
        parse_text("name: x\nload:\n  users: 4\n  until: {ttft: 0.05}\n")


@pytest.mark.parametrize(("text", "message"), [
    ("name: x\nload:\n  until: {decode_tok_s: 0.02}\n  stages: [{users: 2, duration_s: 5}]\n",
     "load.until: needs a steady-state window, and stages have none"),
    ("name: x\nload:\n  until: {decode_tok_s: 0.02}\n  users: [1, 2]\n",
     "load.until: stops one run at a precision; a sweep runs many"),
    ("name: x\nload:\n  until: {decode_tok_s: 0.02}\nslo: {ttft_ms: 100}\nsearch: {over: users}\n",
     "load.until: stops one run at a precision; a capacity search runs many"),
])
def test_runs_without_one_window_refuse_it(text: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_text(text)
