"""orchestrate/commands/run.py: ``run``, ``capacity`` and ``noise-floor`` through ``main``, the run stage
monkeypatched out: what they hand the run (the API key included), and the exit code of a run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import orchestrate.runloop
import orchestrate.tools.noisefloor
from orchestrate.cli import main
from orchestrate.commands.run import exit_code
from orchestrate.results import VariantPaths
from orchestrate.scenario.slo import Slo
from orchestrate.scenario.spec import Scenario, Search
from orchestrate.server.preflight import API_KEY_ENV
from tests.unit.orchestrate.commands.helpers import (
    DEMO,
    FakeRunLoop,
    one_error_line,
    three_variants,
    truncated_dataset,
)


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


def test_a_baseline_gate_needs_a_baseline_run_with_summaries(tmp_path: Path, no_run: FakeRunLoop,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    gate = ["--fail-if", "decode_tok_s < 0.95 x baseline", "--results-dir", str(tmp_path / "results")]
    assert main(["run", str(DEMO), *gate]) == 2
    assert one_error_line(capsys) == ("tokenswarm: error: fail_if: 'decode_tok_s < 0.95 × baseline' compares with a "
                                      "baseline run: give --baseline RUN")
    assert main(["run", str(DEMO), *gate, "--baseline", str(tmp_path)]) == 2
    assert one_error_line(capsys) == (f"tokenswarm: error: --baseline: {tmp_path} is not a run folder with a "
                                      "summary.json (a run's folder under results/)")
    assert not no_run.scenarios  # both before anything ran


# --- --api-key-file: read with the rest, then handed to pre-flight and Locust's users through the environment

@pytest.mark.parametrize("command", [["run"], ["capacity", "--slo", "ttft_ms=2000"]])
def test_the_api_key_file_reaches_the_environment_before_the_run(tmp_path: Path, no_run: FakeRunLoop,
                                                                  no_api_key: None, command: list[str]) -> None:
    key = tmp_path / "key"
    key.write_text("s3cret\n")
    assert main([*command, str(DEMO), "--results-dir", str(tmp_path), "--api-key-file", str(key)]) == 0
    assert no_run.api_keys == ["s3cret"] and os.environ[API_KEY_ENV] == "s3cret"
    assert "s3cret" not in repr(no_run.scenarios[0].as_run())


def test_noise_floor_hands_the_api_key_over_too(tmp_path: Path, no_api_key: None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str | None] = []

    def measure(scenario: Scenario, variant: str | None, results_root: Path, swarm: object) -> dict[str, Any]:
        seen.append(os.environ.get(API_KEY_ENV))
        return {}

    monkeypatch.setattr(orchestrate.tools.noisefloor, "measure", measure)
    monkeypatch.setattr(orchestrate.tools.noisefloor, "describe", lambda record: ["measured"])
    key = tmp_path / "key"
    key.write_text("s3cret\n")
    assert main(["noise-floor", str(DEMO), "--results-dir", str(tmp_path), "--api-key-file", str(key)]) == 0
    assert seen == ["s3cret"]


def test_an_unreadable_api_key_file_is_one_line_before_anything_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                      no_run: FakeRunLoop, no_api_key: None) -> None:
    missing = tmp_path / "missing"
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path), "--api-key-file", str(missing)]) == 2
    assert one_error_line(capsys) == f"tokenswarm: error: --api-key-file: cannot read {missing} (No such file or directory)"
    assert no_run.scenarios == [] and API_KEY_ENV not in os.environ


def test_without_the_flag_the_environment_is_left_as_it_is(tmp_path: Path, no_run: FakeRunLoop,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(API_KEY_ENV, "from-the-environment")
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path)]) == 0
    assert no_run.api_keys == ["from-the-environment"]


# --- tokenswarm capacity ----------------------------------------------------------------------------

def test_capacity_without_a_url_or_a_scenario_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capacity", "--slo", "ttft_ms=2000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tokenswarm: error: give a scenario file") and err.count("\n") == 1


def test_capacity_runs_every_variant_with_the_search_of_its_flags(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    scenarios: list[Scenario] = []

    def run_scenario(scenario: Scenario, results_root: Path, swarm: object, resume: Path | None = None,
                     detailed: bool = False) -> Path:
        """Starts nothing: one completed summary per variant."""
        scenarios.append(scenario)
        for v in scenario.variants:
            paths = VariantPaths.create(results_root / "run", v.name)
            paths.server_json.write_text("{}")
            paths.summary_json.write_text('{"status": "completed"}')
        return results_root / "run"

    monkeypatch.setattr(orchestrate.runloop, "run_scenario", run_scenario)
    assert main(["capacity", "--url", "http://127.0.0.1:9", "--slo", "ttft_ms=2000,tpot_ms=100", "--range", "2,64",
                 "--results-dir", str(tmp_path)]) == 0
    (scenario,) = scenarios
    (v,) = scenario.variants
    assert v.search == Search("users", 2, 64) and v.slo == Slo(ttft_ms=2000.0, tpot_ms=100.0)
    assert v.server.url == "http://127.0.0.1:9"


# --- tokenswarm tune --------------------------------------------------------------------------------

TUNE = """\
server: {launcher: process, model: /m/gemma.gguf}
slo: {ttft_ms: 2000}
tune: {space: {parallel: [2, 4]}}
"""


@pytest.fixture
def tunes(monkeypatch: pytest.MonkeyPatch) -> list[Scenario]:
    """``orchestrate.tune.loop.run_tune`` replaced: starts nothing, names the first candidate best."""
    import orchestrate.tune.loop
    seen: list[Scenario] = []

    def run_tune(scenario: Scenario, results_root: Path, swarm: object, resume: Path | None = None,
                 detailed: bool = False) -> Path:
        seen.append(scenario)
        run = results_root / "run"
        run.mkdir(parents=True)
        (run / "tune_summary.json").write_text(json.dumps({"best": scenario.variants[0].name}))
        return run

    monkeypatch.setattr(orchestrate.tune.loop, "run_tune", run_tune)
    return seen


@pytest.mark.parametrize("command", ["tune", "run", "capacity"])
def test_a_tune_scenario_is_tuned_by_tune_run_and_capacity(tmp_path: Path, tunes: list[Scenario], no_run: FakeRunLoop,
                                                            command: str) -> None:
    scenario = tmp_path / "tune.yaml"
    scenario.write_text(TUNE)
    args = ["--range", "2,16"] if command == "capacity" else []
    assert main([command, str(scenario), "--results-dir", str(tmp_path / "r"), *args]) == 0
    (tuned,) = tunes
    assert [v.name for v in tuned.variants] == ["parallel-2", "parallel-4"] and not no_run.scenarios
    assert tuned.variants[0].search == (Search("users", 2, 16) if command == "capacity" else Search("users", 1, 256))


@pytest.mark.parametrize(("text", "args", "expected"), [
    ("slo: {ttft_ms: 2000}\n", [], "has no tune: section"),
    (TUNE, ["--url", "http://127.0.0.1:9"], "--url: variants parallel-2 and parallel-4 differ only in server"),
    ("slo: {ttft_ms: 2000}\ntune: {space: {parallel: [2]}}\n", ["--url", "http://127.0.0.1:9"],
     "--url: a tune starts the server"),
    (TUNE, ["--fail-if", "ttft_ms.p99 > 2000"], "gates (fail_if) do not apply"),
    (TUNE, ["--until", "ttft_ms.p99=0.05"], "a capacity search runs many: drop until"),
])
def test_what_a_tune_cannot_do_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], tunes: list[Scenario],
                                           text: str, args: list[str], expected: str) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(text)
    assert main(["tune", str(scenario), "--results-dir", str(tmp_path / "r"), *args]) == 2
    assert expected in one_error_line(capsys) and not tunes
