"""orchestrate/report/summary.py: a variant's files → ``summary.json`` (what is added when, from which file)
and the plain-language notes a reader must see beside the numbers."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from locustfiles.records import RequestRecord
from orchestrate.report.jsontypes import to_json
from orchestrate.report.schema.runfacts import Step
from orchestrate.report.schema.summary import RunFacts
from orchestrate.report.schema.sweep import Sweep
from orchestrate.report.summary import TOKEN_COUNTERS, notes
from orchestrate.report.summary import build_summary as build_typed
from orchestrate.report.summary import rebuild_summary as rebuild_typed
from orchestrate.results import VariantPaths
from orchestrate.scenario.host_limits import HostLimits

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


def base() -> dict[str, Any]:
    return {"status": "completed", "requests": {"sent": 10, "completed": 10, "unsent": 0}}


def test_a_clean_run_has_no_notes() -> None:
    assert notes(base()) == []
    assert notes({**base(), "sampling": {"token_counter": "server_tokenize"}}) == []


@pytest.mark.parametrize("counter", sorted(set(TOKEN_COUNTERS) - {"server_tokenize"}))
def test_every_inexact_token_counter_is_named(counter: str) -> None:
    note, = notes({**base(), "sampling": {"token_counter": counter}})
    assert note.startswith(f"prompt lengths: {TOKEN_COUNTERS[counter]}")
    assert note.endswith("sampling limits are approximate") == (counter != "server_tokenize_local_template")


def test_output_control_notes() -> None:
    """ignore_eos asked and every reply short: the server ignored it; some short: named apart; off: the model's
    own lengths, no note. Inexact random prompts and reasoning counted from the stream are said."""
    def with_(short: int, ignore_eos: bool, **more: Any) -> list[str]:
        return notes({**base(), "requests": {"sent": 10, "completed": 10, "unsent": 0, "short_replies": short},
                      "settings": {"load.ignore_eos": ignore_eos}, **more})
    ignored, = with_(10, True)
    assert ignored.startswith("the server ignored ignore_eos: every one of the 10 completed replies ended before")
    some, = with_(2, True)
    assert some.startswith("2 of 10 completed replies ended before their max_tokens despite ignore_eos")
    assert with_(10, False) == [] and with_(0, True) == []
    inexact, chunks = with_(0, False, sampling={"token_counter": "server_tokenize", "inexact": 3},
                            reasoning={"tokens_source": ["chunks"]})
    assert inexact.startswith("3 random prompts could not be cut to their exact length")
    assert chunks.startswith("reasoning tokens are counted one per reasoning event")


def test_sampling_notes() -> None:
    truncated, short = notes({**base(), "sampling": {"truncated": True, "complete_conversations": 12345,
                                                     "shortfall": 3, "dropped": {"too_long": 7}}})
    assert "12,345 complete conversations" in truncated
    assert short == "the dataset yielded 3 fewer prompts than asked for (dropped by rule: {'too_long': 7})"


def test_a_retry_names_the_settings_it_changed() -> None:
    summary = {**base(), "settings": {"server.flags.flash-attn": "off", "load.users": 4},
               "first_attempt": {"cause": "fattn abort", "log": "server.first-attempt.log",
                                 "settings": {"server.flags.flash-attn": "on", "load.users": 4}}}
    assert notes(summary) == ["the first attempt failed to load (fattn abort); this result is the retry with "
                              "server.flags.flash-attn=off (log: server.first-attempt.log)"]


def test_a_late_client_says_whether_to_add_workers_or_free_cores() -> None:
    lag = {"p99": 40.0, "max": 90.0, "own_p99": 5.0}
    saturated, = notes({**base(), "client": {"saturated": True, "host_busy": False, "loop_lag_ms": lag,
                                             "cpu_pct": 99.0}})
    assert "saturated" in saturated and "add workers (--workers N)" in saturated
    busy, = notes({**base(), "client": {"saturated": False, "host_busy": True, "loop_lag_ms": lag, "cpu_pct": 10.0}})
    assert "waited for a CPU" in busy and "at most 5.0 ms its own work" in busy and "add workers" not in busy
    assert notes({**base(), "client": {"saturated": False, "host_busy": False, "loop_lag_ms": lag}}) == []


@pytest.mark.parametrize("change, expected", [
    ({"stopped_by": "ui_stop"}, "the test was stopped in the web UI"),
    ({"stopped_by": "time_cap"}, "the time cap (max_seconds) ended the run"),
    ({"requests": {"completed": 9, "no_content": 2}}, "2 of 9 completed replies carried no content"),
    ({"output_tokens_source": ["usage", "chunks"]}, "some output token counts are chunk counts"),
    ({"crosscheck_agrees": False}, "Locust's own counts differ"),
    ({"server_metrics": {"unavailable_reason": "http_404"}}, "the server gave no llama.cpp /metrics (http_404)"),
    ({"server_metrics": {"unavailable_reason": "not_llamacpp"}}, "the server gave no llama.cpp /metrics"),
    ({"server_metrics": {"within_tolerance": False}}, "the server's /metrics token counts differ"),
    ({"status": "server_lost", "requests": {"unsent": 1234}}, "the server stopped answering during the load"),
    ({"status": "crashed", "requests": {"unsent": 1234}}, "the server died during the load"),
])
def test_each_caveat_has_its_note(change: dict[str, Any], expected: str) -> None:
    out = notes({**base(), **change})
    assert len(out) == 1 and out[0].startswith(expected), out


def test_no_note_for_what_is_fine() -> None:
    fine = {**base(), "stopped_by": "num_prompts", "crosscheck_agrees": True, "output_tokens_source": ["usage"],
            "server_metrics": {"unavailable_reason": "server_died", "within_tolerance": True}}
    assert notes(fine) == []


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
