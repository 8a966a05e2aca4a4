"""orchestrate/report/console.py: the lines printed for a variant — its conditions (model, server, load, prompts,
host, each taken from the summary and nothing invented), the headline, the steady state and the energy — from
typed summaries built from hand-written ``summary.json`` dicts (every number comes from report/aggregates/)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from orchestrate.report.aggregates.energy import energy
from orchestrate.report.aggregates.headline import summarize_records
from orchestrate.report.aggregates.steadystate import steady_state
from orchestrate.report.console import condition_lines, console_lines, energy_line, headline, steady_state_line
from orchestrate.report.jsontypes import from_json, to_json
from orchestrate.report.markdown import summary_md
from orchestrate.report.schema import Summary
from orchestrate.report.schema.steady import SteadyState
from orchestrate.scenario.spec import LoadSpec
from tests.unit.orchestrate.report.aggregates.test_energy import T0, TOKENS, samples
from tests.unit.orchestrate.report.aggregates.test_steadystate import four_users, frame, rec

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
    summary.update(to_json(summarize_records(pd.DataFrame()).blocks()))
    summary["server"] = {"status": "failed_to_load", "exit_code": 134,
                         "cause": "ggml-cuda/fattn.cu:110: fatal error",
                         "hint": "set flash-attn: off for this model and drafter",
                         "log_tail": ["llama_init: loading drafter", "ggml-cuda/fattn.cu:110: fatal error"]}
    summary["locust_crosscheck"], summary["crosscheck_agrees"], summary["notes"] = None, None, []
    return summary


def typed(summary: dict[str, Any]) -> Summary:
    """A hand-written ``summary.json`` as the typed ``Summary`` the renderers read."""
    return from_json(Summary, summary)


# --- the headline ---------------------------------------------------------------------------------

def test_the_console_gives_the_servers_peak_memory_after_the_headline():
    summary = typed({**reference_summary(), "memory": {"peak_bytes": 17_700_000_000, "source": "container"}})
    lines = console_lines(summary)
    at = lines.index(headline(summary)[-1]) + 1
    assert lines[at] == "memory: server peak 16.48 GiB (the container's own memory)"
    assert not any(line.startswith("memory:") for line in console_lines(typed(reference_summary())))  # none measured


def test_headline_reference_phrasing():
    assert headline(typed(reference_summary())) == [
        "980/1000 done, 20 errors in 883.0 s",
        "prefill 209.8 tok/s, decode 276.6 tok/s, 1.11 req/s",
        "TTFT median 1.3 s, TPOT median 105 ms",
    ]


def test_headline_says_what_stopped_a_short_run():
    summary = reference_summary()
    summary["stopped_by"] = "time_cap"
    assert headline(typed(summary))[0] == "980/1000 done, 20 errors in 883.0 s (stopped by time_cap)"


def test_headline_without_planned_prompts_uses_sent():
    summary = reference_summary()
    del summary["planned_prompts"]
    assert headline(typed(summary))[0] == "980/1000 done, 20 errors in 883.0 s"


def test_headline_without_latencies():
    summary = reference_summary()
    summary["latency_ms"] = {"ttft": None, "tpot": None, "itl": None, "e2e": None}
    assert headline(typed(summary))[2] == "TTFT median –, TPOT median –"


def test_headline_failed_to_load_shows_status_cause_and_hint():
    assert headline(typed(failed_to_load_summary())) == [
        "status: failed_to_load: ggml-cuda/fattn.cu:110: fatal error",
        "hint: set flash-attn: off for this model and drafter",
    ]


def test_headline_error_without_server_cause_shows_the_error():
    summary = failed_to_load_summary()
    summary["server"] = {}
    summary["status"], summary["error"] = "error", "locust sent no request; see locust.log"
    assert headline(typed(summary)) == ["status: error: locust sent no request; see locust.log"]


def test_headline_crash_mid_run_shows_status_then_numbers():
    summary = reference_summary()
    summary["status"] = "crashed"
    summary["server"]["cause"] = "CUDA error: out of memory"
    lines = headline(typed(summary))
    assert lines[0] == "status: crashed: CUDA error: out of memory"
    assert lines[1:] == headline(typed(reference_summary()))


# --- the steady state and the energy --------------------------------------------------------------

def test_steady_state_line_found_and_not() -> None:
    def line(block: SteadyState | None) -> str | None:
        return steady_state_line(block)

    assert steady_state_line(None) is None
    block = steady_state(four_users(), LoadSpec(users=4))
    assert line(block) == ("steady state 1.5–6.0 s (9 requests, 75 %): decode 5.8 tok/s, "
                           "TTFT median 1.0 s, TPOT median 500 ms")
    none = steady_state(frame([rec(u * 0.5) for u in range(4)]), LoadSpec(users=4))
    found = line(none)
    assert found is not None and found.startswith("steady state: none — only 1 requests were sent")
    assert found.endswith("(about 11 prompts would give one)")
    unknown = line(steady_state(four_users(), None))
    assert unknown == "steady state: none — the number of users is not known"


def test_energy_line_measured_and_not() -> None:
    block = energy(samples([250.0] * 13), T0, T0 + 10.0, TOKENS)
    assert energy_line(block) == (
        "energy 2,500 J over 10.0 s: 0.4 output tokens/J, 2.5 J per output token, 250 W "
        "mean (idle 250 W; nvidia-smi power.draw, all GPUs)")
    why = "nvidia-smi stopped answering (CalledProcessError: ...)"
    half = energy(samples([250.0] * 6 + [None] * 7, error=why), T0, T0 + 10.0, TOKENS)
    assert energy_line(half) == f"energy: not measured — {half.unavailable}"


# --- the conditions -------------------------------------------------------------------------------

BASE_SETTINGS: dict[str, Any] = {"server.launcher": "embedded", "server.model": "tiny", "load.users": 8,
                                 "load.num_prompts": 300, "load.dataset": "synthetic:2000", "load.max_tokens": 64,
                                 "load.seed": 3}


def lines_of(settings: dict[str, Any] | None = None, facts: dict[str, Any] | None = None,
             **summary: Any) -> list[str]:
    return condition_lines(typed({"settings": {**BASE_SETTINGS, **(settings or {})},
                                  "server": {"facts": facts or {}}, **summary}))


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
    lines = condition_lines(typed(summary))
    assert lines == [
        "model: gemma-3-270m (gemma-3-270m-q4_k_m.gguf, 241.3 MiB)",
        "server: process launcher, build b0-unknown, 32 slots × 2,048 ctx; flags flash-attn=off",
        "load: 32 users (concurrency), closed loop, time cap 900 s",
        "prompts: 1000 from sharegpt-v3 (ShareGPT_V3.json) of 17,671 conversations (a truncated file: its complete "
        "ones), seed 0, prompt ≤ 1024 tokens, max_tokens 256",
        "host: spark, 20 CPUs — quiet while it ran"]
    assert console_lines(typed(summary))[:5] == lines and "- " + lines[0] in summary_md(typed(summary)).splitlines()
    del summary["settings"]  # a summary from before settings were kept: no lines, nothing invented
    assert condition_lines(typed(summary)) == [] and console_lines(typed(summary))[0] == headline(typed(summary))[0]


def test_a_plain_run_is_five_lines_or_four_without_a_host() -> None:
    assert lines_of() == ["model: tiny", "server: embedded launcher",
                          "load: 8 users (concurrency), closed loop, no time cap",
                          "prompts: 300 from synthetic:2000, seed 3, max_tokens 64"]
    assert lines_of(machine={"hostname": "h", "cpu_count": 4})[-1] == "host: h, 4 CPUs"
    assert lines_of(host={"busy": True})[-1] == "host: this host — busy while it ran (see the notes)"


def test_nothing_without_settings() -> None:
    assert condition_lines(typed({"server": {"facts": {"build": "b1"}}, "machine": {"hostname": "h"}})) == []


def test_the_model_names_its_file_size_and_draft() -> None:
    """The scenario's name first; the file the server loaded when it differs; the size where known."""
    model, *_ = lines_of({"server.draft_model": "tiny-draft"}, {"model_path": "/c/tiny-q8.gguf"},
                         model={"bytes": 3 * 1024 ** 3})
    assert model == "model: tiny (tiny-q8.gguf, 3.00 GiB), draft model tiny-draft"
    assert lines_of({"server.model": None})[0] == "model: unknown"
    assert lines_of({"server.model": "m.gguf"}, {"model_path": "/x/m.gguf"})[0] == "model: m.gguf"


