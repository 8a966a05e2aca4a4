"""The one home of ``summary.json``: a variant's result files → its summary, notes and reports.

Stage: report. The run loop calls ``build_summary`` when a variant ends, and ``tokenswarm report``
calls it to rebuild a run from its files alone; so this module reads files and imports nothing of
the run stage (launchers, the Locust runner, the sampler, pre-flight), which a test holds.
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from typing import Any

from orchestrate.errors import ResultsError
from orchestrate.report.aggregates.accounting import connections, server_down, unsent
from orchestrate.report.aggregates.capacity import capacity_block
from orchestrate.report.aggregates.client import crosscheck_agrees, locust_crosscheck, summarize_client
from orchestrate.report.aggregates.energy import energy
from orchestrate.report.aggregates.goodput import goodput
from orchestrate.report.aggregates.headline import summarize_records
from orchestrate.report.aggregates.host import summarize_host
from orchestrate.report.aggregates.pacing_figures import load_mode_summary
from orchestrate.report.aggregates.recordsfile import read_records
from orchestrate.report.aggregates.servermetrics import jsonl_rows, load_metrics, server_metrics, summarize_metrics
from orchestrate.report.aggregates.steadystate import steady_state
from orchestrate.report.aggregates.sweep import sweep_block
from orchestrate.report.aggregates.turns import summarize_turns
from orchestrate.report.aggregates.uisteps import form_spawn_rate, ui_steps, user_levels, users_over_time
from orchestrate.report.host_report import host_note
from orchestrate.report.jsontypes import from_json, to_json, undeclared
from orchestrate.report.pacing_report import notes as load_mode_notes
from orchestrate.report.render import write_reports
from orchestrate.report.schema.summary import RunFacts, Summary
from orchestrate.results import VariantPaths, read_json
from orchestrate.scenario.host_limits import HostLimits
from orchestrate.scenario.spec import Sweep

TOKEN_COUNTERS = {
    "server_tokenize": "exact: the server's /apply-template and /tokenize",
    "server_tokenize_local_template": "the server's /tokenize over its /props chat template rendered by "
                                      "tokenswarm (the server has no /apply-template)",
    "server_tokenize_no_template": "the server's /tokenize over the message text alone: the chat template's "
                                   "tokens are not counted (no /apply-template, no usable template in /props)",
    "estimate_chars_div_4": "ESTIMATED (characters / 4): the server has no /tokenize",
}
"""How prompt lengths were measured (``summary.json`` ``sampling.token_counter``, set by pre-flight), best first."""


def build_summary(paths: VariantPaths, scenario: str, variant: str, facts: RunFacts,
                  host_limits: HostLimits = HostLimits()) -> Summary:
    """Summarize a variant's files and what the run knew of it (also used by ``tokenswarm report`` without
    a server, with the facts ``run.json`` kept)."""
    known = to_json(facts)
    paths.run_json.write_text(json.dumps({"scenario": scenario, "variant": variant, "host_limits": asdict(host_limits),
                                          "known": to_json(facts, run_json=True)}, indent=1, default=str) + "\n")
    records = read_records(paths.records)
    summary: dict[str, Any] = {"scenario": scenario, "variant": variant, **known}
    summary.update(summarize_records(records))
    summary["goodput"] = goodput(records, summary.get("slo"), summary["duration_s"])
    summary["locust_crosscheck"] = locust_crosscheck(paths.locust_json, paths.locust_stats_csv)
    summary["crosscheck_agrees"] = crosscheck_agrees(summary, summary["locust_crosscheck"])
    summary["connections"] = connections(records)
    metrics_frame = load_metrics(paths.metrics)  # read once: memory and counters here, energy below
    metrics = summarize_metrics(metrics_frame)
    summary["memory"] = metrics["memory"]
    samples = jsonl_rows(paths.metrics)
    summary["host"] = summarize_host(samples, host_limits)
    summary["server_metrics"] = server_metrics(metrics, records)
    summary["server"] = read_json(paths.server_json) or {}
    if summary.get("status") in ("crashed", "server_lost"):
        summary["server_down"] = server_down(records, summary["server"].get("down_at"), samples)
    summary["workers"] = read_json(paths.workers_json)
    summary["client"] = summarize_client(read_json(paths.client_json))
    summary["workers_lost"] = (summary["workers"] or {}).get("workers_lost", 0)
    summary["requests"]["unsent"] = unsent(summary.get("planned_prompts"), summary["requests"]["sent"]
                                           + (summary["workers"] or {}).get("lost_in_flight", 0))
    summary.update(load_mode_summary(paths, records))  # open loop: arrivals; ramp: stages
    if summary.get("ui"):  # a person ramped the users: what they were, and each level held as a step
        levels = user_levels(paths.locust_history_csv)
        summary["users_over_time"], summary["ui_steps"] = users_over_time(levels), ui_steps(records, levels)
        if summary["users_over_time"] and summary.get("settings"):  # the users the person set, not the form's prefill
            summary["settings"] = {**summary["settings"], "load.users": summary["users_over_time"]["max"]}
            rate = form_spawn_rate(paths.llm_history_csv)
            if rate is not None:
                summary["settings"]["load.spawn_rate"] = rate
    summary.update(summarize_turns(paths, records, conversations=not summary.get("sweep")))  # multi-turn
    arrivals = read_json(paths.arrivals_json) or {}
    schedule = [arrivals["start_ts"] + offset for offset in arrivals.get("offsets_s") or []] \
        if arrivals.get("start_ts") is not None else None
    summary["steady_state"] = steady_state(records, summary.get("settings"), summary.get("slo"), schedule,
                                           ui=bool(summary.get("ui")))
    first = float(records["send_ts"].min()) if not records.empty else None
    summary["energy"] = energy(metrics_frame, first, None if first is None else first + summary["duration_s"],
                               summary["tokens"], summary["steady_state"])
    found = capacity_block(paths)  # a capacity search: its answer, from its probes' summaries
    if found is not None:
        summary["capacity"] = found
    summary["notes"] = notes(summary)
    typed = checked(summary)
    write_reports(typed, paths, records)
    return typed


def read_summary(paths: VariantPaths) -> Summary | None:
    """A result folder's ``summary.json`` as the typed ``Summary``; None when it has none (or half of one)."""
    data = read_json(paths.summary_json)
    return from_json(Summary, data, str(paths.summary_json)) if isinstance(data, dict) else None


