"""orchestrate/scenario/slo.py: ``slo:`` at the top level and per variant, merged key by key, one-line errors."""

from __future__ import annotations

import pytest

from orchestrate.scenario.settings import variant_settings
from orchestrate.scenario.slo import Slo
from tests.helpers import parse_text as parse
from tests.helpers import scenario_error as error_of


def test_top_level_slo_and_a_variant_overriding_one_limit():
    scenario = parse("""\
        slo: {ttft_ms: 2000, tpot_ms: 100}
        variants:
          - name: a
          - name: b
            slo: {tpot_ms: 50.5, e2e_ms: 30000}
          - name: c
            slo:
    """)
    a, b, c = scenario.variants
    assert a.slo == Slo(ttft_ms=2000.0, tpot_ms=100.0)
    assert b.slo == Slo(ttft_ms=2000.0, tpot_ms=50.5, e2e_ms=30000.0)
    assert c.slo == a.slo  # an empty section inherits
    assert b.slo is not None and b.slo.as_dict() == {"ttft_ms": 2000.0, "tpot_ms": 50.5, "e2e_ms": 30000.0}
    # the limits change no measurement: not a setting, so a and b still compare as repeats
    assert variant_settings(a) == variant_settings(b)


def test_no_slo_is_none():
    assert parse("name: x\n").variants[0].slo is None
    assert parse("variants:\n  - name: a\n    slo: {}\n").variants[0].slo is None


@pytest.mark.parametrize("text, expected", [
    pytest.param("""\
        slo:
          ttft_ms: 0
     """, "study.yaml:2 slo.ttft_ms: must be a limit in milliseconds > 0, got 0", id="zero"),
    pytest.param("""\
        slo:
          tpot_ms: -5
     """, "study.yaml:2 slo.tpot_ms: must be >= 0, got -5", id="negative"),
    pytest.param("""\
        slo:
          e2e_ms: .inf
     """, "study.yaml:2 slo.e2e_ms: must be a limit in milliseconds > 0, got inf", id="infinite"),
    pytest.param("""\
        slo:
          ttft_ms: fast
     """, "study.yaml:2 slo.ttft_ms: must be a number, got 'fast'", id="not_a_number"),
    pytest.param("""\
        slo:
          ttft: 2000
     """, "study.yaml:2 slo.ttft: unknown key; allowed: e2e_ms, tpot_ms, ttft_ms", id="vllm_name_is_not_ours"),
    pytest.param("""\
        slo: 2000
     """, "study.yaml:1 slo: must be a mapping, got int", id="not_a_mapping"),
    pytest.param("""\
        slo: {ttft_ms: 2000}
        variants:
          - name: a
          - name: b
            slo:
              ttft_ms: 0.0
     """, "study.yaml:6 variants.1.slo.ttft_ms: must be a limit in milliseconds > 0, got 0.0",
     id="the_variant_line_that_holds_it"),
])
def test_errors_name_the_line_and_key(text: str, expected: str):
    assert error_of(text) == expected
