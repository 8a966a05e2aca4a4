"""orchestrate/report/summary.py: a variant's files → ``summary.json`` (what is added when, from which file; the
notes' wording is ``test_notes.py``'s), and ``run.json``, what a rebuild reads back."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from locustfiles.records import RequestRecord
from orchestrate.report.aggregates.steadystate import CLOSED_RULE, OPEN_RULE
from orchestrate.report.jsontypes import to_json
from orchestrate.report.schema.runfacts import Step
from orchestrate.report.schema.summary import RunFacts
from orchestrate.report.schema.sweep import Sweep
from orchestrate.report.summary import build_summary as build_typed
from orchestrate.report.summary import rebuild_summary as rebuild_typed
from orchestrate.results import VariantPaths
from orchestrate.scenario.host_limits import HostLimits
from orchestrate.scenario.spec import LoadSpec

T0 = 1_700_000_000.0
KEPT = tuple(f.name for f in fields(RunFacts))


def build_summary(paths: VariantPaths, scenario: str, variant: str, facts: RunFacts,
                  host_limits: HostLimits = HostLimits()) -> dict[str, Any]:
    """The summary as ``summary.json`` holds it."""
    return to_json(build_typed(paths, scenario, variant, facts, host_limits))


def rebuild_summary(paths: VariantPaths, scenario: str) -> dict[str, Any]:
    return to_json(rebuild_typed(paths, scenario))


def write_records(paths: VariantPaths, n: int, start: float = T0, step_s: float = 1.0) -> None:
    paths.records.write_text("".join(
        RequestRecord(f"r{i}", i, "w", start + i * step_s, ttft_ms=50.0, e2e_ms=200.0, output_tokens=4,
                      prompt_tokens=10).to_json() + "\n" for i in range(n)))


def test_the_summary_keeps_what_the_run_loop_knew_and_adds_the_figures(tmp_path: Path) -> None:
    """``extra`` goes in as given; the figures come from the records; summary.json and summary.md are written."""
    paths = VariantPaths.create(tmp_path, "v")
    write_records(paths, 4)
    paths.server_json.write_text(json.dumps({"status": "completed", "ready_s": 1.5}))
    summary = build_summary(paths, "s", "v", RunFacts("completed", planned_prompts=10, step=Step("users", 2)))
    assert (summary["scenario"], summary["variant"], summary["step"]) == ("s", "v", {"key": "users", "value": 2})
    assert summary["error"] is None and "ui" not in summary and "sweep" not in summary  # only what the run set
    assert summary["requests"]["sent"] == 4 and summary["requests"]["unsent"] == 6
    assert summary["server"] == {"status": "completed", "ready_s": 1.5}
    assert "server_down" not in summary and summary["workers"] is None and summary["workers_lost"] == 0
    assert json.loads(paths.summary_json.read_text())["requests"] == summary["requests"]
    assert paths.summary_md.read_text().strip()


def test_requests_a_lost_worker_took_are_not_unsent(tmp_path: Path) -> None:
    paths = VariantPaths.create(tmp_path, "v")
    write_records(paths, 4)
    paths.workers_json.write_text(json.dumps({"workers_lost": 1, "lost_in_flight": 2}))
    summary = build_summary(paths, "s", "v", RunFacts("completed", planned_prompts=10))
    assert summary["requests"]["unsent"] == 4 and summary["workers_lost"] == 1
    assert any(n.startswith("1 load-generating worker(s) went missing") and "2 request(s) in flight" in n
               for n in summary["notes"])


@pytest.mark.parametrize("status", ["crashed", "server_lost"])
def test_a_server_that_went_down_gets_its_moment(tmp_path: Path, status: str) -> None:
    paths = VariantPaths.create(tmp_path, "v")
    write_records(paths, 4)
    paths.server_json.write_text(json.dumps({"down_at": T0 + 2.5}))
    summary = build_summary(paths, "s", "v", RunFacts(status, planned_prompts=10))
    assert summary["server_down"] is not None
    assert any(n.startswith("the server") and "6 prompts not sent" in n for n in summary["notes"])


def test_a_web_ui_run_records_the_users_the_person_set(tmp_path: Path) -> None:
    """Locust's history, not the form's prefill, is the users setting of a web UI run."""
    paths = VariantPaths.create(tmp_path, "v")
    write_records(paths, 40)
    rows = ["Timestamp,User Count,Name"] + [f"{int(T0) + s},{4 if s < 20 else 16},Aggregated" for s in range(40)]
    paths.locust_history_csv.write_text("\n".join(rows) + "\n")
    paths.llm_history_csv.write_text("t,users,spawn_rate,in_flight\n0.0,4,4.0,4\n20.0,16,2.0,16\n")
    summary = build_summary(paths, "s", "v", RunFacts("completed", ui=True,
                                                      settings={"load.users": 32, "load.spawn_rate": 32.0,
                                                                "load.max_tokens": 8}))
    assert summary["users_over_time"]["max"] == 16
    assert [x["users"] for x in summary["users_over_time"]["levels"]] == [4, 16]
    assert summary["settings"] == {"load.users": 16, "load.spawn_rate": 2.0, "load.max_tokens": 8}  # the form's
    assert summary["ui_steps"] is not None and summary["ui_steps"]["values"] == [4, 16]
    assert "users_over_time" not in build_summary(paths, "s", "v", RunFacts("completed"))
    typed = build_typed(paths, "s", "v", RunFacts("completed", ui=True, settings={"load.users": 32},
                                                  load=LoadSpec(users=32, spawn_rate=32.0)))
    assert typed.load == LoadSpec(users=16, spawn_rate=2.0), "the load that ran: the person's users and spawn rate"
    assert typed.settings == {"load.users": 16, "load.spawn_rate": 2.0}
    assert json.loads(paths.vllm_bench_json.read_text())["max_concurrency"] == 16


# --- run.json: what the run knew, for `tokenswarm report` ----------------------------------------

def write_ui_run(paths: VariantPaths) -> None:
    """Records and Locust's history of a web UI run: a person held 4 users, then 16."""
    write_records(paths, 40)
    rows = ["Timestamp,User Count,Name"] + [f"{int(T0) + s},{4 if s < 20 else 16},Aggregated" for s in range(40)]
    paths.locust_history_csv.write_text("\n".join(rows) + "\n")