def checked(data: dict[str, Any]) -> Summary:
    """The assembled blocks as the typed ``Summary``; a key its type does not declare is a bug, named here
    rather than dropped from the file."""
    extra = undeclared(Summary, data)
    if extra:
        raise ResultsError(f"summary.json: {', '.join(extra)}: not declared by orchestrate/report/schema")
    return from_json(Summary, data, "summary.json")


def rebuild_summary(paths: VariantPaths, scenario: str) -> Summary:
    """``tokenswarm report``: a variant's summary rebuilt from its files and ``run.json`` (what the run knew);
    a sweep's steps and a search's probes are rebuilt first, then its ``sweep`` or ``capacity`` block from
    their new summaries."""
    run = read_json(paths.run_json)
    old = read_json(paths.summary_json) or {}
    if run:
        facts = from_json(RunFacts, run.get("known") or {}, str(paths.run_json))
        limits = HostLimits(**(run.get("host_limits") or {}))
        scenario, variant = run.get("scenario", scenario), run.get("variant", paths.dir.name)
    else:  # a run from before run.json: the same fields of its old summary
        facts = from_json(RunFacts, old, str(paths.summary_json))
        limits = HostLimits(**((old.get("host") or {}).get("limits") or {}))
        scenario, variant = old.get("scenario", scenario), old.get("variant", paths.dir.name)
    if facts.sweep:
        block = facts.sweep
        sweep = Sweep(block.key, tuple(block.values), block.warmup_prompts, block.settle_s)
        for value in sweep.values:
            step = VariantPaths(paths.dir / "steps" / sweep.label(value))
            if step.summary_json.is_file():
                rebuild_summary(step, scenario)
        facts = replace(facts, sweep=sweep_block(paths, sweep))
    for probe in (read_json(paths.search_json) or {}).get("probes") or []:  # a capacity search's probes
        step = VariantPaths(paths.dir / "steps" / probe["label"])
        if step.summary_json.is_file():
            rebuild_summary(step, scenario)
    return build_summary(paths, scenario, variant, facts, limits)


def output_control_notes(summary: dict[str, Any]) -> list[str]:
    """Replies shorter than asked under ``ignore_eos`` (all of them: the server ignores the field), prompts not
    cut to their exact length, reasoning counted from the stream."""
    out = []
    requests, settings = summary.get("requests") or {}, summary.get("settings") or {}
    short, completed = requests.get("short_replies", 0), requests.get("completed", 0)
    if settings.get("load.ignore_eos") and short and short == completed:
        out.append(f"the server ignored ignore_eos: every one of the {completed:,} completed replies ended before its "
                   "max_tokens, so the output lengths are the model's own, not the ones asked for")
    elif settings.get("load.ignore_eos") and short:
        out.append(f"{short:,} of {completed:,} completed replies ended before their max_tokens despite ignore_eos "
                   "(a stop string, or the slot's context full)")
    inexact = (summary.get("sampling") or {}).get("inexact")
    if inexact:
        out.append(f"{inexact:,} random prompts could not be cut to their exact length; each is sent and counted "
                   "at its measured length (prompts.jsonl)")
    if "chunks" in ((summary.get("reasoning") or {}).get("tokens_source") or []):
        out.append("reasoning tokens are counted one per reasoning event of the stream: the server did not report "
                   "usage.completion_tokens_details.reasoning_tokens (an event of several tokens would be undercounted)")
    return out


