"""orchestrate/report/gates.py: each gate figure read from a summary, every verdict a line and a row of gates.json."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from orchestrate.report.gates import INTERVALS, PATHS, Verdict, figure, half_width, judge, write_gates
from orchestrate.report.schema import Summary
from orchestrate.report.schema.common import Stats
from orchestrate.report.schema.headline import LatencyMs, Requests, Throughput
from orchestrate.report.schema.intervals import Interval, Intervals
from orchestrate.scenario.gates import FIGURES, Gate


def summary() -> Summary:
    return Summary(requests=Requests(sent=200, completed=198, errors=2), throughput=Throughput(decode_tok_s=95.5),
                   latency_ms=LatencyMs(ttft=Stats(p50=400.0, p99=2412.3), e2e=Stats(p99=9000.0)))


def test_every_figure_but_the_computed_one_has_its_place_in_the_summary() -> None:
    assert set(FIGURES) == set(PATHS) | {"error_share"}
    found = summary()
    assert (figure(found, "ttft_ms.p99"), figure(found, "error_share"), figure(found, "decode_tok_s"),
            figure(found, "completed")) == (2412.3, 0.01, 95.5, 198.0)
    assert figure(found, "slo_attainment") is None and figure(Summary(), "error_share") is None


def test_verdicts_name_the_gate_the_variant_and_the_figure(tmp_path: Path) -> None:
    gates = (Gate("ttft_ms.p99", ">", 2000.0), Gate("error_share", ">", 0.05), Gate("valid_share", "<", 0.9))
    verdicts = judge(gates, {"base": summary(), "gone": None})
    assert [(v.gate, v.failed) for v in verdicts] == [("ttft_ms.p99 > 2000", True), ("error_share > 0.05", False),
                                                      ("valid_share < 0.9", True)]
    assert [v.line() for v in verdicts] == [
        "gate failed: ttft_ms.p99 > 2000 (base: ttft_ms.p99 = 2,412.3)",
        "gate held: error_share > 0.05 (base: error_share = 0.0100)",
        "gate failed: valid_share < 0.9 (base: no valid_share in its summary, so it cannot hold)"]
    data = json.loads(write_gates(tmp_path, verdicts).read_text())
    assert data["failed"] is True and data["verdicts"][0] == {"gate": "ttft_ms.p99 > 2000", "variant": "base",
                                                              "value": 2412.3, "failed": True, "limit": None,
                                                              "noise": None, "why": None}
    assert not write_gates(tmp_path, [Verdict("errors > 0", "v", 0.0, False)]).read_text().count('"failed": true')


def measured(decode: float, half: float | None) -> Summary:
    """A run whose decode tok/s is ``decode`` ± ``half`` (no interval for None)."""
    return Summary(throughput=Throughput(decode_tok_s=decode),
                   intervals=None if half is None else Intervals(decode_tok_s=Interval(decode - half, decode + half)))


def test_every_interval_belongs_to_a_gate_figure() -> None:
    assert set(INTERVALS) <= set(PATHS)
    assert half_width(measured(100.0, 4.0), "decode_tok_s") == 4.0 and half_width(measured(100.0, None),
                                                                                   "decode_tok_s") is None


BELOW = Gate("decode_tok_s", "<", 0.95, relative=True)


@pytest.mark.parametrize(("decode", "failed"), [(100.0, False), (92.0, False), (85.0, True)])
def test_a_baseline_gate_fails_only_beyond_the_two_runs_noise(decode: float, failed: bool) -> None:
    """Baseline 100 ± 4, this run ± 4: the limit 95, the noise √(4² + (0.95·4)²) = 5.52; 92 is within it."""
    verdict, = judge((BELOW,), {"v": measured(decode, 4.0)}, {"v": measured(100.0, 4.0)})
    assert verdict.failed is failed and verdict.limit == pytest.approx(95.0)
    assert verdict.noise == pytest.approx(math.hypot(4.0, 0.95 * 4.0))
    assert verdict.line().startswith(f"gate {'failed' if failed else 'held'}: decode_tok_s < 0.95 × baseline (v: "
                                     f"decode_tok_s = {decode:,.1f}; limit 95.0, noise ± 5.5)")


def test_a_baseline_gate_finds_its_variant_and_says_when_it_cannot() -> None:
    base = {"a": measured(100.0, None), "b": measured(50.0, None)}
    by_name, = judge((BELOW,), {"repeat-1/b": measured(49.0, None)}, base)
    assert (by_name.limit, by_name.failed, by_name.noise) == (pytest.approx(47.5), False, None)
    assert by_name.line().endswith("limit 47.5, no interval: judged as measured)")
    missing, = judge((BELOW,), {"c": measured(49.0, None)}, base)
    assert missing.failed and missing.line() == ("gate failed: decode_tok_s < 0.95 × baseline (c: no such variant in "
                                                 "the baseline run, so it cannot hold)")
    only, = judge((BELOW,), {"c": measured(10.0, 1.0)}, {"x": measured(100.0, 1.0)})
    assert only.failed
