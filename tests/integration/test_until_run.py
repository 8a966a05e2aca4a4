"""``load.until``: a run that stops once its figures are known to the precision asked, and one whose cap comes first.

Against the reference server (``serve-synthetic``), in the set-up users run (``tokenswarm run --url``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import reference_server
from tests.helpers import tokenswarm_run

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def scenario(tmp_path: Path, **load: object) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"name": "until", "load": {"dataset": "synthetic:8000", "users": 8,
                                                              "max_tokens": 4, **load}}))
    return path


def test_a_run_stops_at_the_precision_asked_and_says_when_or_why_not(tmp_path: Path) -> None:
    targets = {"decode_tok_s": 0.05, "ttft_ms.p50": 0.05}
    with reference_server(tmp_path / "server", "--ttft-ms", "20", "--jitter-ms", "10", "--itl-ms", "2") as url:
        proc, run_dir = tokenswarm_run(tmp_path / "until", scenario(tmp_path, num_prompts=5000, until=targets),
                                       "--url", url)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        summary = json.loads((run_dir / "default" / "summary.json").read_text())
        assert summary["stopped_by"] == "until" and summary["requests"]["sent"] < 5000
        until = summary["until"]
        assert until["stopped"] is True and until["checks"] >= 1
        stopping = json.loads((run_dir / "default" / "until.json").read_text())
        assert stopping["stopped"] is True
        for target in until["targets"]:  # within what was asked at the check that stopped the run, seen to hold
            assert stopping["latest"][target["figure"]] <= targets[target["figure"]] and target["held_at_s"] > 0
            # the final window runs on to the last reply, its drain included: close to the check's, not bound by it
            assert target["reached"] <= 1.5 * targets[target["figure"]]
        lead = "stopped at the precision asked" if until["held"] else "stopped when every target held at a check"
        assert f"until: {lead}" in (run_dir / "default" / "summary.md").read_text()
        # a target no 40 requests can meet: the cap ends the run, and the summary says so
        proc, run_dir = tokenswarm_run(tmp_path / "capped", scenario(tmp_path, num_prompts=40), "--url", url,
                                       "--until", "ttft_ms.p99=0.001")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = json.loads((run_dir / "default" / "summary.json").read_text())
    assert summary["stopped_by"] == "num_prompts" and summary["requests"]["sent"] == 40
    assert summary["until"]["reason"] == "the run ended (num_prompts) before every target held"
    assert summary["until"]["targets"][0]["held"] is False
    assert "until: the run ended (num_prompts) before every target held: ttft_ms.p99" in proc.stdout