def notes(summary: dict[str, Any]) -> list[str]:
    """Plain-language caveats a reader must see next to the numbers."""
    out = []
    sampling = summary.get("sampling") or {}
    counter = sampling.get("token_counter", "server_tokenize")
    if counter != "server_tokenize":
        out.append(f"prompt lengths: {TOKEN_COUNTERS.get(counter, counter)}"
                   + ("" if counter == "server_tokenize_local_template" else "; sampling limits are approximate"))
    if sampling.get("truncated"):
        out.append(f"the dataset file is truncated (allow_truncated): prompts were sampled from its "
                   f"{sampling['complete_conversations']:,} complete conversations only")
    if sampling.get("shortfall"):
        out.append(f"the dataset yielded {sampling['shortfall']} fewer prompts than asked for "
                   f"(dropped by rule: {sampling['dropped']})")
    first = summary.get("first_attempt")
    if first:
        changed = {k: v for k, v in (summary.get("settings") or {}).items() if first["settings"].get(k) != v}
        out.append(f"the first attempt failed to load ({first['cause']}); this result is the retry with "
                   + ", ".join(f"{k}={v}" for k, v in changed.items()) + f" (log: {first['log']})")
    client = summary.get("client")
    if client and client["saturated"]:
        out.append(f"the load generator was saturated (loop lag p99 {client['loop_lag_ms']['p99']:.1f} ms, "
                   f"max {client['loop_lag_ms']['max']:.0f} ms, CPU {client['cpu_pct']:.0f} %): timings are "
                   f"inflated by up to {client['loop_lag_ms']['p99']:.1f} ms at p99 — add workers (--workers N)")
    elif client and client.get("host_busy"):
        out.append(f"the load generator waited for a CPU (loop lag p99 {client['loop_lag_ms']['p99']:.1f} ms, of "
                   f"which at most {client['loop_lag_ms']['own_p99']:.1f} ms its own work): timings are inflated "
                   f"by up to {client['loop_lag_ms']['p99']:.1f} ms at p99 — other processes hold the host's "
                   "cores; give the client free ones")
    resumed = summary.get("resumed")
    if resumed:
        kept = resumed["kept_steps"]
        out.append(f"run again by --resume after it was cut short (the earlier attempt: {resumed['set_aside']})"
                   + (f"; its finished steps {', '.join(kept)} were kept and ran against that attempt's server start, "
                      "the others against this one" if kept else ""))
    if summary.get("workers_lost"):
        workers = summary["workers"]
        out.append(f"{workers['workers_lost']} load-generating worker(s) went missing during the run with "
                   f"{workers['lost_in_flight']} request(s) in flight; those requests are not in the records")
    if summary.get("status") in ("crashed", "server_lost"):
        gone = "died" if summary["status"] == "crashed" else "stopped answering"
        out.append(f"the server {gone} during the load: the streams it cut are `stream_cut` errors; the "
                   f"{summary['requests'].get('unsent', 0):,} prompts not sent after that are counted apart (unsent), "
                   "not as errors")
    if summary.get("stopped_by") == "ui_stop":
        out.append("the test was stopped in the web UI (Stop, or the form's run time) before every prompt was sent")
    if summary.get("stopped_by") == "time_cap":
        out.append("the time cap (max_seconds) ended the run before every prompt was sent")
    no_content = (summary.get("requests") or {}).get("no_content")
    if no_content:
        out.append(f"{no_content} of {summary['requests']['completed']} completed replies carried no content "
                   "(the model ended at once: EOS as its first token); they count in the token totals and "
                   "throughput, and have no TTFT or TPOT")
    out += output_control_notes(summary)
    if "chunks" in (summary.get("output_tokens_source") or []):
        out.append("some output token counts are chunk counts (the server sent no usage or timings)")
    if summary.get("crosscheck_agrees") is False:
        out.append("Locust's own counts differ from the per-request records; see locust_crosscheck")
    server = summary.get("server_metrics") or {}
    if str(server.get("unavailable_reason")).startswith(("http_", "not_llamacpp")):
        out.append(f"the server gave no llama.cpp /metrics ({server['unavailable_reason']}): no server-side "
                   "token counts (start llama-server with --metrics); memory was still sampled")
    if server.get("within_tolerance") is False:
        out.append("the server's /metrics token counts differ from the records by more than the incomplete "
                   "requests explain (another client on the server? a restart?); see server_metrics.vs_records")
    out += [line for line in (host_note(summary.get("host")),) if line]
    out += load_mode_notes(summary)
    return out
