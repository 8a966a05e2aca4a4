"""The real parts: llama.cpp's own ``llama-server`` (build 11434 from PyPI's sdist, ``make llama-server``)
serving Google's Gemma 3 270M Q4_K_M, driven by ``tokenswarm run`` with the process launcher and the
real ShareGPT V3 package, as a user runs it.

One scenario of five variants is run once for the module (about 2 min on 2 cores): flash attention
on and off, a self-draft (``draft-simple`` with the same model), an n-gram drafter (``ngram-mod``, no
draft model) and ``draft-mtp`` without an MTP draft, which this build refuses at load.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
import requests
import yaml

from orchestrate.load.prometheus import read_server
from orchestrate.report.aggregates.recordscache import read_cached
from orchestrate.report.aggregates.recordsfile import read_records
from orchestrate.scenario.flags import FLAG_ALIASES, RENAMED, SHORT_NAMES, flag_args, llama_server_argv
from orchestrate.scenario.parse import load_scenario
from orchestrate.scenario.spec import ServerSpec
from orchestrate.server.llama_build import serves
from orchestrate.server.llama_recipe import cached_binary, host_cpu, recipe_for, verified_on
from tests.browser import artifacts_dir, assert_shows_the_summaries, open_report, page_figures
from tests.helpers import read_jsonl, tokenswarm_run

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

SCENARIOS = sorted((Path(__file__).resolve().parents[2] / "scenarios").glob("*.yaml"))
PROXY = str(Path(__file__).resolve().parents[1] / "fixtures" / "endpoint_filter_proxy.py")
REAL_LOAD = {"dataset": "sharegpt-v3", "allow_truncated": True, "users": 4, "num_prompts": 8, "max_tokens": 48,
             "seed": 1, "sampling": {"max_prompt_tokens": 160}}
"""Small enough for 2 CPU cores: prompts of at most 160 tokens, 48 output tokens."""


FLAG = r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9-]*)"
AMX = re.compile(r"\s(tilezero|tileloadd|tileloaddt1|tilestored|tilerelease|ldtilecfg|sttilecfg|tdp\w+)\s")
"""AMX tile instructions, as objdump writes them: what the -march=native build ran into SIGILL with."""


def test_make_llama_servers_build_is_for_this_cpu_without_amx_and_serves(tmp_path: Path) -> None:
    """The cached build (``make test`` ran ``make llama-server``): compiled for the instruction sets this
    CPU lists, never ``-march=native`` or AMX, checked by serving here, and it serves now (issue 20)."""
    cpu = host_cpu()
    binary = cached_binary()
    assert binary is not None, "make llama-server has not built for this CPU"
    recipe = json.loads((binary.parent.parent / "recipe.json").read_text())
    flags = recipe["compiler_flags"]
    assert flags and "-march=native" not in flags and not [f for f in flags if f.startswith("-mamx")], flags
    if cpu.machine == "x86_64":
        assert ("-mavx512f" in flags) == ("avx512f" in cpu.flags) and ("-mavx2" in flags) == ("avx2" in cpu.flags)
    assert cpu.fingerprint in verified_on(recipe_for(cpu))
    code = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary.parent / "libggml-cpu.so")],
                          capture_output=True, text=True, timeout=120).stdout
    assert len(code) > 100_000 and AMX.search(code) is None
    assert serves(binary, tmp_path / "check.log") is None


def help_flags(binary: Path) -> tuple[set[str], str]:
    """Every ``-x``/``--name`` this build's ``--help`` lists, less those it says were removed (it
    refuses them at start), and the help text."""
    text = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60).stdout
    removed = {flag for line in text.splitlines() if "the argument has been removed" in line
               for flag in re.findall(FLAG, line.split("  ")[0])}
    assert "--draft-max" in removed  # this build's own words, seen
    return set(re.findall(FLAG, text)) - removed, text


def test_every_flag_tokenswarm_can_emit_is_accepted_by_this_build(llama_server_binary: Path) -> None:
    known, text = help_flags(llama_server_binary)
    assert len(known) > 100, text[:500]
    emitted = {a for a in llama_server_argv(ServerSpec(), "m.gguf", "d.gguf", "h", 1) if a.startswith("-")}
    emitted |= {flag_args({f: "x"})[0] for f in [*FLAG_ALIASES, *FLAG_ALIASES.values(), *SHORT_NAMES, *RENAMED]}
    spec_types: set[str] = set()
    for path in SCENARIOS:
        for variant in load_scenario(path).variants:
            for spec in (variant.server, variant.with_retry().server):
                emitted |= {a for a in llama_server_argv(spec, "m", None, "h", 1) if a.startswith("-")}
                if "spec-type" in spec.flags:
                    spec_types.add(str(spec.flags["spec-type"]))
    assert not sorted(emitted - known), "flags this build does not know"
    listed = re.search(r"--spec-type \[?([a-z0-9|,-]+)", text)
    assert listed, "no --spec-type in --help"
    assert spec_types <= set(re.split(r"[|,]", listed.group(1))), spec_types


def write_real_scenario(tmp_path: Path, binary: Path, variants: list[dict[str, Any]],
                        load: dict[str, Any] | None = None) -> Path:
    scenario = {"name": "real", "server": {"launcher": "process", "binary": str(binary), "model": "gemma-3-270m",
                                           "flags": {"parallel": 4, "ctx-size": 8192, "threads": 2},
                                           "ready_timeout_s": 120},
                "load": {**REAL_LOAD, **(load or {})}, "variants": variants}
    path = tmp_path / "real.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def real_run(llama_server_binary: Path, gemma_model: Path,
             tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    tmp_path = tmp_path_factory.mktemp("real-run")
    scenario = write_real_scenario(tmp_path, llama_server_binary, [
        {"name": "fa-on", "server": {"flags": {"flash-attn": "on"}}, "load": {"warmup_prompts": 2}},
        {"name": "fa-off", "server": {"flags": {"flash-attn": "off"}}},
        {"name": "self-draft", "server": {"draft_model": "gemma-3-270m",
                                          "flags": {"spec-type": "draft-simple", "spec-draft-n-max": 4}}},
        {"name": "mtp-missing", "server": {"flags": {"spec-type": "draft-mtp"}}},
        {"name": "ngram", "server": {"flags": {"spec-type": "ngram-mod"}}},
    ])
    return tokenswarm_run(tmp_path, scenario, timeout_s=900)


def summary_of(run: Path, variant: str) -> dict[str, Any]:
    return json.loads((run / variant / "summary.json").read_text())


@pytest.mark.parametrize("variant", ["fa-on", "fa-off"])
def test_flash_attention_on_and_off_load_and_every_count_agrees(real_run, variant: str) -> None:
    proc, run = real_run
    summary = summary_of(run, variant)
    assert summary["status"] == "completed", proc.stdout + proc.stderr
    assert summary["requests"]["completed"] == REAL_LOAD["num_prompts"]
    facts = summary["server"]["facts"]
    assert facts["total_slots"] == 4 and facts["per_slot_ctx"] == 2048
    assert facts["model_path"].endswith("gemma-3-270m-q4_k_m.gguf") and facts["has_tokenize"]
    # the server's /metrics counters equal the records, and so do Locust's JSON and CSV
    server = summary["server_metrics"]
    assert server["available"] and server["agrees_with_records"] is True, server
    assert summary["crosscheck_agrees"] is True, summary["locust_crosscheck"]
    assert summary["locust_crosscheck"]["csv"]["requests"] == REAL_LOAD["num_prompts"]
    records = read_jsonl(run / variant / "requests.jsonl")
    # exact prompt tokens: the real /apply-template + /tokenize count what the server then counted
    assert summary["sampling"]["token_counter"] == "server_tokenize"
    assert [r["prompt_tokens"] for r in records] == [r["expected_prompt_tokens"] for r in records]
    assert all(r["prompt_ms"] is not None and r["predicted_ms"] is not None for r in records)  # real timings
    # the server's own speeds, named apart from the throughput: llama.cpp's per-slot timings, and /metrics
    ok = [r for r in records if r["status"] == "ok"]
    timings = summary["server_timings"]
    assert timings["per_slot_decode_tok_s"] == pytest.approx(
        1000 * sum(r["output_tokens"] for r in ok) / sum(r["predicted_ms"] for r in ok))
    assert timings["per_slot_prefill_tok_s"] == pytest.approx(
        1000 * sum(r["prefill_tokens"] for r in ok) / sum(r["prompt_ms"] for r in ok))
    assert server["busy_decode_tok_s"] > 0 and server["busy_prefill_tok_s"] > 0, server
    # replies that are only EOS (about 2 % with this model) are counted apart, and agree with Locust's rows
    no_content = sum(r["ttft_ms"] is None for r in records)
    assert summary["requests"]["no_content"] == no_content == summary["locust_crosscheck"]["no_content"]
    flag = summary["server"]["launcher"]["argv"]
    assert flag[flag.index("--flash-attn") + 1] == variant.removeprefix("fa-")
    if variant == "fa-on":  # its warm-up went to the same server first, and counts nowhere (the counters agree)
        assert summary["warmup"]["prompts"] == 2
        warmup = read_jsonl(run / variant / "steps" / "warmup" / "requests.jsonl")
        assert len(warmup) == 2 and all(r["status"] == "ok" for r in warmup)
    # the real server's CPU is told apart from the host's other load
    host = summary["host"]
    assert host["server_processes"] == "launcher" and host["server_cpu_pct"]["max"] > 50, host
    assert summary["completed_prompts"] == list(range(REAL_LOAD["num_prompts"]))
    # this build closes the connection after each streamed reply: every request opens one, timed apart
    # (connect_ms), before its clock started; none of it is an error
    conn = summary["connections"]
    assert conn["opened"] == sum(r["connect_ms"] is not None for r in records) >= REAL_LOAD["users"], conn
    assert conn["reconnects"] == sum(r["reconnect"] for r in records) and conn["refused_retries"] == 0


def test_flash_attentions_effect_is_read_over_the_same_prompts(real_run) -> None:
    _, run = real_run
    compared = json.loads((run / "compare.json").read_text())
    (fa,) = [p for p in compared["effects"] if set(p["pair"]) == {"fa-on", "fa-off"}]
    assert fa["factor"] == "server.flags.flash-attn"
    assert fa["n_common_prompts"] == REAL_LOAD["num_prompts"] and "prompt_set" not in fa["confounded_by"]
    # clean unless the host was busy meanwhile, and then it says so
    assert fa["confounded_by"] in ([], ["host_load"])


@pytest.mark.parametrize("variant", ["self-draft", "ngram"])
def test_drafters_report_acceptance_from_the_real_timings(real_run, variant: str) -> None:
    proc, run = real_run
    summary = summary_of(run, variant)
    assert summary["status"] == "completed", proc.stdout + proc.stderr
    spec = summary["speculative"]
    records = read_jsonl(run / variant / "requests.jsonl")
    counters = summary["server_metrics"]["counters"]
    if variant == "ngram" and not (spec and spec["draft_tokens"]):
        # the n-gram drafter drafts only from repeats in the context: 8 short unseeded replies may have
        # none; then the records and the server's own counter must both say nothing was drafted
        assert not any(r["draft_tokens"] for r in records) and not counters.get("draft_tokens"), counters
        return
    assert spec is not None and spec["draft_tokens"] > 0, spec
    assert 0 <= spec["accepted_tokens"] <= spec["draft_tokens"]
    assert sum(r["draft_tokens"] or 0 for r in records) == spec["draft_tokens"]
    assert counters["draft_tokens"] >= spec["draft_tokens"]  # /metrics counts drafts in flight too


def test_the_real_runs_report_opens_offline_and_shows_every_variants_figures(real_run) -> None:
    _, run = real_run
    page = open_report(run / "report.html", artifacts_dir() / "report-real.png")
    assert page.network == [] and page.errors == []
    assert page.sections[:2] == ["glance", "comparison"] and {"latency", "timelines", "definitions"} <= set(page.sections)
    assert page.charts and all(layers > 0 for layers in page.charts.values()), page.charts
    assert_shows_the_summaries(page, run)
    status = {c["run"]: c["text"] for c in page.cells if c["metric"] == "status"}
    assert status == {"fa-on": "completed", "fa-off": "completed", "self-draft": "completed",
                      "mtp-missing": "failed_to_load", "ngram": "completed"}


def test_tokenswarm_export_gives_the_real_runs_records_as_parquet_value_for_value(real_run, tmp_path: Path) -> None:
    _, run = real_run
    proc = subprocess.run([sys.executable, "-m", "orchestrate.cli", "export", str(run), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = read_jsonl(run / "fa-on" / "requests.jsonl")
    rows = pq.read_table(tmp_path / "fa-on" / "requests.parquet").to_pylist()
    assert len(rows) == len(records) == REAL_LOAD["num_prompts"]
    assert all({key: row[key] for key in record} == record for row, record in zip(rows, records))
    assert read_cached(run / "fa-on" / "requests.jsonl") is not None  # the run's report kept its columns
    kept = read_records(run / "fa-on" / "requests.jsonl")  # read back from them: the same records
    assert kept["request_id"].tolist() == [r["request_id"] for r in records]
    assert kept["chunk_offsets_ms"].tolist() == [r["chunk_offsets_ms"] for r in records]
    samples = pd.read_parquet(tmp_path / "fa-on" / "metrics.parquet")
    assert [None if pd.isna(x) else x for x in samples["metrics.tokens_predicted_total"]] == [
        (s["metrics"] or {}).get("tokens_predicted_total") for s in read_jsonl(run / "fa-on" / "metrics.jsonl")]


def test_a_variant_this_build_refuses_at_load_is_failed_to_load_and_the_next_runs(real_run) -> None:
    proc, run = real_run
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = summary_of(run, "mtp-missing")
    assert failed["status"] == "failed_to_load"
    assert "MTP" in failed["server"]["cause"] or "model loading" in failed["server"]["cause"], failed["server"]
    assert "failed to create MTP context" in (run / "mtp-missing" / "server.log").read_text()
    assert summary_of(run, "ngram")["status"] == "completed"  # the variant after it


def test_the_real_servers_queue_over_time_is_what_its_metrics_said(real_server, tmp_path: Path,
                                                                   llama_server_binary: Path) -> None:
    """8 users on 4 slots: llama.cpp defers the rest (its queue). report.html's running and waiting curves are
    the scrapes metrics.jsonl kept, the last scrape's counters equal a direct scrape once the load is over, and
    the queue was seen."""
    scenario = write_real_scenario(tmp_path, llama_server_binary, [
        {"name": "queued", "server": {"metrics_extra": ["llamacpp:n_busy_slots_per_decode"]}}])
    proc, run = tokenswarm_run(tmp_path, scenario, "--url", real_server.url, "--users", "8", "--num-prompts", "16",
                               "--max-tokens", "32", timeout_s=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    samples = read_jsonl(run / "queued" / "metrics.jsonl")
    scraped = [s["server"] for s in samples if s.get("server")]
    assert scraped and all(r["dialect"] == "llama.cpp" for r in scraped)
    block = summary_of(run, "queued")["server_side"]
    assert block["dialect"] == "llama.cpp" and block["samples"] == len(scraped)
    waiting = {g["name"]: g for g in block["gauges"]}["waiting"]
    assert waiting["max"] >= 1 and waiting["max"] == max(r["series"]["waiting"] for r in scraped)
    curves = {f["layout"]["title"]["text"]: f["data"][0]["y"] for f in page_figures(run / "report.html").values()}
    assert curves["requests waiting: the server's queue (its /metrics)"] == [r["series"]["waiting"] for r in scraped]
    assert curves["requests running (the server's /metrics)"] == [r["series"]["running"] for r in scraped]
    timed = [(s["t"], s["server"]["series"]["generation_tokens"]) for s in samples if s.get("server")]
    rates = [(b - a) / (tb - ta) for (ta, a), (tb, b) in zip(timed, timed[1:])]  # its counter, scrape to scrape
    drawn = curves["tokens generated/s by the server's count (its /metrics, per scrape)"]
    assert drawn == [pytest.approx(r, rel=1e-4) for r in rates] and max(rates) > 0  # the first scrape: no rate
    direct = read_server(requests.get(f"{real_server.url}/metrics", timeout=10).text)
    assert direct is not None and direct["series"] == {**scraped[-1]["series"], "running": 0.0, "waiting": 0.0}
    busy = {g["name"]: g for g in block["extra"]}["llamacpp:n_busy_slots_per_decode"]  # a metric the scenario named
    assert busy["max"] == max(r["extra"]["llamacpp:n_busy_slots_per_decode"] for r in scraped) > 1


def test_a_server_without_apply_template_uses_its_props_template(real_server, tmp_path: Path,
                                                                 llama_server_binary: Path) -> None:
    """An older llama.cpp build (``/tokenize`` but no ``/apply-template``): the /props template is
    rendered here, and the counts still equal what the server counts."""
    proxy = subprocess.Popen([sys.executable, PROXY, real_server.url, "/apply-template"],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert proxy.stdout is not None
        url = proxy.stdout.readline().strip()
        scenario = write_real_scenario(tmp_path, llama_server_binary, [{"name": "old-build"}])
        proc, run = tokenswarm_run(tmp_path, scenario, "--url", url, timeout_s=600)
    finally:
        proxy.kill()
        proxy.wait()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = summary_of(run, "old-build")
    assert summary["sampling"]["token_counter"] == "server_tokenize_local_template"
    assert any("chat template rendered by tokenswarm" in note for note in summary["notes"]), summary["notes"]
    assert summary["host"]["server_processes"] == "port"  # --url on this host: found by its port
    records = read_jsonl(run / "old-build" / "requests.jsonl")
    assert len(records) == REAL_LOAD["num_prompts"]
    assert [r["prompt_tokens"] for r in records] == [r["expected_prompt_tokens"] for r in records]


def test_a_capacity_search_on_the_real_server_names_its_answer_and_each_probes_metrics_agree(
        llama_server_binary: Path, gemma_model: Path, tmp_path: Path) -> None:
    """Gemma 3 270M on 2 cores: one user decodes well inside TPOT 60 ms, eight share the cores far beyond it.
    Each probe's own /metrics samples count exactly its records' tokens (a probe stopped early: within what
    its cancelled requests explain)."""
    scenario = write_real_scenario(
        tmp_path, llama_server_binary, [{"name": "v", "slo": {"ttft_ms": 2000, "tpot_ms": 60},
                                         "search": {"range": [1, 8], "settle_s": 1, "warmup_prompts": 4,
                                                    "confirm": False, "prompts_per_user": 3}}],
        load={"max_tokens": 24, "sampling": {"max_prompt_tokens": 160}})
    raw = yaml.safe_load(scenario.read_text())
    raw["server"]["flags"] = {"parallel": 8, "ctx-size": 16384, "threads": 2}
    scenario.write_text(yaml.safe_dump(raw, sort_keys=False))
    proc, run = tokenswarm_run(tmp_path, scenario, timeout_s=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    capacity = json.loads((run / "v" / "summary.json").read_text())["capacity"]
    assert capacity["max_passing"] is not None and capacity["min_failing"] is not None, capacity["sentence"]
    assert capacity["limited_by"] in ("ttft_ms", "tpot_ms"), capacity
    assert capacity["sentence"].startswith(f"serves {capacity['max_passing']:g} users within TTFT ≤ 2.0 s, TPOT ≤ 60 ms")
    for probe in capacity["probes"]:
        metrics = json.loads((run / "v" / "steps" / probe["label"] / "summary.json").read_text())["server_metrics"]
        assert metrics["available"], probe["label"]
        if probe["stopped_early"]:
            assert metrics["within_tolerance"], (probe["label"], metrics["vs_records"])
        else:
            assert metrics["agrees_with_records"], (probe["label"], metrics["vs_records"])
