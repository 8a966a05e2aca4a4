"""orchestrate/report/render.py: formatting of summaries (every number comes from report/aggregates/)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from orchestrate.report.aggregates.headline import summarize_records
from orchestrate.report.provenance import condition_lines
from orchestrate.report.render import console_lines, headline, markdown, write_reports
from orchestrate.results import VariantPaths

CONTEXT_ERROR = "http_400:exceed_context_size_error"


def stats(p50: float, p90: float, p99: float, mean: float, max_: float) -> dict[str, float]:
    return {"p50": p50, "p90": p90, "p99": p99, "mean": mean, "min": p50 / 2, "max": max_}


def reference_summary() -> dict:
    """The reference study's shape: 1000 prompts planned, 980 done, 20 over the context size."""
    return {
        "scenario": "gemma-mtp", "variant": "fa-off", "status": "completed", "error": None,
        "stopped_by": "num_prompts", "planned_prompts": 1000,
        "requests": {"sent": 1000, "completed": 980, "errors": 20, "cancelled": 0,
                     "errors_by_class": {CONTEXT_ERROR: 20}},
        "duration_s": 883.0,
        "tokens": {"prompt": 185253, "cached": 1024, "output": 244238},
        "throughput": {"prefill_tok_s": 209.8, "decode_tok_s": 276.6, "requests_per_s": 1.1098},
        "latency_ms": {"ttft": stats(1300.0, 4200.0, 9800.0, 1850.0, 12000.0),
                       "tpot": stats(105.0, 140.0, 190.0, 110.0, 250.0),
                       "itl": stats(98.0, 130.0, 400.0, 104.0, 30000.0),
                       "e2e": stats(27000.0, 40000.0, 52000.0, 28000.0, 61000.0)},
        "tokens_per_chunk": 1.0, "output_tokens_source": ["usage"],
        "server_timings": {"per_slot_prefill_tok_s": 1416.7, "per_slot_decode_tok_s": 9.3},
        "speculative": {"draft_tokens": 1000, "accepted_tokens": 625, "acceptance_rate": 0.625,
                        "per_request_acceptance": None},
        "locust_crosscheck": {"requests": 1000, "failures": 20, "prompt_tokens": 185253,
                              "output_tokens": 244238, "duration_s": 884.0, "prefill_tok_s": 209.6,
                              "decode_tok_s": 276.3},
        "crosscheck_agrees": True,
        "server": {"status": "completed", "facts": {"total_slots": 32, "n_ctx_per_slot": 2048, "build": "b0-unknown"},
                   "ready_s": 12.345, "exit_code": None, "cause": None, "hint": None},
        "notes": ["prompt lengths were ESTIMATED (characters / 4)"],
    }


def failed_to_load_summary() -> dict:
    """The reference study's failure: the drafter aborts at slot init, nothing was sent."""
    summary = {"scenario": "gemma-mtp", "variant": "fa-on", "status": "failed_to_load",
               "error": "server exited with code 134 while loading; see server.log"}
    summary.update(summarize_records(pd.DataFrame()))
    summary["server"] = {"status": "failed_to_load", "exit_code": 134,
                         "cause": "ggml-cuda/fattn.cu:110: fatal error",
                         "hint": "set flash-attn: off for this model and drafter",
                         "log_tail": ["llama_init: loading drafter", "ggml-cuda/fattn.cu:110: fatal error"]}
    summary["locust_crosscheck"], summary["crosscheck_agrees"], summary["notes"] = None, None, []
    return summary


def test_the_console_gives_the_servers_peak_memory_after_the_headline():
    summary = {**reference_summary(), "memory": {"peak_bytes": 17_700_000_000, "source": "container"}}
    lines = console_lines(summary)
    at = lines.index(headline(summary)[-1]) + 1
    assert lines[at] == "memory: server peak 16.48 GiB (the container's own memory)"
    assert not any(line.startswith("memory:") for line in console_lines(reference_summary()))  # none measured


