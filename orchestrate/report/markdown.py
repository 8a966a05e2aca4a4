"""``summary.md``: a variant's page for a person, from its typed ``Summary``, every section of it here.

Stage: report (formatting only; every number was computed in ``aggregates/``). In reading order: the
conditions and the headline (``console.py``'s lines), a capacity search's answer and probes, the latency
table, the steady state beside the whole run, an open loop's arrivals and a ramp's stages, goodput, tokens,
multi-turn's per-turn table, the error classes, the diagnostics, the server, a sweep's or a web UI ramp's step
table, the plots, the notes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from orchestrate.report.aggregates.gputelemetry import gpu_line
from orchestrate.report.aggregates.pacing_figures import LATENCY_KEYS
from orchestrate.report.aggregates.serverside import server_side_line
from orchestrate.report.aggregates.uisteps import FEW_COMPLETED
from orchestrate.report.console import (
    condition_lines,
    energy_line,
    headline,
    host_line,
    latency_table,
    memory_line,
    server_metrics_line,
    trace_changes,
)
from orchestrate.report.formats import (
    SLO_LABELS,
    fmt_interval,
    fmt_ms,
    fmt_num,
    fmt_pct,
    fmt_percentile_intervals,
    slo_text,
)
from orchestrate.report.intervallines import intervals_section
from orchestrate.report.jsontypes import to_json
from orchestrate.report.notes import cap_warning
from orchestrate.report.requestlines import images_section
from orchestrate.report.schema import Summary
from orchestrate.report.schema.capacity import Capacity
from orchestrate.report.schema.common import Percentiles
from orchestrate.report.schema.steady import Goodput
from orchestrate.report.schema.sweep import Sweep
from orchestrate.report.schema.trace import Trace
from orchestrate.report.schema.ui import UiSteps
from orchestrate.scenario.slo import SLO_KEYS

DIAGNOSTICS = ("_The headline's prefill and decode tok/s are the aggregate: tokens over the load's wall time "
               "(docs/metrics.md). The figures below check it and explain it; they are not "
               "rival numbers: llama.cpp's per-slot timings are one request's own speed (they do not add up "
               "across slots), and its /metrics speed divides by the seconds it spent busy._")


def summary_md(summary: Summary, images: Sequence[str] = ()) -> str:
    """``summary.md``: headline, latency table, tokens, errors, server, cross-check, plots, notes.

    :param images: plot file names next to ``summary.md``, linked in order.
    """
    out = [f"# {summary.scenario} / {summary.variant}", ""]
    setup = condition_lines(summary)
    out += [f"- {line}" for line in setup] + ([""] if setup else [])
    out += [f"**{line}**  " for line in headline(summary)] + [""]
    out += capacity_section(summary.capacity)
    table = latency_table(summary)
    out += table + ([""] if table else [])
    out += intervals_section(summary)
    out += steady_state_section(summary)
    out += pacing_section(summary)  # open-loop arrivals, per-stage table
    out += trace_section(summary.trace)  # a trace replay: what was replayed, prefix reuse, latency by length
    out += images_section(summary.request.images if summary.request else None)  # figures by image size
    out += goodput_section(summary.goodput)
    out += tokens_section(summary)
    out += turns_section(summary)  # multi-turn replay: the per-turn table
    errors, said = summary.requests.errors_by_class, summary.requests.first_error
    if errors:
        out += ["| error class | count | first message |", "|---|---|---|"] + [
            f"| {k} | {v} | {_cell(said.get(k, ''))} |" for k, v in errors.items()] + [""]
    out += diagnostics(summary)
    out += server_table(summary)
    if summary.sweep is not None:
        out += ["", *sweep_section(summary.sweep)]
    if summary.ui_steps is not None:
        out += ["", *ui_steps_intro(summary.ui_steps), *step_table(summary.ui_steps)]
    if images:
        out += [""] + [f"![{Path(name).stem}]({name})" for name in images]
    if summary.notes:
        out += ["", "Notes:"] + [f"- {n}" for n in summary.notes]
    return "\n".join(out) + "\n"


def tokens_section(summary: Summary) -> list[str]:
    """The token totals, and how much of the output a reasoning model spent thinking."""
    t = summary.tokens
    out = ["| tokens | prompt | cached | output | per chunk |", "|---|---|---|---|---|",
           f"| total | {t.prompt:,} | {t.cached:,} | {t.output:,} | {fmt_num(summary.tokens_per_chunk, 2)} |", ""]
    reasoning = summary.reasoning
    if reasoning is not None:
        out += [f"reasoning: {reasoning.tokens:,} of the output tokens ({100 * (reasoning.share_of_output or 0):.0f} %) "
                f"in {reasoning.requests:,} replies, counted by {', '.join(reasoning.tokens_source)}", ""]
    return out


def diagnostics(summary: Summary) -> list[str]:
    """The figures that check the headline and explain it: energy not measured, llama.cpp's timings, the load
    generator, the connections, the drafter, Locust's own count, the server's counters, memory, the host."""
    out = ["### Diagnostics", "", DIAGNOSTICS, ""]
    st, spec = summary.server_timings, summary.speculative
    unmeasured = summary.energy.joules is None and energy_line(summary.energy)
    if unmeasured:
        out.append(f"{unmeasured}  ")
    if st is not None:
        out.append(f"llama.cpp timings (per slot): prefill {fmt_num(st.per_slot_prefill_tok_s)} tok/s, "
                   f"decode {fmt_num(st.per_slot_decode_tok_s)} tok/s  ")
    client = summary.client
    if client is not None:
        lag = client.loop_lag_ms
        out.append(f"load generator self-check: loop lag p50/p99/max {lag.p50:.2f} / {lag.p99:.2f} / {lag.max:.1f} ms, "
                   f"CPU {client.cpu_pct:.0f} % of a core ({client.workers} process(es)) — "
                   + ("**saturated: add workers**" if client.saturated else
                      "**host busy: the client waited for a CPU**" if client.host_busy else
                      "not saturated") + "  ")
    conn = summary.connections
    if conn is not None and conn.opened:
        refused = f", {conn.refused_retries:,} refused connection(s) retried" if conn.refused_retries else ""
        out.append(f"connections: {conn.opened:,} opened, each before its request's clock started (connect p50 "
                   f"{fmt_ms(_at(conn.connect_ms, 'p50'))}, max {fmt_ms(_at(conn.connect_ms, 'max'))}); "
                   f"{conn.reconnects:,} reopened mid-run after the server closed one{refused}  ")
    out.append("speculative decoding: " + (
        f"{spec.accepted_tokens:,}/{spec.draft_tokens:,} draft tokens accepted "
        f"({fmt_num(100 * spec.acceptance_rate if spec.acceptance_rate is not None else None)} %)"
        if spec is not None else "off (no draft counts in the server's timings)") + "  ")
    check = summary.locust_crosscheck
    if check is not None:
        csv = check.csv
        out.append(f"Locust's own stats: {check.requests} requests, {check.failures} failures, "
                   + (f"{check.no_content} without content, " if check.no_content else "")
                   + f"{check.prompt_tokens:,} prompt / {check.output_tokens:,} output tokens"
                   + (f" (CSV: {csv.requests} requests, {csv.failures} failures)" if csv is not None else "") + " — "
                   + ("agrees with the records" if summary.crosscheck_agrees else "**differs from the records**")
                   + "  ")
    out += [f"{line}  " for line in (server_metrics_line(summary.server_metrics), memory_line(summary.memory),
                                     server_side_line(summary.server_side), gpu_line(summary.gpus),
                                     host_line(summary.host)) if line]
    return out


def _at(stats: Percentiles | None, key: str) -> float | None:
    return getattr(stats, key) if stats is not None else None


def server_table(summary: Summary) -> list[str]:
    """How the server ran: its launcher, what it said about itself, when it was ready, how it exited, its log."""
    server = summary.server
    facts = to_json(server.facts) if server.facts is not None else {}
    out = ["", "| server | |", "|---|---|", f"| launcher | {server.launcher.kind if server.launcher else '–'} |"]
    out += [f"| {k} | {v} |" for k, v in facts.items() if v is not None and k != "chat_template"]
    if server.ready_s is not None:
        out.append(f"| ready after | {server.ready_s:.2f} s |")
    if server.exit_code is not None:
        out.append(f"| exit code | {server.exit_code} |")
    if server.log_tail:
        out += ["", "server log tail:", "```", *server.log_tail, "```"]
    return out


def capacity_section(block: Capacity | None, image: str | None = None) -> list[str]:
    """``summary.md``'s capacity section: the answer, then every probe in the order run."""
    if block is None:
        return []
    out = ["## Capacity", "", f"**{block.sentence}.**", "",
           f"Searched {block.over} over {block.range[0]:g}–{block.range[1]:g} "
           f"(bisected in log space to {100 * (block.precision or 0):g} %, then the boundary probed again): "
           f"{len(block.probes)} probes"
           + (f" in {block.wall_s:.0f} s" if block.wall_s else "") + "; each has its folder under `steps/`.", ""]
    cliff_at = block.cliff
    if cliff_at is not None:
        out += [f"Throughput fell while load rose: decode {fmt_num(cliff_at.decode_tok_s)} tok/s at "
                f"{cliff_at.value:g} against {fmt_num(cliff_at.peak_decode_tok_s)} at {cliff_at.peak_value:g}.", ""]
    out += [f"| probe | {block.over} | met the SLO | passed | decode tok/s | TTFT p99 | TPOT p99 | why |",
            "|---" * 8 + "|"]
    for p in block.probes:
        ss = p.steady_state
        met = "–" if p.attainment is None else f"{100 * p.attainment:.1f} %"
        out.append(f"| {p.n} | {p.value:g} | {met} | {'yes' if p.passed else 'no'} | "
                   f"{fmt_num(ss.decode_tok_s)} | {fmt_ms(ss.ttft_p99_ms)} | {fmt_ms(ss.tpot_p99_ms)} | "
                   f"{p.why or ''} |")
    return out + ([""] + [f"![capacity]({image})"] if image else []) + [""]