def test_run_json_keeps_what_the_run_knew_and_a_rebuild_keeps_the_ui(tmp_path: Path) -> None:
    """Without ``ui`` kept a rebuilt web UI run would lose its users over time and report the form's prefill."""
    paths = VariantPaths.create(tmp_path, "v")
    write_ui_run(paths)
    facts = RunFacts("completed", ui=True, settings={"load.users": 32, "load.max_tokens": 8})
    build_summary(paths, "s", "v", facts, HostLimits(steal_pct=2.5))
    run = json.loads(paths.run_json.read_text())
    assert run == {"scenario": "s", "variant": "v", "known": to_json(facts),
                   "host_limits": {"foreign_cpu_pct": HostLimits().foreign_cpu_pct, "steal_pct": 2.5}}
    rebuilt = rebuild_summary(paths, "another-name")
    assert (rebuilt["scenario"], rebuilt["variant"], rebuilt["ui"]) == ("s", "v", True)
    assert rebuilt["users_over_time"]["max"] == 16 and rebuilt["ui_steps"]["values"] == [4, 16]
    assert rebuilt["settings"] == {"load.users": 16, "load.max_tokens": 8}
    assert json.loads(paths.summary_json.read_text())["ui"] is True


def test_a_summary_from_before_run_json_keeps_its_listed_keys(tmp_path: Path) -> None:
    paths = VariantPaths.create(tmp_path, "v")
    write_ui_run(paths)
    build_summary(paths, "s", "v", RunFacts("completed", ui=True, settings={"load.users": 32}))
    paths.run_json.unlink()
    old = json.loads(paths.summary_json.read_text())
    known = {"stopped_by": "num_prompts", "planned_prompts": 40, "slo": {"ttft_ms": 2000.0},
             "repeat": {"index": 1, "of": 2, "order": 3}, "machine": {"hostname": "x", "cpu_count": 2, "platform": "p"},
             "factors": {"drafter": {"value": "none", "covers": ["server.draft_model"]}},
             "retried": True}
    paths.summary_json.write_text(json.dumps({**old, **known, "scenario": "old-name", "not_kept": 1}))
    rebuilt = rebuild_summary(paths, "dir-name")
    assert set(known) < set(KEPT) and {"ui", "settings", "status"} < set(KEPT)
    assert {k: rebuilt[k] for k in known} == known
    assert (rebuilt["scenario"], rebuilt["ui"], rebuilt["status"]) == ("old-name", True, "completed")
    assert rebuilt["settings"] == {"load.users": 16} and rebuilt["users_over_time"]["max"] == 16
    assert "not_kept" not in rebuilt
    assert rebuilt["goodput"] is not None, "the kept SLO judges goodput again"


