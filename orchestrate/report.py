"""``summary.json``, ``summary.md`` and the latency plot of a variant: formatting only.

Stage: report. Imports: stdlib, matplotlib (optional), ``orchestrate.results``. Every number shown
here was computed in ``summarize.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrate.results import VariantPaths
from orchestrate.summarize import output_tokens_per_second


def fmt_ms(ms: float | None) -> str:
    """``105 ms`` below a second, ``1.3 s`` above, ``–`` for none."""
    if ms is None:
        return "–"
    if round(ms) >= 1000:
        return f"{ms / 1000:.1f} s"
    return f"{ms:.0f} ms" if round(ms, 2) >= 10 else f"{ms:.2f} ms"


def fmt_num(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:,.{digits}f}"


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
    req, thr = summary["requests"], summary["throughput"]
    planned = summary.get("planned_prompts") or req["sent"]
    lines.append(f"{req['completed']}/{planned} done, {req['errors']} errors in {summary['duration_s']:.1f} s"
                 + (f" (stopped by {summary['stopped_by']})" if summary.get("stopped_by") not in
                    (None, "num_prompts") else ""))
    lines.append(f"prefill {fmt_num(thr['prefill_tok_s'])} tok/s, decode {fmt_num(thr['decode_tok_s'])} tok/s, "
                 f"{fmt_num(thr['requests_per_s'], 2)} req/s")
    lines.append(f"TTFT median {fmt_ms(_p50(summary, 'ttft'))}, TPOT median {fmt_ms(_p50(summary, 'tpot'))}")
    return lines


LATENCY_ROWS = (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL (inter-chunk)"), ("e2e", "E2E"))
LATENCY_COLUMNS = ("p50", "p90", "p99", "mean", "max")


def latency_table(summary: dict[str, Any]) -> list[str]:
    """The latency percentiles as markdown table lines (also printed at the end of a run)."""
    lat = summary.get("latency_ms") or {}
    if not any(lat.values()):
        return []
    rows = ["| latency | " + " | ".join(LATENCY_COLUMNS) + " |", "|---" * (len(LATENCY_COLUMNS) + 1) + "|"]
    for key, label in LATENCY_ROWS:
        if lat.get(key):
            rows.append(f"| {label} | " + " | ".join(fmt_ms(lat[key][c]) for c in LATENCY_COLUMNS) + " |")
    return rows


def markdown(summary: dict[str, Any]) -> str:
    """``summary.md``: headline, latency table, tokens, errors, server, cross-check, notes."""
    out = [f"# {summary.get('scenario', '')} / {summary.get('variant', '')}", ""]
    out += [f"**{line}**  " for line in headline(summary)] + [""]
    table = latency_table(summary)
    out += table + ([""] if table else [])
    if "tokens" in summary:
        t = summary["tokens"]
        out += ["| tokens | prompt | cached | output | per chunk |", "|---|---|---|---|---|",
                f"| total | {t['prompt']:,} | {t['cached']:,} | {t['output']:,} | "
                f"{fmt_num(summary.get('tokens_per_chunk'), 2)} |", ""]
    errors = (summary.get("requests") or {}).get("errors_by_class") or {}
    if errors:
        out += ["| error class | count |", "|---|---|"] + [f"| {k} | {v} |" for k, v in errors.items()] + [""]
    st, spec = summary.get("server_timings"), summary.get("speculative")
    if st:
        out.append(f"llama.cpp timings (per slot): prefill {fmt_num(st['prefill_tok_s'])} tok/s, "
                   f"decode {fmt_num(st['decode_tok_s'])} tok/s  ")
    out.append("speculative decoding: " + (
        f"{spec['accepted_tokens']:,}/{spec['draft_tokens']:,} draft tokens accepted "
        f"({fmt_num(100 * spec['acceptance_rate'] if spec['acceptance_rate'] is not None else None)} %)"
        if spec else "off (no draft counts in the server's timings)") + "  ")
    check = summary.get("locust_crosscheck")
    if check:
        agree = summary.get("crosscheck_agrees")
        out.append(f"Locust's own stats: {check['requests']} requests, {check['failures']} failures, "
                   f"{check['prompt_tokens']:,} prompt / {check['output_tokens']:,} output tokens — "
                   + ("agrees with the records" if agree else "**differs from the records**") + "  ")
    server = summary.get("server") or {}
    facts = server.get("facts") or {}
    out += ["", "| server | |", "|---|---|", f"| launcher | {(server.get('launcher') or {}).get('kind', '–')} |"]
    out += [f"| {k} | {v} |" for k, v in facts.items() if v is not None]
    if server.get("ready_s") is not None:
        out.append(f"| ready after | {server['ready_s']:.2f} s |")
    if server.get("exit_code") is not None:
        out.append(f"| exit code | {server['exit_code']} |")
    if server.get("log_tail"):
        out += ["", "server log tail:", "```", *server["log_tail"], "```"]
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
    ok = records[records["status"] == "ok"]
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


def write_reports(summary: dict[str, Any], paths: VariantPaths, records: Any = None) -> None:
    """Write ``summary.json`` (machine), ``summary.md`` (person) and the plot, side by side."""
    paths.summary_json.write_text(json.dumps(summary, indent=2, default=str) + "\n")
    paths.summary_md.write_text(markdown(summary))
    plot(summary, records, paths.plot_png)