def _triple(stats: Percentiles | None) -> str:
    return "–" if not stats else " / ".join(fmt_ms(getattr(stats, p)) for p in ("p50", "p90", "p99"))


def steady_state_section(summary: Summary) -> list[str]:
    """``summary.md``'s steady-state section: the window beside the whole run, or why there is none."""
    block = summary.steady_state
    if block is None:
        return []
    out = ["## Steady state", ""]
    if not block.found:
        return out + [f"No steady-state window ({block.rule}): {block.reason}."
                      + (f" About {block.prompts_needed:,} prompts would give one." if block.prompts_needed
                         else ""), ""]
    thr, lat, req, ci, whole = (summary.throughput, summary.latency_ms, summary.requests, block.intervals,
                                summary.intervals)
    good, ss_good = summary.goodput, block.goodput
    rows = [("span", f"0–{summary.duration_s:.1f} s, {req.sent:,} requests",
             f"{block.start_s:.1f}–{block.end_s:.1f} s, {block.requests:,} requests "
             f"({100 * (block.share_of_requests or 0):.0f} %)"),
            ("prefill tok/s", fmt_num(thr.prefill_tok_s), fmt_num(block.prefill_tok_s) + fmt_interval(
                ci.prefill_tok_s if ci else None, fmt_num)),
            ("decode tok/s", fmt_num(thr.decode_tok_s), fmt_num(block.decode_tok_s) + fmt_interval(
                ci.decode_tok_s if ci else None, fmt_num)),
            ("req/s", fmt_num(thr.requests_per_s, 2), fmt_num(block.requests_per_s, 2) + fmt_interval(
                ci.requests_per_s if ci else None, lambda x: fmt_num(x, 2))),
            ("TTFT p50 / p90 / p99", _triple(lat.ttft) + fmt_percentile_intervals(whole.ttft_ms if whole else None),
             _triple(block.ttft_ms) + fmt_percentile_intervals(ci.ttft_ms if ci else None)),
            ("TPOT p50 / p90 / p99", _triple(lat.tpot) + fmt_percentile_intervals(whole.tpot_ms if whole else None),
             _triple(block.tpot_ms) + fmt_percentile_intervals(ci.tpot_ms if ci else None))]
    if good is not None and ss_good is not None and good.share is not None and ss_good.share is not None:
        rows.append(("requests meeting the SLO", f"{100 * good.share:.1f} %", f"{100 * ss_good.share:.1f} %"))
    out += ["| | whole run | steady state |", "|---|---|---|"] + [f"| {a} | {b} | {c} |" for a, b, c in rows]
    out += ["", "In brackets: 95 % intervals from this run alone, rates by batch means over "
                f"{ci.batches if ci else 0} slices of the window, percentiles by order statistics (docs/metrics.md); "
                "`?`: too few requests to bound that side."]
    flight = block.in_flight
    if flight is not None and flight.mean is not None:
        out += ["", f"The window: {block.rule} ({flight.threshold} of {flight.users}); in flight "
                    f"{flight.mean:.1f} on average, below {flight.threshold} for "
                    f"{100 * (flight.below_share or 0):.1f} % of its time (between a reply and its user's next "
                    "request). Tokens count by when they arrived in it; latencies are of the requests sent in it."]
    elif block.kept_up is not None:
        out += ["", f"The window: {block.rule}"
                    + ("" if block.kept_up else "; after it the sends fell behind the schedule") + "."]
    return out + [""]


