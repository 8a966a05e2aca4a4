"""orchestrate/report/aggregates/cost.py and scenario/cost.py: prices × the run's own seconds and joules."""

from __future__ import annotations

import pytest

from orchestrate.errors import ScenarioError
from orchestrate.report.aggregates.cost import cost
from orchestrate.report.schema.headline import Tokens
from orchestrate.report.schema.machine import Energy
from orchestrate.scenario.cost import CostRates
from tests.helpers import parse_text

TOKENS = Tokens(prompt=400_000, output=100_000)


def test_time_and_energy_priced_per_million_tokens() -> None:
    block = cost(CostRates(usd_per_hour=3.6, usd_per_kwh=0.2), 1000.0, Energy(joules=7.2e6), TOKENS)
    assert block is not None
    assert (block.usd_time, block.usd_energy) == (pytest.approx(1.0), pytest.approx(0.4))
    assert block.usd == pytest.approx(1.4) and block.usd_per_mtok_output == pytest.approx(14.0)
    assert block.usd_per_mtok_input == pytest.approx(3.5) and block.energy_unpriced is None


def test_no_prices_no_block_and_unmeasured_energy_is_said() -> None:
    assert cost(None, 10.0, Energy(joules=1.0), TOKENS) is None
    block = cost(CostRates(usd_per_kwh=0.2), 10.0, Energy(unavailable="no GPU and no RAPL"), TOKENS)
    assert block is not None and block.usd is None and block.usd_per_mtok_output is None
    assert block.energy_unpriced == "no GPU and no RAPL"
    empty = cost(CostRates(usd_per_hour=1.0), 36.0, Energy(), Tokens())
    assert empty is not None and empty.usd == pytest.approx(0.01) and empty.usd_per_mtok_output is None


def test_the_scenario_s_cost_section() -> None:
    assert parse_text("name: x\ncost: {usd_per_hour: 3.5}\n").cost == CostRates(usd_per_hour=3.5)
    assert parse_text("name: x\n").cost is None
    with pytest.raises(ScenarioError, match=r"study.yaml:2 cost.usd_per_kwh: must be >= 0"):
        parse_text("name: x\ncost: {usd_per_kwh: -1}\n")
    with pytest.raises(ScenarioError, match=r"cost.usd: unknown key"):
        parse_text("name: x\ncost: {usd: 1}\n")
