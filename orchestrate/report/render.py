"""``summary.json``, ``summary.md`` and the plots of a variant: formatting only.

Stage: report. Every number shown here was computed in ``aggregates/``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrate.report import pacing_report, sweep_report
from orchestrate.report.aggregates import capacity, energy, goodput, steadystate, turns, uisteps
from orchestrate.report.aggregates.chunks import output_tokens_per_second
from orchestrate.report.aggregates.servermetrics import metrics_timeline
from orchestrate.report.formats import GIB, MIB, fmt_bytes, fmt_ms, fmt_num, summary_numbers  # noqa: F401 (re-exported)
from orchestrate.report.jsontypes import to_json
from orchestrate.report.provenance import condition_lines
from orchestrate.report.schema import Summary
from orchestrate.report.vllm_format import write_vllm_bench
from orchestrate.results import VariantPaths

MEMORY_SOURCES = {"process_tree": "RSS of the server's processes", "container": "the container's own memory",
                  "nvidia-smi": "nvidia-smi", "system": "system memory in use: unified memory, whole machine"}


def memory_line(summary: dict[str, Any]) -> str | None:
    """Peak memory of the server and of the GPU (or the machine, on unified memory), with sources."""
    mem = summary.get("memory") or {}
    parts = []
    if mem.get("peak_bytes") is not None:
        parts.append(f"server peak {fmt_bytes(mem['peak_bytes'])} ({MEMORY_SOURCES.get(mem['source'], mem['source'])})")
    if mem.get("gpu_peak_bytes") is not None:
        total = f" of {fmt_bytes(mem['gpu_total_bytes'])}" if mem.get("gpu_total_bytes") else ""
        label = "memory" if mem.get("gpu_source") == "system" else "GPU"
        parts.append(f"{label} peak {fmt_bytes(mem['gpu_peak_bytes'])}{total} "
                     f"({MEMORY_SOURCES.get(mem['gpu_source'], mem['gpu_source'])})")
    return "memory: " + "; ".join(parts) if parts else None


DIAGNOSTICS = ("_The headline's prefill and decode tok/s are the aggregate: tokens over the load's wall time "
               "(docs/metrics.md). The figures below check it and explain it; they are not "
               "rival numbers: llama.cpp's per-slot timings are one request's own speed (they do not add up "
               "across slots), and its /metrics speed divides by the seconds it spent busy._")

SERVER_TOKEN_LABELS = (("prefill_tokens", "prefill"), ("cached_tokens", "cached"), ("output_tokens", "output"))


def server_metrics_line(summary: dict[str, Any]) -> str | None:
    """Tokens counted by the server's ``/metrics`` next to the records' count of the same tokens."""
    sm = summary.get("server_metrics") or {}
    if not sm.get("available"):
        return None
    counts = sm.get("vs_records") or {}
    shown = [f"{label} {c['server']:,} (records {c['records']:,})"
             for key, label in SERVER_TOKEN_LABELS if (c := counts.get(key))]
    agrees = sm.get("agrees_with_records")
    verdict = "agrees with the records" if agrees else "differs from the records" if agrees is False else ""
    if agrees is False:
        verdict += (", within what incomplete requests explain" if sm.get("within_tolerance")
                    else ", **more than incomplete requests explain**")
    return ("server /metrics tokens: " + ", ".join(shown) + (f" — {verdict}" if verdict else "")
            + f"; its own speed (Σ tokens / Σ seconds it counted): prefill {fmt_num(sm.get('busy_prefill_tok_s'))} "
            f"tok/s, decode {fmt_num(sm.get('busy_decode_tok_s'))} tok/s")


def _p50(summary: dict[str, Any], metric: str) -> float | None:
    stats = (summary.get("latency_ms") or {}).get(metric)
    return stats["p50"] if stats else None


def headline(summary: dict[str, Any]) -> list[str]:
    """The three lines a person reads first, in the reference study's terms."""
    if summary.get("status") not in (None, "completed"):
        cause = summary.get("server", {}).get("cause") or summary.get("error") or ""
        lines = [f"status: {summary['status']}" + (f": {cause}" if cause else "")]
        hint = summary.get("server", {}).get("hint")
        if hint:
            lines.append(f"hint: {hint}")
        if not summary.get("requests", {}).get("sent"):
            return lines
    else:
        lines = []
    thr = summary["throughput"]
    lines.append(outcome_line(summary))
    lines.append(f"prefill {fmt_num(thr['prefill_tok_s'])} tok/s, decode {fmt_num(thr['decode_tok_s'])} tok/s, "
                 f"{fmt_num(thr['requests_per_s'], 2)} req/s")
    lines.append(f"TTFT median {fmt_ms(_p50(summary, 'ttft'))}, TPOT median {fmt_ms(_p50(summary, 'tpot'))}"
                 + reasoning_text(summary.get("reasoning")))
    steady = steadystate.console_line(summary.get("steady_state"))
    found = summary.get("capacity")
    measured = summary.get("energy") or {}
    power = energy.console_line(measured) if measured.get("joules") is not None else None
    return ([f"capacity: {found['sentence']}"] if found else []) + lines + [x for x in (steady, power) if x]


