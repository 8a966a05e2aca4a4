"""Runs that must fail a build: a server that fails every request, and gates (``fail_if:``, ``--fail-if``).

Against the reference server (``serve-synthetic``): ``--fail-status 500`` answers every chat completion with
llama.cpp's error body, ``--ttft-ms 30`` puts every first token 30 ms after the request, so each gate's truth
is known.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from orchestrate.report.gates import GATE_FAILED
from tests.conftest import reference_server
from tests.helpers import tokenswarm_run

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def scenario(tmp_path: Path, **top: object) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"name": "gates", "load": {"dataset": "synthetic", "users": 4, "num_prompts": 24,
                                                              "max_tokens": 8}, **top}))
    return path


def test_a_server_that_fails_every_request_fails_the_run_and_is_quoted(tmp_path: Path) -> None:
    with reference_server(tmp_path / "server", "--fail-status", "500") as url:
        proc, run_dir = tokenswarm_run(tmp_path, scenario(tmp_path), "--url", url)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = json.loads((run_dir / "default" / "summary.json").read_text())
    said = "synthetic failure: every request gets 500"
    assert summary["status"] == "failed" and summary["error"] == f"every request failed: 24 × http_500:server_error " \
                                                                 f"(the server said: {said})"
    assert summary["steady_state"] == {"found": False, "rule": "requests in flight >= 95 % of the users",
                                       "reason": "no request completed: every one failed or was cut off"}
    assert summary["requests"]["first_error"] == {"http_500:server_error": said}
    assert f"| http_500:server_error | 24 | {said} |" in (run_dir / "default" / "summary.md").read_text()
    assert "status: failed: every request failed" in proc.stdout


def test_each_gate_kind_fails_or_holds_by_the_measured_figure(tmp_path: Path) -> None:
    gates = ["ttft_ms.p99 > 200", "error_share > 0.01", "slo_attainment < 0.99", "decode_tok_s < 1"]
    with reference_server(tmp_path / "server", "--ttft-ms", "30", "--itl-ms", "5") as url:
        proc, run_dir = tokenswarm_run(tmp_path / "held", scenario(tmp_path, fail_if=gates, slo={"ttft_ms": 200}),
                                       "--url", url)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        verdicts = json.loads((run_dir / "gates.json").read_text())
        assert verdicts["failed"] is False and [v["gate"] for v in verdicts["verdicts"]] == [
            "ttft_ms.p99 > 200", "error_share > 0.01", "slo_attainment < 0.99", "decode_tok_s < 1"]
        ttft = verdicts["verdicts"][0]["value"]
        assert 30 <= ttft < 60 and verdicts["verdicts"][1]["value"] == 0.0 and verdicts["verdicts"][2]["value"] == 1.0
        # the same run with a latency gate the 30 ms first tokens cannot meet, given on the command line
        proc, run_dir = tokenswarm_run(tmp_path / "failed", scenario(tmp_path, fail_if=gates, slo={"ttft_ms": 200}),
                                       "--url", url, "--fail-if", "ttft_ms.p50 > 20")
    assert proc.returncode == GATE_FAILED, proc.stdout[-2000:] + proc.stderr[-2000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("tokenswarm: gate failed"))
    assert line.startswith("tokenswarm: gate failed: ttft_ms.p50 > 20 (default: ttft_ms.p50 = 3")
    assert json.loads((run_dir / "gates.json").read_text())["failed"] is True


def test_a_gate_whose_figure_was_never_measured_fails(tmp_path: Path) -> None:
    with reference_server(tmp_path / "server", "--ttft-ms", "5", "--itl-ms", "1") as url:
        proc, _ = tokenswarm_run(tmp_path, scenario(tmp_path, fail_if=["valid_share < 0.9"]), "--url", url)
    assert proc.returncode == GATE_FAILED
    assert "gate failed: valid_share < 0.9 (default: no valid_share in its summary, so it cannot hold)" in proc.stdout


def test_a_baseline_gate_passes_a_rerun_and_fails_a_slower_server(tmp_path: Path) -> None:
    """The same reference server run twice, then one whose tokens come 4 times slower (``--itl-ms`` 5 → 20)."""
    plan = {"users": 4, "num_prompts": 60, "max_tokens": 16}
    path = scenario(tmp_path)
    path.write_text(yaml.safe_dump({"name": "gates", "load": {"dataset": "synthetic", **plan}}))
    gate = ("--fail-if", "decode_tok_s < 0.95 x baseline")
    with reference_server(tmp_path / "server", "--ttft-ms", "5", "--itl-ms", "5") as url:
        proc, baseline = tokenswarm_run(tmp_path / "baseline", path, "--url", url)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        proc, run_dir = tokenswarm_run(tmp_path / "rerun", path, "--url", url, *gate, "--baseline", str(baseline))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    held, = json.loads((run_dir / "gates.json").read_text())["verdicts"]
    assert held["failed"] is False and held["noise"] > 0
    with reference_server(tmp_path / "slow", "--ttft-ms", "5", "--itl-ms", "20") as url:
        proc, run_dir = tokenswarm_run(tmp_path / "slower", path, "--url", url, *gate, "--baseline", str(baseline))
    assert proc.returncode == GATE_FAILED, proc.stdout[-2000:] + proc.stderr[-2000:]
    failed, = json.loads((run_dir / "gates.json").read_text())["verdicts"]
    assert failed["value"] < failed["limit"] - failed["noise"]  # beyond the noise, not by a hair
    assert "tokenswarm: gate failed: decode_tok_s < 0.95 × baseline (default: decode_tok_s = " in proc.stdout