def test_the_server_line_has_build_slots_and_flags_in_order() -> None:
    server = lines_of({"server.flags.threads": 2, "server.flags.ctx-size": 4096},
                      {"build": "b11434", "total_slots": 4, "per_slot_ctx": 1024})[1]
    assert server == "server: embedded launcher, build b11434, 4 slots × 1,024 ctx; flags ctx-size=4096 threads=2"
    external = lines_of({"server.launcher": "external", "server.url": "http://h:1", "server.flags.threads": 2})[1]
    assert "flags" not in external, "the scenario's flags never reached a server tokenswarm did not start"


def test_an_open_loop_and_stages_are_named_as_such() -> None:
    rate = lines_of({"load.rate": 2.5, "load.arrival": "poisson", "load.max_seconds": 60})[2]
    assert rate == "load: open loop 2.50 req/s (poisson), at most 8 in flight, time cap 60 s"
    stages = lines_of({"load.stages": [{"users": 2}, {"users": 8}]})[2]
    assert stages == "load: stages of 2 → 8 users, no time cap"


def test_warm_up_and_repeat_are_part_of_the_load() -> None:
    load = lines_of(warmup={"prompts": 8}, repeat={"index": 2, "of": 3, "order": 5})[2]
    assert load == ("load: 8 users (concurrency), closed loop, no time cap, after a warm-up of 8 prompts; "
                    "repeat 2 of 3 (server start 5 of the run)")
    assert lines_of(sweep={"warmup_prompts": 4})[2].endswith("after a warm-up of 4 prompts")