def outcome_line(summary: dict[str, Any]) -> str:
    """What became of the prompts asked: "52/1,674 done, 16 cut when the server died at 6.1 s,
    1,606 not sent in 12.0 s" (counts from ``headline``/``accounting``; they add up to the plan)."""
    req = summary["requests"]
    planned = summary.get("planned_prompts") or req["sent"]
    no_content = f" ({req['no_content']} without content)" if req.get("no_content") else ""
    parts = [f"{req['completed']}/{planned} done{no_content}"]  # the reference study's phrasing
    down, errors = summary.get("server_down"), req["errors"]
    if down:
        mid, before = down["streams_cut"], down.get("dropped_before_response", 0)
        cut = mid + before
        gone = "died" if summary.get("status") == "crashed" else "was lost"
        split = f" ({mid:,} mid-stream, {before:,} before a response)" if mid and before else ""
        parts.append(f"{cut:,} cut when the server {gone} at {down['at_s']:.1f} s{split}" if cut
                     else f"the server {gone} at {down['at_s']:.1f} s")
        errors -= cut
        if errors:
            parts.append(f"{errors:,} other errors")
    else:
        parts.append(f"{errors:,} errors")
    if req.get("cancelled"):
        parts.append(f"{req['cancelled']:,} cancelled at the stop")
    if req.get("unsent"):
        parts.append(f"{req['unsent']:,} not sent")
    stopped = summary.get("stopped_by")
    return (", ".join(parts) + f" in {summary['duration_s']:.1f} s"
            + (f" (stopped by {stopped})" if stopped not in (None, "num_prompts") else ""))


def host_line(summary: dict[str, Any]) -> str | None:
    """The host's own load beside the numbers: foreign CPU and steal (``orchestrate.load.host_probe``)."""
    host = summary.get("host")
    if not host:
        return None
    def pair(key: str) -> str:
        stats = host.get(key)
        return "–" if not stats else f"{stats['p50']:.1f} / {stats['max']:.1f} %"
    found = {"launcher": "", "port": " (server found by its port)",
             "unknown": " (server's processes unknown: its CPU is counted as foreign)"}.get(host.get("server_processes"), "")
    return (f"host: other processes' CPU p50/max {pair('foreign_cpu_pct')} of a core{found}, steal p50/max "
            f"{pair('steal_pct')}" + (" — **busy**" if host.get("busy") else " — quiet"))


def console_lines(summary: dict[str, Any]) -> list[str]:
    """What ``tokenswarm run`` and ``report`` print of a variant: conditions, headline, the server's peak memory
    (the reference study's last figure; ``summary.md`` has it among its diagnostics), latencies."""
    memory = memory_line(summary)
    return condition_lines(summary) + headline(summary) + ([memory] if memory else []) + latency_table(summary)


