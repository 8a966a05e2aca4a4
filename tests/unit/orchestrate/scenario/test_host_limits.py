"""orchestrate/scenario/host_limits.py: ``host_limits:`` → ``HostLimits``, one-line ``FILE:LINE`` errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrate.errors import ScenarioError
from orchestrate.scenario.host_limits import FOREIGN_CPU_LIMIT_PCT, STEAL_LIMIT_PCT, HostLimits, parse_host_limits
from orchestrate.scenario.yamlsource import read_yaml
from tests.helpers import parse_text as parse
from tests.helpers import scenario_error as error_of


def _direct(text: str) -> HostLimits:
    """``parse_host_limits`` on the ``host_limits`` section of ``text``, with the Checker read_yaml builds."""
    raw, check = read_yaml(text, Path("limits.yaml"))
    return parse_host_limits(check, raw.get("host_limits"))


def test_both_limits_set_as_floats() -> None:
    """Integers in YAML become floats, so the summary's limits compare and print the same either way."""
    limits = _direct("host_limits:\n  foreign_cpu_pct: 25\n  steal_pct: 2.5\n")
    assert limits == HostLimits(foreign_cpu_pct=25.0, steal_pct=2.5)
    assert isinstance(limits.foreign_cpu_pct, float)


def test_one_limit_keeps_the_other_default() -> None:
    """A section naming one limit leaves the other at the documented default, not zero."""
    assert _direct("host_limits: {steal_pct: 7}\n") == HostLimits(foreign_cpu_pct=FOREIGN_CPU_LIMIT_PCT,
                                                                  steal_pct=7.0)
    assert _direct("host_limits: {foreign_cpu_pct: 0}\n") == HostLimits(foreign_cpu_pct=0.0,
                                                                        steal_pct=STEAL_LIMIT_PCT)


def test_absent_or_empty_section_is_the_defaults() -> None:
    """No ``host_limits:`` (or an empty one) is the defaults, through the whole scenario parse too."""
    assert HostLimits() == HostLimits(FOREIGN_CPU_LIMIT_PCT, STEAL_LIMIT_PCT)
    assert _direct("name: x\n") == HostLimits()
    assert _direct("host_limits:\n") == HostLimits()
    assert parse("name: x\n").host_limits == HostLimits()


def test_scenario_parse_carries_the_limits() -> None:
    """``parse_scenario`` hands the section to ``parse_host_limits`` and keeps its result on the Scenario."""
    scenario = parse("""\
        name: x
        host_limits: {foreign_cpu_pct: 100, steal_pct: 100}
    """)
    assert scenario.host_limits == HostLimits(100.0, 100.0)


@pytest.mark.parametrize("text, expected", [
    pytest.param("""\
        name: x
        host_limits:
          foreign_cpu_pct: 20
          steal: 5
     """, "study.yaml:4 host_limits.steal: unknown key; allowed: foreign_cpu_pct, steal_pct", id="unknown_key"),
    pytest.param("""\
        name: x
        host_limits:
          steal_pct: 1
          foreign_cpu_pct: -3
     """, "study.yaml:4 host_limits.foreign_cpu_pct: must be >= 0, got -3", id="negative"),
    pytest.param("""\
        host_limits:
          steal_pct: lots
     """, "study.yaml:2 host_limits.steal_pct: must be a number, got 'lots'", id="not_a_number"),
    pytest.param("""\
        host_limits:
          steal_pct: true
     """, "study.yaml:2 host_limits.steal_pct: must be a number, got True", id="bool_is_not_a_number"),
    pytest.param("""\
        name: x
        host_limits: 10
     """, "study.yaml:2 host_limits: must be a mapping, got int", id="not_a_mapping"),
])
def test_bad_section_is_a_one_line_error_naming_file_line_and_field(text: str, expected: str) -> None:
    """A mistake names the file, the line and the field, so it can be fixed without reading a traceback."""
    assert error_of(text) == expected


def test_direct_error_names_the_file_it_was_given() -> None:
    """The Checker's path, not a fixed name, leads the message."""
    with pytest.raises(ScenarioError, match=r"^limits\.yaml:3 host_limits\.steal_pct: must be >= 0, got -1$"):
        _direct("host_limits:\n  foreign_cpu_pct: 1\n  steal_pct: -1\n")