def test_the_prompts_line_names_the_file_and_every_filter() -> None:
    prompts = lines_of({"load.dataset": "sharegpt-v3", "load.sampling.min_prompt_tokens": 4,
                        "load.sampling.max_total_tokens": 2048, "load.sampling.fixed_output_tokens": 128,
                        "load.sampling.max_prompt_tokens": None, "load.sampling.min_output_tokens": 0},
                       sampling={"dataset": "/d/ShareGPT.json", "complete_conversations": 1234})[3]
    assert prompts == ("prompts: 300 from sharegpt-v3 (ShareGPT.json) of 1,234 conversations, seed 3, "
                       "prompt ≥ 4 tokens, reply ≥ 0 tokens, prompt + reply ≤ 2048 tokens, every reply 128 tokens, max_tokens 64")
    same = lines_of({"load.dataset": "d.json"}, sampling={"dataset": "/x/d.json"})[3]
    assert same.startswith("prompts: 300 from d.json, seed"), "the file is not named twice"


def test_random_prompts_state_their_lengths_text_and_ignore_eos() -> None:
    prompts = lines_of({"load.dataset": "random", "load.input_tokens": "200", "load.output_tokens": "32",
                        "load.prefix_tokens": 50, "load.ignore_eos": True},
                       sampling={"dataset": "sharegpt-v3"})[3]
    assert prompts == ("prompts: 300 random, 200 tokens each as the server counts them (the first 50 shared), "
                       "max_tokens 32, ignore_eos (every reply runs to max_tokens); text from sharegpt-v3, seed 3")
    sharegpt = lines_of({"load.ignore_eos": True})[3]
    assert sharegpt.endswith("max_tokens 64, ignore_eos (every reply runs to max_tokens)")