def reasoning_text(reasoning: dict[str, Any] | None) -> str:
    """", TTFO median 2.1 s after 180 reasoning tokens (median)": a reasoning model's answer apart."""
    if not reasoning:
        return ""
    ttfo, per_request = reasoning.get("ttfo_ms") or {}, reasoning.get("tokens_per_request") or {}
    return (f", TTFO (first answer token) median {fmt_ms(ttfo.get('p50'))} after {fmt_num(per_request.get('p50'), 0)} "
            f"reasoning tokens (median; {fmt_num(100 * reasoning['share_of_output'], 0)} % of the output)")


LATENCY_ROWS = (("ttft", "TTFT"), ("ttfo", "TTFO (answer)"), ("tpot", "TPOT"), ("answer_tpot", "TPOT (answer)"),
                ("itl", "ITL (inter-chunk)"), ("e2e", "E2E"))
"""The TTFO and answer rows are shown for a reasoning model's replies only (else they repeat TTFT and TPOT)."""
LATENCY_COLUMNS = ("p50", "p90", "p99", "mean", "max")


def latency_table(summary: dict[str, Any]) -> list[str]:
    """The latency percentiles as markdown table lines (also printed at the end of a run)."""
    lat = dict(summary.get("latency_ms") or {})
    reasoning = summary.get("reasoning")
    lat["answer_tpot"] = reasoning.get("answer_tpot_ms") if reasoning else None
    if not reasoning:
        lat.pop("ttfo", None)
    if not any(lat.values()):
        return []
    rows = ["| latency | " + " | ".join(LATENCY_COLUMNS) + " |", "|---" * (len(LATENCY_COLUMNS) + 1) + "|"]
    for key, label in LATENCY_ROWS:
        if lat.get(key):
            rows.append(f"| {label} | " + " | ".join(fmt_ms(lat[key][c]) for c in LATENCY_COLUMNS) + " |")
    return rows


