"""A sweep against the real embedded server: one server start per variant, a warm-up left out of
every figure, a folder per step, and the drafter's speedup step by step in the comparison."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import assert_report_rebuilds_every_key, read_jsonl, tokenswarm_run, write_scenario

pytestmark = pytest.mark.integration


def test_users_sweep_with_and_without_a_drafter(tmp_path, tiny_model, tiny_draft_model):
    scenario = write_scenario(
        tmp_path, load={"users": [1, 3], "num_prompts": 6, "max_tokens": 12, "warmup_prompts": 3,
                        "settle_s": 0.2},
        variants=[{"name": "base"}, {"name": "drafter", "server": {"draft_model": "tiny-draft"}}])
    # the effect step by step is judged here, not the host: a few seconds of the machine's own work
    # (the test runner) would confound variants this short, so the limit is set out of the way
    proc, run = tokenswarm_run(tmp_path, scenario, "--foreign-cpu-limit", "100", "--steal-limit", "100")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("base", "drafter"):
        variant = run / name
        summary = json.loads((variant / "summary.json").read_text())
        assert summary["status"] == "completed", summary.get("error")
        steps = summary["sweep"]["steps"]
        assert [(s["value"], s["status"], s["completed"]) for s in steps] == [(1, "completed", 6), (3, "completed", 6)]
        assert len(read_jsonl(variant / "steps" / "warmup" / "requests.jsonl")) == 3
        records = read_jsonl(variant / "requests.jsonl")
        assert len(records) == 12 and summary["requests"]["completed"] == 12  # the warm-up counts nowhere
        # one server served every step, and its own counters saw exactly the steps' tokens: the
        # warm-up ran before sampling began, and no step was served by a restarted server
        assert summary["server_metrics"]["agrees_with_records"] is True, summary["server_metrics"]
        assert (variant / "server.log").read_text().count("tokenswarm: embedded server listening on") == 1
        for value in (1, 3):
            step = json.loads((variant / "steps" / f"users-{value}" / "summary.json").read_text())
            assert step["settings"]["load.users"] == value and step["step"] == {"key": "users", "value": value}
            assert len(read_jsonl(variant / "steps" / f"users-{value}" / "prompts.jsonl")) == 6
        assert "## Sweep over `users`" in (variant / "summary.md").read_text()
        assert (variant / "sweep.png").stat().st_size > 10_000
        prompts = {json.dumps(r["messages"]) for s in ("warmup", "users-1", "users-3")
                   for r in read_jsonl(variant / "steps" / s / "prompts.jsonl")}
        assert len(prompts) == 15  # no step replays another's prompts
    compare = json.loads((run / "compare.json").read_text())
    (effect,) = compare["effects"]
    assert effect["factor"] == "server.draft_model" and effect["confounded_by"] == []
    assert [s["value"] for s in effect["sweep"]["steps"]] == [1, 3]
    assert all(s["speedup"] is not None and s["speedup"] > 0 for s in effect["sweep"]["steps"])
    text = (run / "compare.md").read_text()
    assert "step by step" in text and "users" in text
    assert (run / "compare_sweep.png").stat().st_size > 10_000
    # `tokenswarm report` rebuilds the steps, then the sweep block from them: nothing of the sweep is lost
    rebuilt_summaries = assert_report_rebuilds_every_key(run, tmp_path / "rebuilt")
    assert Path("base/steps/users-3/summary.json") in rebuilt_summaries
    before = {name: json.loads((run / name / "summary.json").read_text()) for name in ("base", "drafter")}
    step = run / "base" / "steps" / "users-3" / "summary.json"
    stale = json.loads(step.read_text())
    step.write_text(json.dumps({**stale, "completed_prompts": [], "latency_ms": None}))  # a step summary gone stale
    report = subprocess.run([sys.executable, "-m", "orchestrate.cli", "report", str(run)], capture_output=True,
                            text=True, timeout=120)
    assert report.returncode == 0, report.stdout + report.stderr
    rebuilt = json.loads(step.read_text())
    assert rebuilt["latency_ms"] == stale["latency_ms"] and rebuilt["completed_prompts"] == stale["completed_prompts"]
    assert rebuilt["step"] == {"key": "users", "value": 3}
    for name in ("base", "drafter"):
        after = json.loads((run / name / "summary.json").read_text())
        assert after["sweep"] == before[name]["sweep"]
        assert after["requests"] == before[name]["requests"]
        assert "## Sweep over `users`" in (run / name / "summary.md").read_text()


def test_a_sweep_against_four_slots_puts_its_knee_at_four_users(tmp_path: Path) -> None:
    """The reference server with 4 slots and a queue: decode grows with the users up to 4 and is flat past them,
    where TTFT climbs (a request waits for a slot). Kneedle on the steps' decode tok/s names 4."""
    from tests.conftest import reference_server
    scenario = write_scenario(tmp_path, load={"dataset": "synthetic:3000", "max_tokens": 16, "users": [1, 2, 4, 8, 16],
                                              "num_prompts": 32, "warmup_prompts": 0, "settle_s": 0})
    with reference_server(tmp_path / "server", "--ttft-ms", "10", "--itl-ms", "5", "--slots", "4", "--queue") as url:
        proc, run_dir = tokenswarm_run(tmp_path, scenario, "--url", url, timeout_s=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((run_dir / "v" / "summary.json").read_text())
    knee = summary["sweep"]["knee"]
    assert knee["value"] == 4 and knee["figure"] == "decode_tok_s" and knee["share_of_best"] > 0.9
    assert knee["ttft_p50_after"] > 1.5  # past the slots, a request waits
    assert "The knee: `users` 4, where throughput stops growing with the load" in (run_dir / "v" / "summary.md").read_text()
