"""orchestrate/report/provenance.py: the conditions a result states before any number — model, server,
load, prompts, host — each taken from ``summary.json`` and nothing invented. (The full reference case,
with the console and markdown around it, is in ``test_render.py``.)"""

from __future__ import annotations

from typing import Any

from orchestrate.report.provenance import condition_lines
from tests.unit.orchestrate.report.test_render import reference_summary

BASE_SETTINGS: dict[str, Any] = {"server.launcher": "embedded", "server.model": "tiny", "load.users": 8,
                                 "load.num_prompts": 300, "load.dataset": "synthetic:2000", "load.max_tokens": 64,
                                 "load.seed": 3}


def lines_of(settings: dict[str, Any] | None = None, facts: dict[str, Any] | None = None,
             **summary: Any) -> list[str]:
    return condition_lines({"settings": {**BASE_SETTINGS, **(settings or {})},
                            "server": {"facts": facts or {}}, **summary})


def test_a_plain_run_is_five_lines_or_four_without_a_host() -> None:
    assert lines_of() == ["model: tiny", "server: embedded launcher",
                          "load: 8 users (concurrency), closed loop, no time cap",
                          "prompts: 300 from synthetic:2000, seed 3, max_tokens 64"]
    assert lines_of(machine={"hostname": "h", "cpu_count": 4})[-1] == "host: h, 4 CPUs"
    assert lines_of(host={"busy": True})[-1] == "host: this host — busy while it ran (see the notes)"


def test_nothing_without_settings() -> None:
    assert condition_lines({"server": {"facts": {"build": "b1"}}, "machine": {"hostname": "h"}}) == []


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
    model, server = condition_lines(summary)[:2]
    assert model == "model: gemma-4-E4B-Q4_K_M.gguf — as the server reported it"
    assert server == ("server: at http://10.0.0.5:8080, not started by tokenswarm (its settings are unknown but for "
                      "what it reports), build b0-unknown, 256 slots × 2,048 ctx")


def test_a_web_ui_run_names_the_users_the_person_set() -> None:
    summary = reference_summary()
    summary["settings"] = {"server.launcher": "embedded", "server.model": "tiny", "load.users": 8,
                           "load.num_prompts": 300, "load.dataset": "synthetic:2000", "load.max_tokens": 64,
                           "load.seed": 0}
    summary["users_over_time"] = {"max": 16, "levels": [{"users": 4}, {"users": 16}]}
    assert condition_lines(summary)[2] == "load: users set in the web UI: 4 → 16 (at most 16), closed loop, no time cap"