def pacing_section(summary: Summary) -> list[str]:
    """The arrivals block and the per-stage table (nothing in a plain run)."""
    out: list[str] = []
    arr = summary.arrivals
    if arr is not None:
        delay = arr.send_delay_ms
        share = arr.late_share
        asked = (f"a trace's clock at {arr.time_scale:g}× its speed" if arr.mode == "trace" else
                 f"{fmt_num(arr.rate_asked, 2)} req/s asked ({arr.mode}"
                 + (f", burstiness {arr.burstiness:g}" if arr.burstiness not in (None, 1, 1.0) else "") + ")")
        out += [f"Open loop: {asked}, {fmt_num(arr.rate_scheduled, 2)} req/s scheduled, {fmt_num(arr.rate_achieved, 2)} sent; "
                f"at most {arr.users_cap} in flight  ", "",
                "| scheduled | sent | unsent | late | late share | send delay p50 | p99 | max |",
                "|---|---|---|---|---|---|---|---|",
                f"| {arr.scheduled} | {arr.sent} | {arr.unsent} | {arr.late} (> {arr.late_ms:g} ms) | "
                f"{'–' if share is None else f'{100 * share:.0f} %'} | {fmt_ms(_at(delay, 'p50'))} | "
                f"{fmt_ms(_at(delay, 'p99'))} | {fmt_ms(_at(delay, 'max'))} |", ""]
        lat = arr.latency_from_schedule_ms
        rows = [(label, stats) for _, label in LATENCY_KEYS if (stats := getattr(lat, label.lower()))]
        if rows:
            out += ["| from the scheduled time | p50 | p90 | p99 | mean | max |", "|---|---|---|---|---|---|"]
            out += [f"| {label} | " + " | ".join(fmt_ms(getattr(stats, c)) for c in ("p50", "p90", "p99", "mean", "max"))
                    + " |" for label, stats in rows]
            out.append("")
        if arr.cap_fell_behind:
            out += [f"**Warning: {cap_warning(arr)}.**", ""]
    if summary.stages:
        out += ["| stage | users | duration | began at | requests | completed | errors | peak in flight | "
                "decode tok/s | TTFT p50 | TTFT p99 | TPOT p50 |", "|---" * 12 + "|"]
        for s in summary.stages:
            began = "not reached" if not s.reached else f"{s.started_s:.1f} s"
            out.append(f"| {s.stage} | {s.users} | {s.duration_s:g} s | {began} | {s.requests} | "
                       f"{s.completed} | {s.errors} | {s.peak_in_flight} | {fmt_num(s.decode_tok_s)} | "
                       f"{fmt_ms(s.ttft_p50_ms)} | {fmt_ms(s.ttft_p99_ms)} | {fmt_ms(s.tpot_p50_ms)} |")
        out.append("")
    return out


