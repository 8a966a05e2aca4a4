"""How numbers are written for a person, and the flat figures results are compared by.

Stage: report. Shared by the renderers (``console.py``, ``markdown.py``, ``plots.py``, ``compare_report.py``,
``charts.py``), by ``compare.py`` and by the aggregates that write a sentence (``aggregates/capacity.py``).
"""

from __future__ import annotations

from typing import Any

from orchestrate.scenario.slo import SLO_KEYS

GIB = 1024 ** 3
MIB = 1024 ** 2
SLO_LABELS = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "e2e_ms": "E2E"}
"""An SLO limit's key as a person reads it."""


def fmt_ms(ms: float | None) -> str:
    """``105 ms`` below a second, ``1.3 s`` above, ``–`` for none."""
    if ms is None:
        return "–"
    if round(ms) >= 1000:
        return f"{ms / 1000:.1f} s"
    return f"{ms:.0f} ms" if round(ms, 2) >= 10 else f"{ms:.2f} ms"


def fmt_num(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:,.{digits}f}"


def fmt_bytes(n: float | None) -> str:
    """``1.25 GiB`` from 1 GiB up, ``412.3 MiB`` below, ``–`` for none."""
    if n is None:
        return "–"
    return f"{n / GIB:,.2f} GiB" if n >= GIB else f"{n / MIB:,.1f} MiB"


def fmt_figure(key: str, x: float | None) -> str:
    """A figure by its key: a duration for ``*_ms`` (``fmt_ms``), else a number (``fmt_num``)."""
    return fmt_ms(x) if key.endswith("_ms") else fmt_num(x)


def slo_text(slo: dict[str, float]) -> str:
    """``TTFT ≤ 2.0 s, TPOT ≤ 100 ms``."""
    return ", ".join(f"{SLO_LABELS[key]} ≤ {fmt_ms(slo[key])}" for key in SLO_KEYS if key in slo)


def summary_numbers(summary: dict[str, Any]) -> dict[str, Any]:
    """The figures variants and sweep steps are compared by, flat, straight from a ``summary.json``."""
    req, thr = summary.get("requests") or {}, summary.get("throughput") or {}
    lat, spec, mem = summary.get("latency_ms") or {}, summary.get("speculative") or {}, summary.get("memory") or {}
    out = {"completed": req.get("completed"), "errors": req.get("errors"), "sent": req.get("sent"),
           "prefill_tok_s": thr.get("prefill_tok_s"), "decode_tok_s": thr.get("decode_tok_s"),
           "acceptance": spec.get("acceptance_rate"), "peak_memory_bytes": mem.get("peak_bytes"),
           "memory_source": mem.get("source")}
    for metric in ("ttft", "tpot"):
        for p in ("p50", "p99"):
            out[f"{metric}_{p}_ms"] = (lat.get(metric) or {}).get(p)
    steady = summary.get("steady_state") or {}
    if steady.get("found"):  # the same figures inside the steady-state window
        out.update({"steady_prefill_tok_s": steady.get("prefill_tok_s"), "steady_decode_tok_s": steady.get("decode_tok_s")})
        for metric in ("ttft", "tpot"):
            for p in ("p50", "p99"):
                out[f"steady_{metric}_{p}_ms"] = (steady.get(f"{metric}_ms") or {}).get(p)
    found = summary.get("capacity")  # compared only under one SLO, attainment and load axis
    if found:
        out.update({"capacity": found.get("max_passing"), "capacity_sentence": found.get("sentence"),
                    "capacity_slo": {"slo": found.get("slo"), "attainment": found.get("attainment"),
                                     "over": found.get("over")}})
    power = summary.get("energy") or {}  # J per output token: measured only where the host reads power
    out["joules_per_output_token"] = power.get("joules_per_output_token")
    steady_power = power.get("steady_state") or {}
    if steady.get("found") and steady_power.get("output_tokens_per_joule"):
        out["steady_joules_per_output_token"] = 1 / steady_power["output_tokens_per_joule"]
    good = summary.get("goodput") or {}  # the limits too: goodput of two variants compares only under one SLO
    out.update({"goodput_slo": good.get("slo"), "goodput_requests": good.get("requests_meeting"),
                "goodput_share": good.get("share"), "goodput_rps": good.get("requests_per_s"),
                "goodput_tok_s": good.get("output_tokens_per_s")})
    return out