def test_a_sweep_from_before_run_json_keeps_its_sweep_block(tmp_path: Path) -> None:
    paths = VariantPaths.create(tmp_path, "v")
    write_records(paths, 4)
    sweep = Sweep("users", (1, 4), 2, 0.5)
    build_summary(paths, "s", "v", RunFacts("completed", sweep=sweep))
    paths.run_json.unlink()
    rebuilt = rebuild_summary(paths, "s")
    assert rebuilt.get("sweep") is not None and rebuilt["sweep"]["key"] == "users"


def test_run_json_keeps_the_load_and_the_report_reads_it_not_the_settings(tmp_path: Path) -> None:
    """The load travels typed: kept in run.json (never in summary.json), read back by a rebuild, and the steady
    state and vllm_bench.json follow it (an open loop here, where the settings alone would say closed)."""
    paths = VariantPaths.create(tmp_path, "v")
    write_records(paths, 4)
    load = LoadSpec(users=2, rate=4.0, arrival="constant")
    build_summary(paths, "s", "v", RunFacts("completed", settings={"load.users": 2}, load=load))
    assert json.loads(paths.run_json.read_text())["known"]["load"]["rate"] == 4.0
    assert "load" not in json.loads(paths.summary_json.read_text())
    rebuilt = rebuild_typed(paths, "s")
    assert rebuilt.load == load and rebuilt.steady_state is not None and rebuilt.steady_state.rule == OPEN_RULE
    bench = json.loads(paths.vllm_bench_json.read_text())
    assert (bench["request_rate"], bench["burstiness"], bench["max_concurrency"]) == (4.0, "inf", 2)
    old = json.loads(paths.run_json.read_text())
    del old["known"]["load"]  # a run.json from before the load: read back from the settings
    paths.run_json.write_text(json.dumps(old))
    rebuilt = rebuild_typed(paths, "s")
    assert rebuilt.load == LoadSpec(users=2) and rebuilt.steady_state is not None
    assert rebuilt.steady_state.rule == CLOSED_RULE


def test_save_detailed_is_kept_in_run_json_and_a_report_can_ask_for_it(tmp_path: Path) -> None:
    """vLLM's --save-detailed: the per-request lists in vllm_bench.json; a rebuild keeps what the run chose, and
    ``tokenswarm report --save-detailed`` adds them to a run made without."""
    paths = VariantPaths.create(tmp_path, "v")
    write_records(paths, 4)
    build_summary(paths, "s", "v", RunFacts("completed"))
    assert "itls" not in json.loads(paths.vllm_bench_json.read_text())
    assert "save_detailed" not in json.loads(paths.run_json.read_text())["known"]
    rebuild_typed(paths, "s", detailed=True)
    assert len(json.loads(paths.vllm_bench_json.read_text())["itls"]) == 4
    assert json.loads(paths.run_json.read_text())["known"]["save_detailed"] is True
    assert "save_detailed" not in json.loads(paths.summary_json.read_text())
    rebuild_summary(paths, "s")
    assert len(json.loads(paths.vllm_bench_json.read_text())["itls"]) == 4