def test_a_server_tokenswarm_did_not_start_is_described_as_it_reported_itself() -> None:
    summary = reference_summary()
    summary["settings"] = {"server.launcher": "external", "server.url": "http://10.0.0.5:8080",
                           "server.reported.model": "gemma-4-E4B-Q4_K_M.gguf", "load.users": 32,
                           "load.num_prompts": 1000, "load.dataset": "sharegpt-v3", "load.max_tokens": 256,
                           "load.seed": 0}
    summary["server"]["facts"].update(model_path="/models/gemma-4-E4B-Q4_K_M.gguf", per_slot_ctx=2048,
                                      total_slots=256)
    model, server = condition_lines(typed(summary))[:2]
    assert model == "model: gemma-4-E4B-Q4_K_M.gguf — as the server reported it"
    assert server == ("server: at http://10.0.0.5:8080, not started by tokenswarm (its settings are unknown but for "
                      "what it reports), build b0-unknown, 256 slots × 2,048 ctx")


def test_a_web_ui_run_names_the_users_the_person_set() -> None:
    summary = reference_summary()
    summary["settings"] = {"server.launcher": "embedded", "server.model": "tiny", "load.users": 8,
                           "load.num_prompts": 300, "load.dataset": "synthetic:2000", "load.max_tokens": 64,
                           "load.seed": 0}
    summary["users_over_time"] = {"max": 16, "levels": [{"users": 4}, {"users": 16}]}
    assert condition_lines(typed(summary))[2] == ("load: users set in the web UI: 4 → 16 (at most 16), closed loop, "
                                                  "no time cap")


TRACE = {"conditions": {"path": "/d/mooncake.jsonl", "format": "mooncake", "rows": 1000, "skipped": {"failed": 3},
                        "start_s": 10.0, "duration_s": 40.0, "requests": 119, "span_s": 39.0, "time_scale": 0.5,
                        "input_scale": 0.25, "block_tokens": 128, "max_input_tokens": 2048, "max_output_tokens": 16,
                        "clipped_input": 2, "clipped_output": 113, "blocks": 400, "blocks_seen_before": 100,
                        "reusable_tokens": 1000, "input_tokens": 20000},
         "ideal_prefix_reuse": 0.25, "ideal_cached_share": 0.05, "server_cached_share": 0.085,
         "by_input_length": [{"low": 64, "high": 256, "requests": 10, "completed": 9,
                              "ttft_ms": stats(100, 200, 300, 150, 310), "tpot_ms": stats(20, 30, 40, 25, 41),
                              "e2e_ms": stats(500, 600, 700, 550, 710)}]}


def test_a_trace_replay_names_its_window_and_every_cut_in_the_console_and_summary_md():
    settings = {"server.launcher": "embedded", "load.dataset": "trace", "load.users": 16, "load.seed": 0,
                "load.trace.path": "mooncake-sample", "load.trace.time_scale": 0.5}
    summary = typed({**reference_summary(), "settings": settings, "trace": TRACE,
                     "sampling": {"dataset": "/d/mooncake.jsonl", "token_counter": "server_tokenize", "inexact": 4}})
    lines = console_lines(summary)
    assert any("load: trace mooncake-sample replayed at 0.50× its speed (open loop), at most 16 in flight" in line
               for line in lines)
    prompts = next(line for line in lines if "prompts:" in line)
    assert ("prompts: 119 of 1,000 from trace mooncake.jsonl (mooncake), window 10 s + 40 s, input × 0.25, "
            "2 prompts cut to 2048 tokens, 113 replies cut to 16 tokens, skipped failed 3, lengths as the server "
            "counts them (4 not at their trace length: see the notes)") in prompts
    md = summary_md(summary).splitlines()
    assert ("Trace: 119 of 1,000 requests of mooncake.jsonl (mooncake), 39 s of trace time at 0.5×; window 10 s + "
            "40 s; input × 0.25; 2 prompts cut to 2048 tokens; 113 replies cut to 16 tokens; skipped failed 3  ") in md
    assert ("Prefix reuse: 25.0 % of 400 blocks of 128 tokens seen before; at most 5.0 % of prompt tokens cacheable, "
            "the server reported 8.5 % cached  ") in md
    assert "| 64–256 | 10 | 9 | 100 ms | 300 ms | 20 ms | 40 ms | 700 ms |" in md