def test_headline_reference_phrasing():
    assert headline(reference_summary()) == [
        "980/1000 done, 20 errors in 883.0 s",
        "prefill 209.8 tok/s, decode 276.6 tok/s, 1.11 req/s",
        "TTFT median 1.3 s, TPOT median 105 ms",
    ]


def test_headline_says_what_stopped_a_short_run():
    summary = reference_summary()
    summary["stopped_by"] = "time_cap"
    assert headline(summary)[0] == "980/1000 done, 20 errors in 883.0 s (stopped by time_cap)"


def test_headline_without_planned_prompts_uses_sent():
    summary = reference_summary()
    del summary["planned_prompts"]
    assert headline(summary)[0] == "980/1000 done, 20 errors in 883.0 s"


def test_headline_without_latencies():
    summary = reference_summary()
    summary["latency_ms"] = {"ttft": None, "tpot": None, "itl": None, "e2e": None}
    assert headline(summary)[2] == "TTFT median –, TPOT median –"


def test_headline_failed_to_load_shows_status_cause_and_hint():
    assert headline(failed_to_load_summary()) == [
        "status: failed_to_load: ggml-cuda/fattn.cu:110: fatal error",
        "hint: set flash-attn: off for this model and drafter",
    ]


def test_headline_error_without_server_cause_shows_the_error():
    summary = failed_to_load_summary()
    summary["server"] = {}
    summary["status"], summary["error"] = "error", "locust sent no request; see locust.log"
    assert headline(summary) == ["status: error: locust sent no request; see locust.log"]


def test_headline_crash_mid_run_shows_status_then_numbers():
    summary = reference_summary()
    summary["status"] = "crashed"
    summary["server"]["cause"] = "CUDA error: out of memory"
    lines = headline(summary)
    assert lines[0] == "status: crashed: CUDA error: out of memory"
    assert lines[1:] == headline(reference_summary())


def test_markdown_has_headline_latency_table_and_error_classes():
    md = markdown(reference_summary())
    lines = md.splitlines()
    assert lines[0] == "# gemma-mtp / fa-off"
    assert "**980/1000 done, 20 errors in 883.0 s**  " in lines
    assert "| latency | p50 | p90 | p99 | mean | max |" in lines
    assert "| TTFT | 1.3 s | 4.2 s | 9.8 s | 1.9 s | 12.0 s |" in lines
    assert "| TPOT | 105 ms | 140 ms | 190 ms | 110 ms | 250 ms |" in lines
    assert "| ITL (inter-chunk) | 98 ms | 130 ms | 400 ms | 104 ms | 30.0 s |" in lines
    assert "| E2E | 27.0 s | 40.0 s | 52.0 s | 28.0 s | 61.0 s |" in lines
    assert "| total | 185,253 | 1,024 | 244,238 | 1.00 |" in lines
    assert "| error class | count |" in lines
    assert f"| {CONTEXT_ERROR} | 20 |" in lines
    assert "llama.cpp timings (per slot): prefill 1,416.7 tok/s, decode 9.3 tok/s  " in lines
    assert "speculative decoding: 625/1,000 draft tokens accepted (62.5 %)  " in lines
    assert ("Locust's own stats: 1000 requests, 20 failures, 185,253 prompt / 244,238 output tokens — "
            "agrees with the records  ") in lines
    assert "| total_slots | 32 |" in lines
    assert "- prompt lengths were ESTIMATED (characters / 4)" in lines
    assert md.endswith("\n")


def test_markdown_flags_a_crosscheck_that_differs():
    summary = reference_summary()
    summary["crosscheck_agrees"] = False
    assert "**differs from the records**" in markdown(summary)


def test_markdown_without_drafter():
    summary = reference_summary()
    summary["speculative"] = None
    assert "speculative decoding: off (no draft counts in the server's timings)  " in markdown(summary).splitlines()


