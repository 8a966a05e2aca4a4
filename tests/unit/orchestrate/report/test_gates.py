"""orchestrate/report/gates.py: each gate figure read from a summary, every verdict a line and a row of gates.json."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrate.report.gates import PATHS, Verdict, figure, judge, write_gates
from orchestrate.report.schema import Summary
from orchestrate.report.schema.common import Stats
from orchestrate.report.schema.headline import LatencyMs, Requests, Throughput
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
                                                              "value": 2412.3, "failed": True}
    assert not write_gates(tmp_path, [Verdict("errors > 0", "v", 0.0, False)]).read_text().count('"failed": true')