def _cell(text: str) -> str:
    """Text as one markdown table cell: no pipes, no line breaks."""
    return " ".join(text.replace("|", "\\|").split()) or "–"


def trace_section(block: Trace | None) -> list[str]:
    """What of the trace was replayed and how, its prefix reuse against the server's, and latency by prompt length."""
    if block is None:
        return []
    c = block.conditions
    out = [f"Trace: {c.requests} of {c.rows:,} requests of {Path(c.path).name} ({c.format}), {c.span_s:g} s of trace "
           f"time at {c.time_scale:g}×; " + "; ".join(trace_changes(c)) + "  "]
    if block.ideal_prefix_reuse is not None:
        out.append(f"Prefix reuse: {100 * block.ideal_prefix_reuse:.1f} % of {c.blocks:,} blocks of {c.block_tokens} "
                   f"tokens seen before; at most {fmt_pct(block.ideal_cached_share)} of prompt tokens cacheable, the "
                   f"server reported {fmt_pct(block.server_cached_share)} cached  ")
    out += ["", "| prompt tokens | requests | completed | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 | E2E p99 |",
            "|---|---|---|---|---|---|---|---|"]
    for b in block.by_input_length:
        out.append(f"| {b.low:,}–{'' if b.high is None else f'{b.high:,}'} | {b.requests} | {b.completed} | "
                   f"{fmt_ms(_at(b.ttft_ms, 'p50'))} | {fmt_ms(_at(b.ttft_ms, 'p99'))} | {fmt_ms(_at(b.tpot_ms, 'p50'))} | "
                   f"{fmt_ms(_at(b.tpot_ms, 'p99'))} | {fmt_ms(_at(b.e2e_ms, 'p99'))} |")
    return out + [""]


