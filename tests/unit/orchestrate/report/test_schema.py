"""orchestrate/report/schema: the typed ``summary.json`` declares every key today's files hold, reads them and
writes them back; where a key is present-with-null in one shape and absent in another (one field cannot be
both), the test names each such difference.

Today's files: every ``summary.json`` of ``tests/fixtures/runs-be12832``; the blocks they lack are made here
with the current code (``build_summary`` on hand-made result folders, the aggregates, the launchers).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
from dataclasses import asdict, fields, is_dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from locustfiles.dataset import DROP_RULES, SampleResult
from locustfiles.records import CANCELLED, ERROR, OK, RequestRecord
from orchestrate.load.host_probe import machine
from orchestrate.load.prompts import PreparedPrompts
from orchestrate.report import jsontypes, schema
from orchestrate.report.aggregates.capacity import judge
from orchestrate.report.aggregates.client import locust_crosscheck
from orchestrate.report.aggregates.energy import energy
from orchestrate.report.aggregates.steadystate import closed_loop, open_loop
from orchestrate.report.aggregates.sweep import sweep_block
from orchestrate.report.formats import summary_numbers
from orchestrate.report.jsontypes import from_json, to_json, undeclared
from orchestrate.report.schema import Summary
from orchestrate.report.schema.capacity import Verdict
from orchestrate.report.schema.headline import Tokens
from orchestrate.report.schema.machine import Energy, LocustCrosscheck
from orchestrate.report.schema.server import Server
from orchestrate.report.schema.steady import SteadyState
from orchestrate.report.schema.summary import RunFacts
from orchestrate.report.schema.sweep import Sweep, SweepStep
from orchestrate.report.summary import build_summary
from orchestrate.results import VariantPaths
from orchestrate.scenario.spec import Search, ServerSpec
from orchestrate.scenario.spec import Sweep as SweepSpec
from orchestrate.server.launchers.docker import DockerLauncher
from orchestrate.server.launchers.embedded import EmbeddedConfig, EmbeddedLauncher
from orchestrate.server.launchers.external import ExternalLauncher
from orchestrate.server.launchers.process import ProcessLauncher
from orchestrate.server.preflight import model_file
from tests.helpers import ROOT

KEPT = ROOT / "tests" / "fixtures" / "runs-be12832"
T0 = 1_700_000_000.0


def differences(before: Any, after: Any, at: str = "") -> list[str]:
    """What writing back changed: ``-path`` a key the file had and the rewrite lacks, ``+path`` one it adds,
    ``~path`` a value that differs."""
    if isinstance(before, dict) and isinstance(after, dict):
        dot = f"{at}." if at else ""
        return sorted([f"-{dot}{k}" for k in before if k not in after]
                      + [f"+{dot}{k}" for k in after if k not in before]
                      + [d for k in before if k in after for d in differences(before[k], after[k], f"{dot}{k}")])
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [d for i, (x, y) in enumerate(zip(before, after)) for d in differences(x, y, f"{at}[{i}]")]
    return [] if before == after else [f"~{at}"]


def round_trip(tp: type, data: dict[str, Any], partial: bool = False) -> list[str]:
    """Read ``data`` as ``tp`` and write it back: the differences. ``partial``: ``data`` is some keys of a
    ``tp`` (the others are left out of the comparison). Without differences the JSON text is the same too: the
    keys in the same order, an int still an int."""
    assert undeclared(tp, data) == []
    written = to_json(from_json(tp, data))
    if partial:
        written = {k: v for k, v in written.items() if k in data}
    found = differences(data, written)
    assert found or json.dumps(written) == json.dumps(data)
    return found


def null_server_keys(data: dict[str, Any]) -> list[str]:
    """``server.json`` has its empty keys null (``exit_code`` of a server still running, ``cause`` of one that did
    not fail); the summary's ``server`` block leaves them out (a step's or probe's is ``{}``: its folder has no
    ``server.json``), so a rewrite drops them."""
    return [f"-server.{k}" for k, v in data["server"].items() if v is None]


NO_WINDOW_NULL = ["-steady_state.prompts_needed"]
"""Without a window, ``prompts_needed`` is there even when null; with one it is absent: it is ``omitted``,
so a null one is dropped."""
@pytest.mark.parametrize("path", sorted(KEPT.rglob("summary.json")), ids=lambda p: str(p.relative_to(KEPT)))
def test_every_summary_the_fixture_holds_is_declared_and_written_back(path: Path) -> None:
    data = json.loads(path.read_text())
    expected = null_server_keys(data) + (
        NO_WINDOW_NULL if not data["steady_state"]["found"] and data["steady_state"]["prompts_needed"] is None else [])
    assert round_trip(Summary, data) == sorted(expected)


# --- whole summaries the fixture has no example of, from build_summary ----------------------------------------

def rec(i: int, send: float, status: str = OK, **extra: Any) -> RequestRecord:
    """A request: a completed one of 5 tokens in 5 chunks, 500 ms; ``extra`` changes any field."""
    base: dict[str, Any] = {"request_id": f"r{i}", "prompt_index": i, "worker": "local", "send_ts": send,
                            "status": status, "connect_ms": 1.0, "max_tokens": 8,
                            "expected_prompt_tokens": 20}
    if status == OK:
        base.update(ttft_ms=100.0, ttfo_ms=100.0, e2e_ms=500.0, tpot_ms=100.0, n_chunks=5, tokens_per_chunk=1.0,
                    chunk_offsets_ms=[100.0, 200.0, 300.0, 400.0, 500.0], prompt_tokens=20, cached_tokens=4,
                    cached_tokens_source="usage", prefill_tokens=16, output_tokens=5, output_tokens_source="usage",
                    prompt_ms=2.0, predicted_ms=40.0)
    return RequestRecord(**{**base, **extra})


def write(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, default=str) + "\n")


def facts_of(status: str | None = None, **known: Any) -> RunFacts:
    """The run loop's facts, given as ``run.json`` holds them."""
    return from_json(RunFacts, {"status": status, **known})