def markdown(summary: dict[str, Any], images: Sequence[str] = ()) -> str:
    """``summary.md``: headline, latency table, tokens, errors, server, cross-check, plots, notes.

    :param images: plot file names next to ``summary.md``, linked in order.
    """
    out = [f"# {summary.get('scenario', '')} / {summary.get('variant', '')}", ""]
    setup = condition_lines(summary)
    out += [f"- {line}" for line in setup] + ([""] if setup else [])
    out += [f"**{line}**  " for line in headline(summary)] + [""]
    out += capacity.markdown(summary.get("capacity"))
    table = latency_table(summary)
    out += table + ([""] if table else [])
    out += steadystate.markdown(summary)
    out += pacing_report.markdown(summary)  # open-loop arrivals, per-stage table
    out += goodput.markdown(summary.get("goodput"))
    if "tokens" in summary:
        t = summary["tokens"]
        out += ["| tokens | prompt | cached | output | per chunk |", "|---|---|---|---|---|",
                f"| total | {t['prompt']:,} | {t['cached']:,} | {t['output']:,} | "
                f"{fmt_num(summary.get('tokens_per_chunk'), 2)} |", ""]
        reasoning = summary.get("reasoning")
        if reasoning:
            out += [f"reasoning: {reasoning['tokens']:,} of the output tokens ({100 * reasoning['share_of_output']:.0f} %) "
                    f"in {reasoning['requests']:,} replies, counted by {', '.join(reasoning['tokens_source'])}", ""]
    out += turns.markdown(summary)  # multi-turn replay: the per-turn table
    errors = (summary.get("requests") or {}).get("errors_by_class") or {}
    if errors:
        out += ["| error class | count |", "|---|---|"] + [f"| {k} | {v} |" for k, v in errors.items()] + [""]
    st, spec = summary.get("server_timings"), summary.get("speculative")
    out += ["### Diagnostics", "", DIAGNOSTICS, ""]
    unmeasured = (summary.get("energy") or {}).get("joules") is None and energy.console_line(summary.get("energy"))
    if unmeasured:
        out.append(f"{unmeasured}  ")
    if st:
        out.append(f"llama.cpp timings (per slot): prefill {fmt_num(st['per_slot_prefill_tok_s'])} tok/s, "
                   f"decode {fmt_num(st['per_slot_decode_tok_s'])} tok/s  ")
    client = summary.get("client")
    if client:
        out.append(f"load generator self-check: loop lag p50/p99/max {client['loop_lag_ms']['p50']:.2f} / "
                   f"{client['loop_lag_ms']['p99']:.2f} / {client['loop_lag_ms']['max']:.1f} ms, CPU "
                   f"{client['cpu_pct']:.0f} % of a core ({client['workers']} process(es)) — "
                   + ("**saturated: add workers**" if client["saturated"] else
                      "**host busy: the client waited for a CPU**" if client.get("host_busy") else
                      "not saturated") + "  ")
    conn = summary.get("connections")
    if conn and conn["opened"]:
        refused = f", {conn['refused_retries']:,} refused connection(s) retried" if conn["refused_retries"] else ""
        out.append(f"connections: {conn['opened']:,} opened, each before its request's clock started (connect p50 "
                   f"{fmt_ms(conn['connect_ms']['p50'])}, max {fmt_ms(conn['connect_ms']['max'])}); "
                   f"{conn['reconnects']:,} reopened mid-run after the server closed one{refused}  ")
    out.append("speculative decoding: " + (
        f"{spec['accepted_tokens']:,}/{spec['draft_tokens']:,} draft tokens accepted "
        f"({fmt_num(100 * spec['acceptance_rate'] if spec['acceptance_rate'] is not None else None)} %)"
        if spec else "off (no draft counts in the server's timings)") + "  ")
    check = summary.get("locust_crosscheck")
    if check:
        agree = summary.get("crosscheck_agrees")
        csv_counts = check.get("csv") or {}
        out.append(f"Locust's own stats: {check['requests']} requests, {check['failures']} failures, "
                   + (f"{check['no_content']} without content, " if check.get("no_content") else "")
                   + f"{check['prompt_tokens']:,} prompt / {check['output_tokens']:,} output tokens"
                   + (f" (CSV: {csv_counts['requests']} requests, {csv_counts['failures']} failures)"
                      if csv_counts else "") + " — "
                   + ("agrees with the records" if agree else "**differs from the records**") + "  ")
    out += [f"{line}  " for line in (server_metrics_line(summary), memory_line(summary), host_line(summary))
            if line]
    server = summary.get("server") or {}
    facts = server.get("facts") or {}
    out += ["", "| server | |", "|---|---|", f"| launcher | {(server.get('launcher') or {}).get('kind', '–')} |"]
    out += [f"| {k} | {v} |" for k, v in facts.items() if v is not None and k != "chat_template"]
    if server.get("ready_s") is not None:
        out.append(f"| ready after | {server['ready_s']:.2f} s |")
    if server.get("exit_code") is not None:
        out.append(f"| exit code | {server['exit_code']} |")
    if server.get("log_tail"):
        out += ["", "server log tail:", "```", *server["log_tail"], "```"]
    if summary.get("sweep"):
        out += ["", *sweep_report.markdown(summary["sweep"])]
    if summary.get("ui_steps"):
        out += ["", *uisteps.markdown_intro(summary["ui_steps"]), *sweep_report.step_table(summary["ui_steps"])]
    if images:
        out += [""] + [f"![{Path(name).stem}]({name})" for name in images]
    if summary.get("notes"):
        out += ["", "Notes:"] + [f"- {n}" for n in summary["notes"]]
    return "\n".join(out) + "\n"