def goodput_section(block: Goodput | None) -> list[str]:
    """The goodput lines of ``summary.md``; none without an SLO."""
    if block is None:
        return []
    share = block.share
    missed = block.missed_by
    misses = [f"{SLO_LABELS[key]} {count}" for key in SLO_KEYS if (count := getattr(missed, key)) is not None]
    misses += [f"errors {missed.error}", f"cancelled {missed.cancelled}"]
    return ["## Goodput", "",
            f"**{block.requests_meeting} requests met the SLO ({slo_text(block.slo)})"
            + (f": {100 * share:.1f} % of all sent" if share is not None else "")
            + f"; {fmt_num(block.requests_per_s, 2)} req/s, "
            f"{fmt_num(block.output_tokens_per_s)} output tok/s**  ",
            "missed by: " + ", ".join(misses) + " (a request over two limits counts under both)", ""]


def turns_section(summary: Summary) -> list[str]:
    """``summary.md``'s per-turn table and conversation line; nothing for single requests."""
    rows, conv = summary.turns, summary.conversations
    if not rows:
        return []

    def share(value: float | None) -> str:
        return "–" if value is None else f"{100 * value:.1f} %"

    out = ["| turn | requests | TTFT p50 | TTFT p99 | prompt tok | cached tok | prefilled tok | cache hit |",
           "|---|---|---|---|---|---|---|---|"]
    out += [f"| {r.turn} | {r.requests} | {fmt_ms(r.ttft_p50_ms)} | {fmt_ms(r.ttft_p99_ms)} | "
            f"{fmt_num(r.prompt_tokens_mean)} | {fmt_num(r.cached_tokens_mean)} | "
            f"{fmt_num(r.prefill_tokens_mean)} | {share(r.cache_hit_share)} |" for r in rows]
    if conv is not None:
        out.append("")
        out.append(f"conversations: {conv.completed}/{conv.planned} completed every turn "
                   f"({conv.turns_planned} turns planned); {conv.cut} cut short by the sampler "
                   f"({conv.turns_dropped} turns dropped: "
                   + (", ".join(f"{k} {v}" for k, v in conv.cut_by.items() if v) or "none") + ")  ")
    out += ["token columns are means over completed requests; cache hit = Σ cached / Σ prompt tokens  ", ""]
    return out