def summary_of(paths: VariantPaths, facts: RunFacts) -> dict[str, Any]:
    build_summary(paths, "s", paths.dir.name, facts)
    return json.loads(paths.summary_json.read_text())


def test_a_failed_load_retried_with_other_settings(tmp_path: Path) -> None:
    paths = VariantPaths.create(tmp_path, "failed")
    launcher = ProcessLauncher(ServerSpec(launcher="process", binary="/bin/true", port=8123), "/m/a.gguf", None,
                               paths.server_log)
    write(paths.server_json, {"status": "failed_to_load", "facts": None, "ready_s": None, "exit_code": 1,
                              "cause": "out of memory", "hint": "fewer slots", "down_at": None,
                              "launcher": launcher.describe(), "log_tail": ["loading", "out of memory"]})
    data = summary_of(paths, facts_of(
        status="failed_to_load", error="the server exited while loading", retried=True, machine=machine(),
        model=model_file(None, str(tmp_path / "missing.gguf")), settings={"load.users": 4, "search.range": [1, 8]},
        factors={"drafter": {"value": "none", "covers": ["server.draft_model"]}}, slo={"e2e_ms": 900.0},
        first_attempt={"status": "failed_to_load", "cause": "oom", "hint": None, "exit_code": 1,
                       "settings": {"load.users": 8, "search.range": [1, 8]}, "log": "server.first-attempt.log"}))
    assert data["model"] == {} and data["first_attempt"]["settings"]["load.users"] == 8
    # a process that exited has no pid (null): ``pid`` is ``omitted``, as docker and external lack it
    assert round_trip(Summary, data) == []  # build_summary writes the typed Summary: nothing to lose


