"""Every line ``tokenswarm run`` and ``report`` print for a variant, from its typed ``Summary``: the conditions,
the headline, the steady state, the energy, the server's peak memory and the latency table.

Stage: report (formatting only; every number was computed in ``aggregates/``). ``summary.md``
(``markdown.py``) opens with the same lines and has the diagnostics lines (memory, the server's counters, the
host) among its own. The conditions come first, before any number: the model (name, file, size), the server
(launcher, build, slots × context), the load (users or rate, the time cap, the warm-up), the prompts
(dataset, how many, seed, filters, ``max_tokens``) and the host. For a server tokenswarm did not start
(``--url``) every server figure is what the server reported, and says so: nothing comes from the scenario's
``server:`` section.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrate.report.formats import fmt_bytes, fmt_ms, fmt_num
from orchestrate.report.intervallines import until_line
from orchestrate.report.requestlines import inputs_line, p50, request_lines, request_text
from orchestrate.report.schema import Summary
from orchestrate.report.schema.common import MedianMeanMax
from orchestrate.report.schema.cost import Cost
from orchestrate.report.schema.headline import Reasoning
from orchestrate.report.schema.machine import Energy, Host
from orchestrate.report.schema.runfacts import ModelFile
from orchestrate.report.schema.server import Memory, ServerFacts, ServerMetrics
from orchestrate.report.schema.steady import SteadyState
from orchestrate.scenario.spec import LAUNCHER_KINDS, RANDOM_DATASET
from orchestrate.scenario.trace import TraceConditions


def console_lines(summary: Summary) -> list[str]:
    """What ``tokenswarm run`` and ``report`` print of a variant: conditions, headline, the server's peak memory
    (the reference study's last figure; ``summary.md`` has it among its diagnostics), latencies."""
    memory = memory_line(summary.memory)
    return condition_lines(summary) + headline(summary) + ([memory] if memory else []) + latency_table(summary)


# --- the conditions -------------------------------------------------------------------------------

SAMPLING_LABELS = (("load.sampling.min_prompt_tokens", "prompt ≥ {} tokens"),
                   ("load.sampling.max_prompt_tokens", "prompt ≤ {} tokens"),
                   ("load.sampling.min_output_tokens", "reply ≥ {} tokens"),
                   ("load.sampling.max_total_tokens", "prompt + reply ≤ {} tokens"),
                   ("load.sampling.fixed_output_tokens", "every reply {} tokens"))


def condition_lines(summary: Summary) -> list[str]:
    """The first lines of ``summary.md`` (and of the console): model, server, load, prompts, host;
    none for a summary written before settings were kept (nothing is invented)."""
    settings = summary.settings
    if not settings:
        return []
    facts = summary.server.facts
    kind = LAUNCHER_KINDS.get(settings.get("server.launcher") or "")
    external = kind is not None and not kind.starts_server
    lines = [_model(settings, facts, summary.model, external), _server(settings, facts, external),
             _load(summary, settings), _prompts(summary, settings), _host(summary)]
    return [line for line in lines if line]


def _model(settings: dict[str, Any], facts: ServerFacts | None, model: ModelFile | None, external: bool) -> str:
    path = (facts.model_path or facts.model_id) if facts else None
    file_name = Path(path).name if path else None
    named = settings.get("server.reported.model") if external else settings.get("server.model")
    text = f"model: {named or file_name or 'unknown'}"
    size = model.bytes if model else None
    details = [d for d in (file_name if file_name and file_name != named else None,
                           fmt_bytes(size) if size else None) if d]
    draft = None if external else settings.get("server.draft_model")
    return (text + (f" ({', '.join(details)})" if details else "") + (f", draft model {draft}" if draft else "")
            + (" — as the server reported it" if external else ""))


def _server(settings: dict[str, Any], facts: ServerFacts | None, external: bool) -> str:
    launcher = settings.get("server.launcher")
    text = (f"server: at {settings.get('server.url')}, not started by tokenswarm (its settings are unknown "
            "but for what it reports)" if external else f"server: {launcher} launcher")
    if facts and facts.build:
        text += f", build {facts.build}"
    if facts and facts.total_slots:
        text += f", {facts.total_slots} slots × {fmt_num(facts.per_slot_ctx, 0)} ctx"
    flags = {k.removeprefix("server.flags."): v for k, v in settings.items() if k.startswith("server.flags.")}
    if flags and not external:
        text += "; flags " + " ".join(f"{k}={v}" for k, v in sorted(flags.items()))
    return text


def _load(summary: Summary, settings: dict[str, Any]) -> str:
    if settings.get("search.over"):
        low, high = settings["search.range"]
        text = (f"load: a capacity search over {settings['search.over']} from {low:g} to {high:g} (each probe a step: "
                f"{'open loop, at most ' + str(settings.get('load.users')) + ' in flight' if settings['search.over'] == 'rate' else 'closed loop'})")
    elif settings.get("load.trace.time_scale") is not None:
        text = (f"load: trace {settings.get('load.trace.path')} replayed at {fmt_num(settings['load.trace.time_scale'], 2)}× "
                f"its speed (open loop), at most {settings.get('load.users')} in flight")
    elif settings.get("load.rate") is not None:
        text = (f"load: open loop {fmt_num(settings['load.rate'], 2)} req/s ({settings.get('load.arrival')}), "
                f"at most {settings.get('load.users')} in flight")
    elif settings.get("load.stages"):
        text = "load: stages of " + " → ".join(str(s["users"]) for s in settings["load.stages"]) + " users"
    elif summary.users_over_time is not None:
        levels = " → ".join(str(x.users) for x in summary.users_over_time.levels)
        text = f"load: users set in the web UI: {levels} (at most {summary.users_over_time.max}), closed loop"
    else:
        text = f"load: {settings.get('load.users')} users (concurrency), closed loop"
    cap = settings.get("load.max_seconds")
    text += f", time cap {fmt_num(cap, 0)} s" if cap else ", no time cap"
    kind = request_text(settings)
    if kind:
        text += f"; requests: {kind}"
    warmup = (summary.warmup.prompts if summary.warmup else None) or \
        (summary.sweep.warmup_prompts if summary.sweep else None)
    if warmup:
        text += f", after a warm-up of {warmup} prompts"
    repeat = summary.repeat
    if repeat is not None:
        text += f"; repeat {repeat.index} of {repeat.of} (server start {repeat.order} of the run)"
    return text


def _prompts(summary: Summary, settings: dict[str, Any]) -> str:
    sampling = summary.sampling
    dataset = settings.get("load.dataset")
    where = sampling.dataset if sampling else None
    count = summary.planned_prompts if settings.get("search.over") else settings.get("load.num_prompts")
    eos = ", ignore_eos (every reply runs to max_tokens)" if settings.get("load.ignore_eos") else ""
    if summary.trace is not None:
        c = summary.trace.conditions
        return (f"prompts: {c.requests} of {c.rows:,} from trace {Path(c.path).name} ({c.format}), "
                + ", ".join(trace_changes(c)) + ", lengths as the server counts them"
                + (f" ({sampling.inexact} not at their trace length: see the notes)" if sampling and sampling.inexact
                   else "") + f", max_tokens per request{eos}, seed {settings.get('load.seed')}")
    if dataset == RANDOM_DATASET:
        prefix = settings.get("load.prefix_tokens")
        return (f"prompts: {count} random, {settings.get('load.input_tokens')} tokens each as the server counts them"
                + (f" (the first {prefix} shared)" if prefix else "") + f", max_tokens {settings.get('load.output_tokens')}"
                + f"{eos}; text from {Path(where).name if where else 'unknown'}, seed {settings.get('load.seed')}")
    if str(dataset).endswith(".jsonl"):  # your own prompts (load.promptrows): no ShareGPT filters
        rows = f" of its {sampling.complete_conversations:,} rows" if sampling and sampling.complete_conversations else ""
        return (f"prompts: {count}{rows} from {Path(str(dataset)).name}, seed {settings.get('load.seed')}, "
                f"max_tokens {settings.get('load.max_tokens')} unless a row sets its own{eos}")
    text = f"prompts: {count} from {dataset}"
    if where and Path(where).name != dataset:
        text += f" ({Path(where).name})"
    if sampling and sampling.complete_conversations:
        text += f" of {sampling.complete_conversations:,} conversations" + (
            " (a truncated file: its complete ones)" if sampling.truncated else "")
    text += f", seed {settings.get('load.seed')}"
    filters = [label.format(settings[key]) for key, label in SAMPLING_LABELS if settings.get(key) is not None]
    text += (", " + ", ".join(filters)) if filters else ""
    return text + f", max_tokens {settings.get('load.max_tokens')}{eos}"


def trace_changes(c: TraceConditions) -> list[str]:
    """A trace replay's window and every cut it made, in words (the prompts line here, ``summary.md``'s trace)."""
    window = f"window {c.start_s:g} s" + (f" + {c.duration_s:g} s" if c.duration_s is not None else " to the end")
    return [window] + [x for x in (
        f"input × {c.input_scale:g}" if c.input_scale != 1 else "",
        f"{c.clipped_input} prompts cut to {c.max_input_tokens} tokens" if c.clipped_input else "",
        f"{c.clipped_output} replies cut to {c.max_output_tokens} tokens" if c.clipped_output else "",
        f"skipped {', '.join(f'{why} {n}' for why, n in c.skipped.items())}" if c.skipped else "") if x]


def _host(summary: Summary) -> str | None:
    machine, host = summary.machine, summary.host
    if machine is None and host is None:
        return None
    text = "host: " + (f"{machine.hostname}, {machine.cpu_count} CPUs" if machine else "this host")
    if host is not None:
        text += " — busy while it ran (see the notes)" if host.busy else " — quiet while it ran"
    return text


# --- the headline ---------------------------------------------------------------------------------

def headline(summary: Summary) -> list[str]:
    """The three lines a person reads first, in the reference study's terms."""
    if summary.status not in (None, "completed"):
        cause = summary.server.cause or summary.error or ""
        lines = [f"status: {summary.status}" + (f": {cause}" if cause else "")]
        if summary.server.hint:
            lines.append(f"hint: {summary.server.hint}")
        if not summary.requests.sent:
            return lines
    else:
        lines = []
    thr = summary.throughput
    lines.append(outcome_line(summary))
    kind = summary.request
    if kind is not None and kind.inputs is not None:  # embeddings, rerank: one body, no TTFT or TPOT
        lines.append(inputs_line(kind.endpoint, kind.inputs, thr.requests_per_s))
        lines.append(f"latency median {fmt_ms(p50(summary.latency_ms.e2e))}, "
                     f"p99 {fmt_ms(summary.latency_ms.e2e.p99 if summary.latency_ms.e2e else None)}")
    else:
        lines.append(f"prefill {fmt_num(thr.prefill_tok_s)} tok/s, decode {fmt_num(thr.decode_tok_s)} tok/s, "
                     f"{fmt_num(thr.requests_per_s, 2)} req/s")
        lines.append(f"TTFT median {fmt_ms(p50(summary.latency_ms.ttft))}, "
                     f"TPOT median {fmt_ms(p50(summary.latency_ms.tpot))}" + reasoning_text(summary.reasoning))
    lines += request_lines(kind)
    steady = steady_state_line(summary.steady_state, one_body=kind is not None and kind.inputs is not None)
    power = energy_line(summary.energy) if summary.energy.joules is not None else None
    found = summary.capacity
    return ([f"capacity: {found.sentence}"] if found is not None else []) + lines + [
        x for x in (steady, until_line(summary.until), power, cost_line(summary.cost)) if x]


def cost_line(block: Cost | None) -> str | None:
    """"cost: $0.0123 for the run (time $0.0100 + energy $0.0023), $1.95 per million output tokens, ..."."""
    if block is None or block.usd is None:
        return None if block is None else f"cost: not priced — {block.energy_unpriced or 'no price given'}"
    parts = [f"time ${block.usd_time:.4f}" if block.usd_time is not None else "",
             f"energy ${block.usd_energy:.4f}" if block.usd_energy is not None else ""]
    text = f"cost: ${block.usd:.4f} for the run ({' + '.join(p for p in parts if p)})"
    if block.usd_per_mtok_output is not None:
        text += f", ${block.usd_per_mtok_output:,.2f} per million output tokens"
    if block.usd_per_mtok_input is not None:
        text += f", ${block.usd_per_mtok_input:,.2f} per million input tokens"
    if block.energy_unpriced:
        text += f" (energy not priced: {block.energy_unpriced})"
    return text



def outcome_line(summary: Summary) -> str:
    """What became of the prompts asked: "52/1,674 done, 16 cut when the server died at 6.1 s,
    1,606 not sent in 12.0 s" (counts from ``headline``/``accounting``; they add up to the plan)."""
    req = summary.requests
    planned = summary.planned_prompts or req.sent
    no_content = f" ({req.no_content} without content)" if req.no_content else ""
    parts = [f"{req.completed}/{planned} done{no_content}"]  # the reference study's phrasing
    down, errors = summary.server_down, req.errors
    if down is not None:
        mid, before = down.streams_cut, down.dropped_before_response
        cut = mid + before
        gone = "died" if summary.status == "crashed" else "was lost"
        split = f" ({mid:,} mid-stream, {before:,} before a response)" if mid and before else ""
        parts.append(f"{cut:,} cut when the server {gone} at {down.at_s:.1f} s{split}" if cut
                     else f"the server {gone} at {down.at_s:.1f} s")
        errors -= cut
        if errors:
            parts.append(f"{errors:,} other errors")
    else:
        parts.append(f"{errors:,} errors")
    if req.cancelled:
        parts.append(f"{req.cancelled:,} cancelled at the stop")
    if req.unsent:
        parts.append(f"{req.unsent:,} not sent")
    stopped = summary.stopped_by
    return (", ".join(parts) + f" in {summary.duration_s:.1f} s"
            + (f" (stopped by {stopped})" if stopped not in (None, "num_prompts") else ""))


def reasoning_text(reasoning: Reasoning | None) -> str:
    """", TTFO median 2.1 s after 180 reasoning tokens (median)": a reasoning model's answer apart."""
    if reasoning is None:
        return ""
    share = reasoning.share_of_output
    return (f", TTFO (first answer token) median {fmt_ms(p50(reasoning.ttfo_ms))} after "
            f"{fmt_num(p50(reasoning.tokens_per_request), 0)} reasoning tokens (median; "
            f"{fmt_num(None if share is None else 100 * share, 0)} % of the output)")


def steady_state_line(block: SteadyState | None, one_body: bool = False) -> str | None:
    """One line for the terminal: the window's decode, TTFT and TPOT (requests per second for embeddings and
    rerank, which have neither), or why there is none."""
    if block is None:
        return None
    if not block.found:
        needed = f" (about {block.prompts_needed:,} prompts would give one)" if block.prompts_needed else ""
        return f"steady state: none — {block.reason}{needed}"
    figures = (f"{fmt_num(block.requests_per_s, 2)} req/s" if one_body else
               f"decode {fmt_num(block.decode_tok_s)} tok/s, "
               f"TTFT median {fmt_ms(p50(block.ttft_ms))}, TPOT median {fmt_ms(p50(block.tpot_ms))}")
    return (f"steady state {block.start_s:.1f}–{block.end_s:.1f} s ({block.requests:,} requests, "
            f"{100 * (block.share_of_requests or 0):.0f} %): {figures}")



POWER_SOURCES = {"nvml": "NVML energy counter, all GPUs", "nvidia-smi": "nvidia-smi power.draw, all GPUs",
                 "rapl": "RAPL, CPU packages"}


def energy_line(block: Energy | None) -> str | None:
    """"energy 1,234 J over 10.0 s: 0.95 output tokens/J, 1.05 J per output token, 123 W mean (idle 60 W;
    nvidia-smi power.draw)", or why there is none."""
    if block is None:
        return None
    if block.joules is None:
        return f"energy: not measured — {block.unavailable}"
    idle = f"idle {block.idle_watts:.0f} W; " if block.idle_watts is not None else ""
    return (f"energy {block.joules:,.0f} J over {block.window_s:.1f} s: "
            f"{block.output_tokens_per_joule:.3g} output tokens/J, {block.joules_per_output_token:.3g} J per "
            f"output token, {block.mean_watts:.0f} W mean ({idle}{POWER_SOURCES.get(block.source or '', block.source)}"
            + (f", {block.devices}" if block.devices else "") + ")")


# --- memory, the server's counters, the host ------------------------------------------------------

MEMORY_SOURCES = {"process_tree": "RSS of the server's processes", "container": "the container's own memory",
                  "nvidia-smi": "nvidia-smi", "system": "system memory in use: unified memory, whole machine"}


def memory_line(mem: Memory) -> str | None:
    """Peak memory of the server and of the GPU (or the machine, on unified memory), with sources."""
    parts = []
    if mem.peak_bytes is not None:
        parts.append(f"server peak {fmt_bytes(mem.peak_bytes)} ({MEMORY_SOURCES.get(mem.source or '', mem.source)})")
    if mem.gpu_peak_bytes is not None:
        total = f" of {fmt_bytes(mem.gpu_total_bytes)}" if mem.gpu_total_bytes else ""
        label = "memory" if mem.gpu_source == "system" else "GPU"
        parts.append(f"{label} peak {fmt_bytes(mem.gpu_peak_bytes)}{total} "
                     f"({MEMORY_SOURCES.get(mem.gpu_source or '', mem.gpu_source)})")
    return "memory: " + "; ".join(parts) if parts else None


SERVER_TOKEN_LABELS = (("prefill_tokens", "prefill"), ("cached_tokens", "cached"), ("output_tokens", "output"))


def server_metrics_line(sm: ServerMetrics) -> str | None:
    """Tokens counted by the server's ``/metrics`` next to the records' count of the same tokens."""
    if not sm.available:
        return None
    counts = sm.vs_records
    shown = [f"{label} {c.server:,} (records {c.records:,})"
             for key, label in SERVER_TOKEN_LABELS if (c := getattr(counts, key) if counts else None)]
    agrees = sm.agrees_with_records
    verdict = "agrees with the records" if agrees else "differs from the records" if agrees is False else ""
    if agrees is False:
        verdict += (", within what incomplete requests explain" if sm.within_tolerance
                    else ", **more than incomplete requests explain**")
    return ("server /metrics tokens: " + ", ".join(shown) + (f" — {verdict}" if verdict else "")
            + f"; its own speed (Σ tokens / Σ seconds it counted): prefill {fmt_num(sm.busy_prefill_tok_s)} "
            f"tok/s, decode {fmt_num(sm.busy_decode_tok_s)} tok/s")


def host_line(host: Host | None) -> str | None:
    """The host's own load beside the numbers: foreign CPU and steal (``orchestrate.load.host_probe``)."""
    if host is None:
        return None
    def pair(stats: MedianMeanMax | None) -> str:
        return "–" if not stats else f"{stats.p50:.1f} / {stats.max:.1f} %"
    found = {"launcher": "", "port": " (server found by its port)",
             "unknown": " (server's processes unknown: its CPU is counted as foreign)"}.get(host.server_processes or "", "")
    return (f"host: other processes' CPU p50/max {pair(host.foreign_cpu_pct)} of a core{found}, steal p50/max "
            f"{pair(host.steal_pct)}" + (" — **busy**" if host.busy else " — quiet"))


# --- latencies ------------------------------------------------------------------------------------

LATENCY_ROWS = (("ttft", "TTFT"), ("ttfo", "TTFO (answer)"), ("tpot", "TPOT"), ("answer_tpot", "TPOT (answer)"),
                ("itl", "ITL (inter-chunk)"), ("e2e", "E2E"))
"""The TTFO and answer rows are shown for a reasoning model's replies only (else they repeat TTFT and TPOT)."""
LATENCY_COLUMNS = ("p50", "p90", "p99", "mean", "max")


def latency_table(summary: Summary) -> list[str]:
    """The latency percentiles as markdown table lines (printed at the end of a run; in ``summary.md`` too)."""
    lat, reasoning = summary.latency_ms, summary.reasoning
    found = {"ttft": lat.ttft, "ttfo": lat.ttfo if reasoning else None, "tpot": lat.tpot,
             "answer_tpot": reasoning.answer_tpot_ms if reasoning else None, "itl": lat.itl, "e2e": lat.e2e}
    if not any(found.values()):
        return []
    rows = ["| latency | " + " | ".join(LATENCY_COLUMNS) + " |", "|---" * (len(LATENCY_COLUMNS) + 1) + "|"]
    for key, label in LATENCY_ROWS:
        stats = found[key]
        if stats:
            rows.append(f"| {label} | " + " | ".join(fmt_ms(getattr(stats, c)) for c in LATENCY_COLUMNS) + " |")
    return rows
