"""orchestrate/scenario/gates.py: ``fail_if:`` and ``--fail-if`` gates, parsed once, one line for a bad one."""

from __future__ import annotations

import pytest

from orchestrate.errors import ScenarioError
from orchestrate.scenario.gates import FIGURES, Gate, parse_gate
from tests.helpers import parse_text


@pytest.mark.parametrize(("text", "gate"), [
    ("ttft_ms.p99 > 2000", Gate("ttft_ms.p99", ">", 2000.0)),
    ("error_share>0.01", Gate("error_share", ">", 0.01)),
    ("  slo_attainment <= .99 ", Gate("slo_attainment", "<=", 0.99)),
    ("steady.decode_tok_s < 1e2", Gate("steady.decode_tok_s", "<", 100.0)),
    ("errors != 0", Gate("errors", "!=", 0.0)),
])
def test_a_gate_is_figure_operator_number(text: str, gate: Gate) -> None:
    assert parse_gate(text) == gate and parse_gate(str(gate)) == gate


@pytest.mark.parametrize(("text", "message"), [
    ("ttft_ms.p98 > 1", "unknown figure 'ttft_ms.p98'"),
    ("ttft_ms.p99 >> 1", "must be FIGURE OP NUMBER"),
    ("ttft_ms.p99 > fast", "must be FIGURE OP NUMBER"),
    (5, "must be FIGURE OP NUMBER"),
])
def test_a_bad_gate_says_what_is_wrong(text: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_gate(text)


@pytest.mark.parametrize(("figure", "op", "value", "fails"), [
    ("e2e_ms.p99", ">", 2000.0, False), ("e2e_ms.p99", ">", 1500.0, True), ("completed", "==", 1800.0, True),
    ("completed", "<", 1800.0, False)])
def test_a_gate_fails_when_its_condition_is_true(figure: str, op: str, value: float, fails: bool) -> None:
    assert Gate(figure, op, value).fails(1800.0) is fails and figure in FIGURES


def test_the_scenario_s_fail_if_is_parsed_with_its_line() -> None:
    scenario = parse_text("name: x\nfail_if:\n  - ttft_ms.p99 > 2000\n  - error_share > 0\n")
    assert scenario.gates == (Gate("ttft_ms.p99", ">", 2000.0), Gate("error_share", ">", 0.0))
    with pytest.raises(ScenarioError, match=r"study.yaml:4 fail_if.1: unknown figure 'tpot'"):
        parse_text("name: x\nfail_if:\n  - ttft_ms.p99 > 2000\n  - tpot > 1\n")
    with pytest.raises(ScenarioError, match=r"fail_if: must be a list of gates"):
        parse_text("name: x\nfail_if: ttft_ms.p99 > 2000\n")