def ledger_and_gate() -> dict[str, Any]:
    """``workers.json`` as the master writes it: one worker lost with a request in flight, one refused."""
    script = ("import json\nfrom locustfiles.distributed import WorkerLedger\nfrom locustfiles.admission import Gate\n"
              "ledger, gate = WorkerLedger(), Gate('token')\nledger.hand('w1', [0, 1]); ledger.hand('w2', [2])\n"
              "ledger.returned_record('w1', 0); ledger.returned_record('w2', 2); ledger.lose('w1')\n"
              "gate.reject('w3', 'wrong token'); gate.drop('w3', 'stats')\n"
              "print(json.dumps({**ledger.to_json(), **gate.to_json()}))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def sample(t: float, watts: float | None, counters: float) -> dict[str, Any]:
    """A ``metrics.jsonl`` line: memory, GPU memory, ``/metrics`` counters, the host's load, power."""
    return {"t": t, "elapsed_s": t - T0 + 1, "server_memory_bytes": 1 << 30, "server_memory_source": "container",
            "gpu_memory_used_bytes": 2 << 30, "gpu_memory_total_bytes": 8 << 30, "gpu_memory_source": "nvidia-smi",
            "metrics": {"prompt_tokens_total": 16 * counters, "tokens_predicted_total": 5 * counters,
                        "prompt_seconds_total": 0.1 * counters, "tokens_predicted_seconds_total": 0.2 * counters,
                        "requests_processing": 1.0},
            "metrics_error": None, "host": {"foreign_cpu_pct": 1.0, "steal_pct": 0.0, "server_cpu_pct": 90.0,
                                            "own_cpu_pct": 20.0, "server_processes": "port",
                                            "foreign_gpu_processes": ["4242 python"]},
            "power_watts": watts, "energy_joules": None, "power_source": "nvidia-smi" if watts else None,
            "power_error": None, "power_devices": "GPUs 0,1"}


def test_a_distributed_ramp_whose_server_crashed(tmp_path: Path) -> None:
    """Stages, workers (one lost, one refused), power readings, the host's GPU neighbours, reasoning and a
    drafter, errors by class, the server down: every block the fixture lacks that a crash can have."""
    paths = VariantPaths.create(tmp_path, "ramp")
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    records = [rec(i, T0 + 0.5 * i, reasoning_tokens=2, reasoning_tokens_source="usage", answer_tpot_ms=50.0,
                   draft_tokens=4, draft_accepted=3) for i in range(6)]
    records += [rec(6, T0 + 3.0, ERROR, error_class="connection_reset", e2e_ms=2.0),
                rec(7, T0 + 3.5, ERROR, error_class="stream_cut", e2e_ms=300.0, chunk_offsets_ms=[100.0], n_chunks=1),
                rec(8, T0 + 3.6, CANCELLED, error_class="cancelled", ttft_ms=100.0, chunk_offsets_ms=[100.0])]
    paths.records.write_text("".join(r.to_json() + "\n" for r in records))
    write(paths.stages_json, {"stages": [{"duration_s": 2.0, "users": 1, "spawn_rate": 1.0},
                                         {"duration_s": 2.0, "users": 3, "spawn_rate": None},
                                         {"duration_s": 2.0, "users": 2, "spawn_rate": 2.0}],
                              "start_ts": T0, "stage_starts": [T0, T0 + 2.0], "end_ts": T0 + 4.2, "ended_by": "stop"})
    write(paths.workers_json, ledger_and_gate())
    write(paths.client_json, [{"worker": w, "duration_s": 4.0, "cpu_pct": cpu, "loop_lag_ms": {
        "p50": 0.1, "p99": lag, "max": 2 * lag, "samples": 400, "own_p99": 0.2}} for w, cpu, lag in
        (("w1", 40.0, 7.0), ("w2", None, 1.0))])
    paths.metrics.write_text("".join(json.dumps(sample(T0 + t, 100.0 + t, t + 1)) + "\n" for t in range(-1, 6)))
    docker = DockerLauncher(ServerSpec(launcher="docker", image="llama:cuda", docker={"gpus": [0, 1]}), str(model),
                            None, paths.server_log)
    docker.url = "http://127.0.0.1:8080"  # started: a container made, a leftover of a gone run removed
    docker.container = SimpleNamespace(id="c0ffee")
    docker.leftovers_removed = ["tokenswarm-old-123456"]
    write(paths.server_json, {"status": "crashed", "facts": None, "ready_s": 2.0, "exit_code": 139,
                              "cause": "segfault", "hint": None, "down_at": T0 + 3.7, "launcher": docker.describe(),
                              "log_tail": ["GGML_ASSERT"]})
    prepared = PreparedPrompts(SampleResult([], dict.fromkeys(DROP_RULES, 1), 30, "estimate_chars_div_4", 20),
                               Path("/data/random.json"), "estimate_chars_div_4", conversations=100, inexact=3)
    data = summary_of(paths, facts_of(
        status="crashed", error="the server died", stopped_by="server_lost", planned_prompts=20,
        sampling=prepared.sampling_block(), settings={"load.stages": [{"users": 1, "duration_s": 2.0}]},
        factors={}, repeat={"index": 2, "of": 3, "order": 5}, warmup={"prompts": 2, "records": "steps/warmup"},
        machine=machine(), model=model_file(None, str(model)),
        resumed={"set_aside": "partial/ramp-1", "kept_steps": []}))
    for key in ("stages", "server_down", "reasoning", "speculative", "workers", "host", "client"):
        assert data[key], key
    assert data["energy"]["joules"] is not None and data["sampling"]["inexact"] == 3
    assert data["workers"]["rejected_workers"] and data["requests"]["errors_by_class"]
    assert data["server_metrics"]["vs_records"] and data["stages"][2]["reached"] is False
    # no steady window in a ramp: ``energy.steady_state`` is null here and absent without readings
    assert round_trip(Summary, data) == []


def test_a_web_ui_run(tmp_path: Path) -> None:
    """``users_over_time.levels[].from`` cannot be a field's name (a Python keyword): it is the one key
    today's files hold that the schema does not declare, and a rewrite drops it."""
    paths = VariantPaths.create(tmp_path, "ui")
    paths.records.write_text("".join(rec(i, T0 + i, target_users=4 if i < 20 else 16).to_json() + "\n"
                                     for i in range(40)))
    rows = ["Timestamp,User Count,Name"] + [f"{int(T0) + s},{4 if s < 20 else 16},Aggregated" for s in range(41)]
    paths.locust_history_csv.write_text("\n".join(rows) + "\n")
    paths.llm_history_csv.write_text("t,users,spawn_rate,in_flight\n0.0,4,4.0,4\n20.0,16,2.0,16\n")
    write(paths.server_json, {"status": "completed", "facts": None, "ready_s": None, "exit_code": None,
                              "cause": None, "hint": None, "down_at": None,
                              "launcher": ExternalLauncher("http://127.0.0.1:8080", paths.server_log).describe()})
    data = summary_of(paths, facts_of("completed", stopped_by="ui_stop", ui=True, factors={},
                                      settings={"load.users": 32, "load.spawn_rate": 32.0}))
    assert data["ui"] is True and data["ui_steps"]["placed_by"] == "send" and len(data["ui_steps"]["steps"]) == 2
    assert undeclared(Summary, data) == []
    written = to_json(from_json(Summary, data))
    assert differences(data, written) == []  # ``from`` (a Python keyword) kept by its alias


# --- blocks the fixture has one shape of --------------------------------------------------------------------

def steady(records: list[RequestRecord]) -> pd.DataFrame:
    return pd.DataFrame([asdict(r) for r in records])


def test_the_steady_state_of_an_open_loop_that_fell_behind_and_of_a_run_without_an_slo() -> None:
    """``kept_up: false`` is written (False is not its default, None); a window's ``goodput: null`` is
    ``omitted`` (absent from the file); every other key of each shape is written and reads back."""
    sends = [T0 + 0.1 * i for i in range(30)] + [T0 + 10.0 + i for i in range(5)]  # the last five fell behind
    behind = open_loop(steady([rec(i, t) for i, t in enumerate(sends)]), [T0 + 0.1 * i for i in range(35)],
                       {"ttft_ms": 200.0})
    assert behind.found and behind.kept_up is False
    assert round_trip(SteadyState, to_json(behind)) == [] and to_json(behind)["kept_up"] is False
    no_slo = closed_loop(steady([rec(i, T0 + 0.5 * (i // 2)) for i in range(12)]), 2, None)
    assert no_slo.found and no_slo.goodput is None and no_slo.in_flight
    assert round_trip(SteadyState, to_json(no_slo)) == [] and "goodput" not in to_json(no_slo)
    short = closed_loop(steady([rec(0, T0), rec(1, T0 + 0.1)]), 2, None)
    assert not short.found and isinstance(short.prompts_needed, int)
    assert round_trip(SteadyState, to_json(short)) == []


def test_energy_over_the_whole_run_and_the_steady_window() -> None:
    readings = pd.DataFrame([{"t": T0 - 1.0 + i, "power_watts": 200.0, "power_source": "nvidia-smi",
                              "power_devices": "every GPU"} for i in range(13)])
    steady_window = SteadyState(found=True, start_s=2.0, end_s=6.0, decode_tok_s=100.0)
    block = energy(readings, T0, T0 + 10.0, Tokens(prompt=4000, output=1000), steady_window)
    assert block.steady_state is not None and block.steady_state.joules and block.devices == "every GPU"
    assert round_trip(Energy, to_json(block)) == []


def test_probe_verdicts_of_a_probe_that_never_ran_and_of_one_stopped_early() -> None:
    search = Search("rate", 1.0, 8.0)
    missed = {"ttft_ms": 3, "e2e_ms": 1, "error": 0, "cancelled": 2}
    summaries: list[dict[str, Any]] = [{"status": "not_run"}, {"status": "completed", "stopped_by": "cannot_pass",
                                                               "steady_state": {"found": False},
                                                               "goodput": {"missed_by": missed}}]
    for summary in summaries:
        verdict = judge(from_json(Summary, summary), search)
        assert round_trip(Verdict, to_json(verdict)) == []


def test_each_launcher_kind_in_server_json(tmp_path: Path) -> None:
    """A launcher's keys are ``omitted`` unless its kind has them, so a null or empty one of its own kind
    (a docker container never created nor started, no leftovers) is dropped by a rewrite."""
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    embedded = EmbeddedLauncher(EmbeddedConfig(str(model), api_keys=("k",), alias="tiny"), tmp_path / "e.log")
    embedded.process = SimpleNamespace(pid=4242)  # type: ignore[assignment]
    docker = DockerLauncher(ServerSpec(launcher="docker", image="llama:cuda", docker={
        "gpus": "all", "entrypoint": ["/app/llama-server"], "user": "1000:1000", "env": {"A": 1},
        "volumes": ["/data:/data:ro"]}), str(model), None, tmp_path / "d.log")
    cases = [(embedded.describe(), []), (ExternalLauncher("http://127.0.0.1:8080", tmp_path / "x.log").describe(), []),
             (docker.describe(), ["-launcher.container_id", "-launcher.leftovers_removed", "-launcher.url"])]
    for launcher, expected in cases:
        server = json.loads(json.dumps({"status": "completed", "facts": None, "ready_s": 1.0, "exit_code": None,
                                        "cause": None, "hint": None, "down_at": None, "launcher": launcher},
                                       default=str))  # as finish_variant writes server.json
        nulls = ["-cause", "-down_at", "-exit_code", "-facts", "-hint"]  # the summary's block leaves them out
        assert round_trip(Server, server) == sorted(nulls + expected), launcher["kind"]


def test_locust_crosscheck_without_a_chat_row_has_no_csv_key(tmp_path: Path) -> None:
    (tmp_path / "stats.json").write_text("[]")
    block = locust_crosscheck(tmp_path / "stats.json", tmp_path / "stats.csv")
    assert block is not None and block.csv is None and to_json(block)["csv"] is None  # null, not absent
    assert round_trip(LocustCrosscheck, to_json(block)) == []


def test_sweep_rows_with_capacity_and_steady_energy_figures_and_one_not_run(tmp_path: Path) -> None:
    """A ``not_run`` row has only value, label and status; the figures every run row has (null or not) are not
    ``omitted``, so a rewrite gives it them, null."""
    search = json.loads((KEPT / "20261206T042347Z-kinds" / "search" / "summary.json").read_text())
    search["energy"] = {"joules_per_output_token": 2.0, "steady_state": {"output_tokens_per_joule": 0.25}}
    search["steady_state"] = {"found": True, "prefill_tok_s": 900.0, "decode_tok_s": 100.0,
                              "ttft_ms": {"p50": 1.0, "p99": 2.0}, "tpot_ms": {"p50": 0.5, "p99": 0.9}}
    row = {"value": 5.0, "label": "users-5", "status": "completed", **summary_numbers(from_json(Summary, search))}
    assert {"capacity", "capacity_slo", "steady_joules_per_output_token"} <= set(row)
    assert round_trip(SweepStep, row) == []
    paths = VariantPaths.create(tmp_path, "sweep")
    kept = KEPT / "20261206T042347Z-kinds" / "sweep" / "steps" / "users-2" / "summary.json"
    VariantPaths.create(paths.dir / "steps", "users-2").summary_json.write_text(kept.read_text())
    block = sweep_block(paths, SweepSpec("users", (2, 4), 2, 0.2))
    assert block.steps[1] == SweepStep(value=4, label="users-4", status="not_run")
    head = {"value", "label", "status"}
    figures = [f.name for f in fields(SweepStep) if f.name not in head and not f.metadata.get(jsontypes.OMIT)]
    written = to_json(block)
    not_run = written["steps"][1]
    assert {k for k, v in not_run.items() if v is not None} == head
    assert len(figures) == 18 and [k for k in not_run if k not in head] == figures
    assert round_trip(Sweep, written) == []


def test_the_run_loops_blocks_of_a_probe() -> None:
    known = to_json(facts_of("completed", stopped_by="cannot_pass", step={"key": "rate", "value": 2.5, "probe": 3},
                             ui=True))
    assert round_trip(Summary, known, partial=True) == []


# --- documentation -------------------------------------------------------------------------------------------

def schema_classes() -> list[type]:
    modules = [importlib.import_module(f"{schema.__name__}.{m.name}") for m in pkgutil.iter_modules(schema.__path__)]
    return [cls for module in modules for _, cls in inspect.getmembers(module, inspect.isclass)
            if is_dataclass(cls) and cls.__module__ == module.__name__]


def test_every_class_and_field_of_the_schema_has_its_docstring() -> None:
    classes = schema_classes()
    assert len(classes) > 50
    missing = [f"{cls.__name__}.{f.name}" for cls in classes for f in fields(cls)
               if not jsontypes.field_docs(cls).get(f.name)]
    assert missing == []
    for cls in classes:
        node = ast.parse(inspect.getsource(cls)).body[0]
        assert isinstance(node, ast.ClassDef) and ast.get_docstring(node), cls.__name__
    assert all(entry.doc for entry in jsontypes.schema(Summary))
