"""orchestrate/report/conditions.py: which conditions beside the settings make a pair of variants unfair."""

from __future__ import annotations

import pytest

from orchestrate.report.conditions import busy_text, common_prompts, conditions
from orchestrate.report.jsontypes import from_json
from orchestrate.report.schema.machine import Host

QUIET = from_json(Host, {"foreign_cpu_pct": {"p50": 1.0, "max": 4.0}, "steal_pct": {"p50": 0.0, "max": 0.0},
                         "busy": False})
BUSY = from_json(Host, {"foreign_cpu_pct": {"p50": 55.0, "max": 90.0}, "steal_pct": {"p50": 0.0, "max": 0.0},
                        "busy": True})


@pytest.mark.parametrize("host_a, host_b, prompts_a, prompts_b, expected", [
    (QUIET, QUIET, {0, 1, 2}, {2, 1, 0}, []),
    (QUIET, BUSY, {0, 1, 2}, {0, 1, 2}, ["host_load"]),
    (QUIET, QUIET, {0, 1, 2}, {0, 1}, ["prompt_set"]),
    (BUSY, QUIET, {0, 1, 2}, {0, 1, 3}, ["host_load", "prompt_set"]),
    (None, None, None, {0}, []),  # summaries that predate the readings: nothing is claimed
], ids=["fair", "busy", "cut", "both", "unknown"])
def test_conditions(host_a, host_b, prompts_a, prompts_b, expected):
    assert conditions(host_a, host_b, prompts_a, prompts_b) == expected


def test_common_prompts_and_busy_text():
    assert common_prompts({0, 1, 2, 5}, {1, 2, 7}) == 2 and common_prompts(None, {1}) is None
    assert busy_text(QUIET) is None and busy_text(None) is None
    assert busy_text(BUSY) == "other processes used 55 % of a core (p50, max 90 %)"


def test_a_host_block_from_before_its_limits_is_judged_by_the_default_ones():
    """``limits`` (and other keys) a summary did not write read as None: ``notes.busy_reasons`` then judges by the defaults."""
    old = from_json(Host, {"foreign_cpu_pct": {"p50": 55.0, "max": 90.0}, "busy": True})
    assert old.limits.foreign_cpu_pct is None
    assert busy_text(old) == "other processes used 55 % of a core (p50, max 90 %)"
    assert busy_text(from_json(Host, {"foreign_cpu_pct": {"p50": 5.0, "max": 8.0}})) is None  # under 10 %