def sweep_section(block: Sweep) -> list[str]:
    """A sweep's step table in ``summary.md``, with the words above it."""
    return [f"## Sweep over `{block.key}`", "",
            f"Each step ran against the same server start after a warm-up of {block.warmup_prompts} "
            f"prompts (not counted), {block.settle_s:g} s apart; each has its own folder under `steps/`.", "",
            *step_table(block), *knee_lines(block)]


def knee_lines(block: Sweep) -> list[str]:
    """"The knee: 4 users ..." under a sweep's table (Kneedle on the steps' throughput), or nothing."""
    knee = block.knee
    if knee is None:
        return []
    unit = "decode tok/s" if knee.figure == "decode_tok_s" else "prefill tok/s"
    after = (f"; one step further, TTFT p50 ×{fmt_num(knee.ttft_p50_after, 2)}" if knee.ttft_p50_after is not None
             else "")
    return ["", f"The knee: `{block.key}` {knee.value:g}, where throughput stops growing with the load: "
                f"{fmt_num(knee.throughput)} {unit}, {fmt_pct(knee.share_of_best)} of the best step{after} "
                "(Kneedle: the step farthest above the line from the first step to the last, both scaled to 0..1)."]


def ui_steps_intro(block: UiSteps) -> list[str]:
    """The words above the step table of a web UI run, and the steps whose figures rest on few requests."""
    few = [f"{s.value} users ({s.completed} completed)" for s in block.steps if s.few]
    placed = ("Each user count set in the form is a step; its figures are over the requests sent while it was "
              "set (each request records the count it was sent under), the ramp to it included."
              if block.placed_by == "send" else
              f"Each user level held at least {block.hold_s:g} s (Locust's own history of the user count, by "
              "whole seconds) is a step; its figures are over the requests sent while it held (the first level "
              "from the first request).")
    return ["## Steps of the web UI ramp", "",
            placed + " A step is `stopped` when Stop cancelled some of its requests. The whole-run figures above "
            "pool every level.", ""] + ([f"Fewer than {FEW_COMPLETED} completed requests, figures from a handful of "
                                   f"values: {', '.join(few)}.", ""] if few else [])


def step_table(block: Sweep | UiSteps) -> list[str]:
    """One row per step (a sweep's, or a web UI ramp's levels): status, counts, decode and prefill tok/s, TTFT
    p50/p99, TPOT p50."""
    lines = [f"| {block.key} | status | completed / sent | errors | decode tok/s | prefill tok/s | TTFT p50 "
             "| TTFT p99 | TPOT p50 |", "|---" * 9 + "|"]
    for row in block.steps:
        if row.status == "not_run":
            lines.append(f"| {row.value} | not run |" + " – |" * 7)
            continue
        lines.append(f"| {row.value} | {row.status} | {row.completed} / {row.sent} | "
                     f"{row.errors} | {fmt_num(row.decode_tok_s)} | {fmt_num(row.prefill_tok_s)} | "
                     f"{fmt_ms(row.ttft_p50_ms)} | {fmt_ms(row.ttft_p99_ms)} | {fmt_ms(row.tpot_p50_ms)} |")
    return lines
