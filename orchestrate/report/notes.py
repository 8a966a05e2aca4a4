"""The notes: plain-language caveats a reader must see next to the numbers (``summary.json``'s ``notes``).

Stage: report. Their one home, each read from the typed ``Summary`` or its blocks: how the prompts were
measured and sampled, a retry, a late client, a resumed run, lost workers, a server that went down, how the
run was stopped, replies without content or shorter than asked (``output_control_notes``), counts that
disagree, a busy host (``busy_reasons``, ``host_note``), an open loop's cap that fell behind and a ramp's
stages (``pacing_notes``, ``cap_warning``). ``summary.py:build_summary`` writes them; ``console.py``,
``markdown.py`` and the comparison name some of them again (``busy_reasons``, ``cap_warning``).
"""

from __future__ import annotations

from orchestrate.report.aggregates.gputelemetry import throttle_note
from orchestrate.report.formats import fmt_num
from orchestrate.report.schema.machine import Host
from orchestrate.report.schema.pacing import Arrivals
from orchestrate.report.schema.summary import Summary
from orchestrate.scenario.host_limits import BURST_MIN_S, BURST_SHARE, FOREIGN_CPU_LIMIT_PCT, STEAL_LIMIT_PCT

TOKEN_COUNTERS = {
    "server_tokenize": "exact: the server's /apply-template and /tokenize",
    "server_tokenize_local_template": "the server's /tokenize over its /props chat template rendered by "
                                      "tokenswarm (the server has no /apply-template)",
    "server_tokenize_no_template": "the server's /tokenize over the message text alone: the chat template's "
                                   "tokens are not counted (no /apply-template, no usable template in /props)",
    "estimate_chars_div_4": "ESTIMATED (characters / 4): the server has no /tokenize",
}
"""How prompt lengths were measured (``summary.json`` ``sampling.token_counter``, set by pre-flight), best first."""


def notes(summary: Summary) -> list[str]:
    """Plain-language caveats a reader must see next to the numbers."""
    out = []
    sampling = summary.sampling
    counter = (sampling.token_counter if sampling is not None else "") or "server_tokenize"
    if counter != "server_tokenize":
        out.append(f"prompt lengths: {TOKEN_COUNTERS.get(counter, counter)}"
                   + ("" if counter == "server_tokenize_local_template" else "; sampling limits are approximate"))
    if sampling is not None and sampling.truncated:
        out.append(f"the dataset file is truncated (allow_truncated): prompts were sampled from its "
                   f"{sampling.complete_conversations:,} complete conversations only")
    if sampling is not None and sampling.shortfall:
        out.append(f"the dataset yielded {sampling.shortfall} fewer prompts than asked for "
                   f"(dropped by rule: {sampling.dropped})")
    first = summary.first_attempt
    if first is not None:
        changed = {k: v for k, v in summary.settings.items() if first.settings.get(k) != v}
        out.append(f"the first attempt failed to load ({first.cause}); this result is the retry with "
                   + ", ".join(f"{k}={v}" for k, v in changed.items()) + f" (log: {first.log})")
    out += client_notes(summary)
    resumed = summary.resumed
    if resumed is not None:
        kept = resumed.kept_steps
        out.append(f"run again by --resume after it was cut short (the earlier attempt: {resumed.set_aside})"
                   + (f"; its finished steps {', '.join(kept)} were kept and ran against that attempt's server start, "
                      "the others against this one" if kept else ""))
    if summary.workers_lost and summary.workers is not None:
        workers = summary.workers
        out.append(f"{workers.workers_lost} load-generating worker(s) went missing during the run with "
                   f"{workers.lost_in_flight} request(s) in flight; those requests are not in the records")
    if summary.status in ("crashed", "server_lost"):
        gone = "died" if summary.status == "crashed" else "stopped answering"
        out.append(f"the server {gone} during the load: the streams it cut are `stream_cut` errors; the "
                   f"{summary.requests.unsent:,} prompts not sent after that are counted apart (unsent), "
                   "not as errors")
    if summary.stopped_by == "ui_stop":
        out.append("the test was stopped in the web UI (Stop, or the form's run time) before every prompt was sent")
    if summary.stopped_by == "time_cap":
        out.append("the time cap (max_seconds) ended the run before every prompt was sent")
    if summary.requests.no_content:
        out.append(f"{summary.requests.no_content} of {summary.requests.completed} completed replies carried no "
                   "content (the model ended at once: EOS as its first token); they count in the token totals and "
                   "throughput, and have no TTFT or TPOT")
    out += output_control_notes(summary)
    if "chunks" in summary.output_tokens_source:
        out.append("some output token counts are chunk counts (the server sent no usage or timings)")
    if summary.crosscheck_agrees is False:
        out.append("Locust's own counts differ from the per-request records; see locust_crosscheck")
    server = summary.server_metrics
    if str(server.unavailable_reason).startswith(("http_", "not_llamacpp")):
        out.append(f"the server gave no llama.cpp /metrics ({server.unavailable_reason}): no server-side "
                   "token counts (start llama-server with --metrics); memory was still sampled")
    if server.within_tolerance is False:
        out.append("the server's /metrics token counts differ from the records by more than the incomplete "
                   "requests explain (another client on the server? a restart?); see server_metrics.vs_records")
    out += [line for line in (host_note(summary.host), throttle_note(summary.gpus)) if line]
    out += pacing_notes(summary)
    return out