def test_markdown_failed_to_load_keeps_the_log_tail():
    md = markdown(failed_to_load_summary())
    assert "**status: failed_to_load: ggml-cuda/fattn.cu:110: fatal error**  " in md.splitlines()
    assert "| latency |" not in md
    assert "| error class |" not in md
    assert "```\nllama_init: loading drafter\nggml-cuda/fattn.cu:110: fatal error\n```" in md


def test_write_reports(tmp_path: Path):
    paths = VariantPaths.create(tmp_path, "fa-off")
    summary = reference_summary()
    write_reports(summary, paths)
    assert json.loads(paths.summary_json.read_text()) == summary
    assert paths.summary_md.read_text() == markdown(summary)
    assert not paths.plot_png.exists()  # no records, no plot


def test_write_reports_of_a_failed_variant(tmp_path: Path):
    paths = VariantPaths.create(tmp_path, "fa-on")
    summary = failed_to_load_summary()
    write_reports(summary, paths, pd.DataFrame())
    assert json.loads(paths.summary_json.read_text())["status"] == "failed_to_load"
    assert "fattn.cu:110" in paths.summary_md.read_text()
    assert not paths.plot_png.exists()


def test_write_reports_plots_the_records(tmp_path: Path):
    pytest.importorskip("matplotlib")
    from dataclasses import asdict

    from locustfiles.records import RequestRecord
    records = pd.DataFrame([asdict(RequestRecord(
        request_id=f"local-{i}", prompt_index=i, worker="local", send_ts=1000.0 + i, ttft_ms=100.0 * (i + 1),
        e2e_ms=300.0 * (i + 1), tpot_ms=50.0, chunk_offsets_ms=[100.0 * (i + 1), 150.0 * (i + 1)], n_chunks=2,
        tokens_per_chunk=1.0, output_tokens=2, prompt_tokens=10)) for i in range(3)])
    paths = VariantPaths.create(tmp_path, "base")
    summary = {**reference_summary(), **summarize_records(records)}
    write_reports(summary, paths, records)
    assert paths.plot_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_conditions_name_the_model_server_load_prompts_and_host():
    summary = reference_summary()
    summary["settings"] = {"server.model": "gemma-3-270m", "server.launcher": "process", "server.draft_model": None,
                           "server.flags.flash-attn": "off", "load.users": 32, "load.num_prompts": 1000,
                           "load.dataset": "sharegpt-v3", "load.max_tokens": 256, "load.seed": 0,
                           "load.max_seconds": 900.0, "load.sampling.max_prompt_tokens": 1024}
    summary["server"]["facts"].update(model_path="/cache/models/gemma-3-270m-q4_k_m.gguf", per_slot_ctx=2048)
    summary.update(model={"bytes": 253_000_000}, machine={"hostname": "spark", "cpu_count": 20},
                   host={"busy": False}, sampling={"dataset": "/site/ShareGPT_V3.json", "complete_conversations": 17671,
                                                   "truncated": True})
    lines = condition_lines(summary)
    assert lines == [
        "model: gemma-3-270m (gemma-3-270m-q4_k_m.gguf, 241.3 MiB)",
        "server: process launcher, build b0-unknown, 32 slots × 2,048 ctx; flags flash-attn=off",
        "load: 32 users (concurrency), closed loop, time cap 900 s",
        "prompts: 1000 from sharegpt-v3 (ShareGPT_V3.json) of 17,671 conversations (a truncated file: its complete "
        "ones), seed 0, prompt ≤ 1024 tokens, max_tokens 256",
        "host: spark, 20 CPUs — quiet while it ran"]
    assert console_lines(summary)[:5] == lines and "- " + lines[0] in markdown(summary).splitlines()
    del summary["settings"]  # a summary from before settings were kept: no lines, nothing invented
    assert condition_lines(summary) == [] and console_lines(summary)[0] == headline(summary)[0]