def plot(summary: dict[str, Any], records: Any, path: Path) -> Path | None:
    """TTFT and TPOT histograms and output tokens/s over time; skipped without matplotlib or data."""
    if records is None or records.empty or "ttft_ms" not in records or not (records["status"] == "ok").any():
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    ok = records.loc[records["status"] == "ok", ["ttft_ms", "tpot_ms"]]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    for ax, column, title in ((axes[0], "ttft_ms", "TTFT (ms)"), (axes[1], "tpot_ms", "TPOT (ms)")):
        values = ok[column].dropna()
        ax.hist(values, bins=40, color="#4477aa")
        ax.set_title(title)
        ax.set_ylabel("requests")
    per_s = output_tokens_per_second(records)
    axes[2].step(per_s.index, per_s.values, where="post", color="#228833")
    axes[2].set_title("output tokens received per second")
    axes[2].set_xlabel("s since first request")
    fig.suptitle(f"{summary.get('scenario', '')} / {summary.get('variant', '')}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_throughput(summary: dict[str, Any], metrics_path: Path, path: Path) -> Path | None:
    """Server-side prefill/decode tok/s, requests in flight and memory over time, from ``metrics.jsonl``;
    skipped without matplotlib or with fewer than two samples."""
    timeline = metrics_timeline(metrics_path)
    if len(timeline) < 2:
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    mem = summary.get("memory") or {}
    t = timeline["elapsed_s"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    if timeline[["prefill_tok_s", "decode_tok_s"]].notna().any().any():
        axes[0].step(t, timeline["prefill_tok_s"], where="pre", color="#4477aa", label="prefill")
        axes[0].step(t, timeline["decode_tok_s"], where="pre", color="#228833",
                     label="decode (counted as requests end)")
        axes[0].legend()
    axes[0].set_title("server tok/s (/metrics deltas)")
    for column, color in (("requests_processing", "#ee6677"), ("requests_deferred", "#ccbb44")):
        if timeline[column].notna().any():
            axes[1].step(t, timeline[column], where="post", color=color, label=column.replace("_", " "))
            axes[1].legend()
    axes[1].set_title("requests in the server")
    peak = timeline[["server_memory_bytes", "gpu_memory_used_bytes"]].max().max()
    unit, unit_name = (GIB, "GiB") if peak >= GIB else (MIB, "MiB")
    for column, color, label in (("server_memory_bytes", "#aa3377", f"server ({mem.get('source')})"),
                                 ("gpu_memory_used_bytes", "#66ccee", f"GPU ({mem.get('gpu_source')})")):
        if timeline[column].notna().any():
            axes[2].plot(t, timeline[column] / unit, color=color, label=label)
            axes[2].legend()
    axes[2].set_title(f"memory ({unit_name})")
    for ax in axes:
        ax.set_xlabel("s since sampling began")
    fig.suptitle(f"{summary.get('scenario', '')} / {summary.get('variant', '')}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def write_reports(typed: Summary, paths: VariantPaths, records: Any = None) -> None:
    """Write ``summary.json`` (machine), the plots, then ``summary.md`` (person) linking them."""
    summary = to_json(typed)
    paths.summary_json.write_text(json.dumps(summary, indent=2, default=str) + "\n")
    sweep, steps, name = summary.get("sweep"), summary.get("ui_steps"), summary.get("variant", "")
    found = summary.get("capacity")
    images = [p.name for p in (capacity.plot(found, paths.capacity_png) if found else None,
                               sweep_report.plot([(name, sweep)], paths.sweep_png) if sweep else None,
                               sweep_report.plot([(name, steps)], paths.ui_steps_png) if steps else None,
                               plot(summary, records, paths.plot_png),
                               plot_throughput(summary, paths.metrics, paths.throughput_png)) if p is not None]
    paths.summary_md.write_text(markdown(summary, images))
    write_vllm_bench(summary, records, paths.vllm_bench_json)