def client_notes(summary: Summary) -> list[str]:
    """A load generator that was late: saturated by its own work (add workers), or waiting for a core."""
    client = summary.client
    if client is None:
        return []
    lag = client.loop_lag_ms
    if client.saturated:
        return [f"the load generator was saturated (loop lag p99 {lag.p99:.1f} ms, max {lag.max:.0f} ms, CPU "
                f"{client.cpu_pct:.0f} %): timings are inflated by up to {lag.p99:.1f} ms at p99 — add workers "
                "(--workers N)"]
    if client.host_busy:
        return [f"the load generator waited for a CPU (loop lag p99 {lag.p99:.1f} ms, of which at most "
                f"{lag.own_p99:.1f} ms its own work): timings are inflated by up to {lag.p99:.1f} ms at p99 — other "
                "processes hold the host's cores; give the client free ones"]
    return []


def output_control_notes(summary: Summary) -> list[str]:
    """Replies shorter than asked under ``ignore_eos`` (all of them: the server ignores the field), prompts not
    cut to their exact length, reasoning counted from the stream."""
    out = []
    requests, load = summary.requests, summary.load
    short, completed = requests.short_replies, requests.completed
    ignore_eos = load is not None and load.ignores_eos
    if ignore_eos and short and short == completed:
        out.append(f"the server ignored ignore_eos: every one of the {completed:,} completed replies ended before its "
                   "max_tokens, so the output lengths are the model's own, not the ones asked for")
    elif ignore_eos and short:
        out.append(f"{short:,} of {completed:,} completed replies ended before their max_tokens despite ignore_eos "
                   "(a stop string, or the slot's context full)")
    inexact = summary.sampling.inexact if summary.sampling is not None else None
    if inexact:
        out.append(f"{inexact:,} " + ("trace prompts are not at their trace length (shorter than the chat template's own "
                                      "tokens allow after input_scale, or no cut exact)" if summary.trace is not None
                                      else "random prompts could not be cut to their exact length")
                   + "; each is sent and counted "
                   "at its measured length (prompts.jsonl)")
    if summary.reasoning is not None and "chunks" in summary.reasoning.tokens_source:
        out.append("reasoning tokens are counted one per reasoning event of the stream: the server did not report "
                   "usage.completion_tokens_details.reasoning_tokens (an event of several tokens would be undercounted)")
    return out


def busy_reasons(host: Host | None) -> list[str]:
    """What kept the host busy, past its limits (empty for a quiet host or no readings)."""
    if host is None:
        return []
    parts = []
    foreign, steal, limits = host.foreign_cpu_pct, host.steal_pct, host.limits
    limit = FOREIGN_CPU_LIMIT_PCT if limits.foreign_cpu_pct is None else limits.foreign_cpu_pct  # older: the default
    steal_limit = STEAL_LIMIT_PCT if limits.steal_pct is None else limits.steal_pct
    if foreign is not None and foreign.p50 is not None and foreign.p50 > limit:
        parts.append(f"other processes used {foreign.p50:.0f} % of a core (p50, max {foreign.max:.0f} %)")
    elif foreign is not None and (foreign.mean or 0) > BURST_SHARE * limit and \
            host.foreign_cpu_s_over_limit >= BURST_MIN_S:
        parts.append(f"other processes used {foreign.mean:.1f} % of a core on average, in bursts "
                     f"({host.foreign_cpu_s_over_limit} s over {limit:g} %; p50 {foreign.p50:.0f} %, max "
                     f"{foreign.max:.0f} %)")
    if steal is not None and steal.p50 is not None and steal.p50 > steal_limit:
        parts.append(f"the hypervisor took {steal.p50:.0f} % of the CPU time (steal p50, max {steal.max:.0f} %)")
    if host.foreign_gpu_processes:
        parts.append(f"other GPU processes ran: {', '.join(host.foreign_gpu_processes)}")
    return parts


def host_note(host: Host | None) -> str | None:
    """The warning a reader must see when the host was not quiet."""
    parts = busy_reasons(host)
    if host is None or not parts:
        return None
    unknown = (" (the server's processes were not found on this host, so its own CPU is in that figure)"
               if host.server_processes == "unknown" else "")
    return ("the host was busy while this variant ran: " + "; ".join(parts) + unknown
            + " — its numbers are not comparable with a quiet run")


def pacing_notes(summary: Summary) -> list[str]:
    """The caveats of an open-loop run (``arrivals``) or a ramp (``stages``)."""
    out = []
    arr = summary.arrivals
    if arr is not None and arr.cap_fell_behind:
        out.append(cap_warning(arr))
    elif arr is not None and arr.unsent_not_due:
        out.append(f"the run ended with {arr.unsent_not_due} scheduled request(s) not yet due; they were "
                   "never sent (the time cap cut the schedule short)")
    if summary.stopped_by == "stages_end":
        out.append("the last stage ended before every prompt was sent; requests in flight then were cancelled")
    skipped = [s.stage for s in summary.stages if not s.reached]
    if skipped:
        out.append(f"stage(s) {', '.join(map(str, skipped))} never began (the run ended first)")
    return out


def cap_warning(arr: Arrivals) -> str:
    """An open loop whose concurrency cap fell behind its schedule: what users would see."""
    pace = f"the trace at {arr.time_scale:g}×" if arr.mode == "trace" else f"{fmt_num(arr.rate_asked, 1)} req/s"
    return (f"the concurrency cap of {arr.users_cap} could not keep up with {pace}: {arr.late} late (> {arr.late_ms:g} ms), {arr.unsent} unsent "
            f"({arr.unsent_overdue} of them already due) — latencies from the scheduled time are the ones "
            "users would see")
