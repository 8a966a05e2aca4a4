"""The live figures as text: the LLM tab's rows (``table_rows``) and the figures CSV (``figures_csv_rows``).

Stage: load (web UI). Formatting only: every number is ``livestats.LiveStats.snapshot``'s, the user level's
95 % intervals too (``livestats.level_intervals``: the report's own methods), shown after their figure as
``412.0 [398.0–431.0]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from locustfiles.livestats import KEEP_VALUES, MIN_COMPLETED, MIN_RATE_S


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _ms(value: float) -> str:
    return f"{value:,.1f}" if value >= 10 else f"{value:.2f}"


def _within(interval: dict[str, float | None] | None, show: Callable[[float], str]) -> str:
    """`` [low–high]``, a 95 % interval to follow its figure; ``?``: a side too few requests bound. Nothing
    without one, or with neither side bound (a level's first requests)."""
    if not interval or (interval["low"] is None and interval["high"] is None):
        return ""
    low, high = ("?" if v is None else show(v) for v in (interval["low"], interval["high"]))
    return f" [{low}–{high}]"


def _intervals(figures: dict[str, Any], key: str) -> Any:
    """The 95 % interval(s) of ``figures[key]``: only a user level's figures have them."""
    return (figures.get("intervals") or {}).get(key)


def _pcts(p: dict[str, float] | None, intervals: dict[str, Any] | None = None) -> str:
    return "—" if not p else " / ".join(_ms(p[k]) + _within((intervals or {}).get(k), _ms)
                                        for k in ("p50", "p90", "p99"))


def _latency(key: str) -> Callable[[dict[str, Any]], str]:
    """p50 / p90 / p99 of ``key``, each with its interval where the figures have one."""
    return lambda f: _pcts(f[key], _intervals(f, key))


def _rate(key: str, digits: int = 1) -> Callable[[dict[str, Any]], str]:
    """A rate, with its interval where the figures have one."""
    return lambda f: _num(f[key], digits) + ("" if f[key] is None else _within(
        _intervals(f, key), lambda v: _num(v, digits)))


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def table_rows(snap: dict[str, Any], charts_url: str, budget: tuple[int, int, int] | None = None
               ) -> list[dict[str, Any]]:
    """The LLM tab: one row per figure over the last 10 s, the current user level and the whole test, all
    preformatted text; a row whose level figure has a 95 % interval also carries it as JSON, ``interval``
    (``{low, high}``, or one such per percentile), for programs polling ``/stats/requests``.

    :param budget: the run's requests ``(planned, sent, ended)`` (the dispenser's), for the prompt budget row.
    """
    now, run, level = snap["now"], snap["run"], snap.get("level")

    def row(figure: str, text: Callable[[dict[str, Any]], str], how: str, interval: str = "") -> dict[str, Any]:
        """A figure formatted the same way over each of the three sets of requests (``interval``: its key in the
        level's intervals)."""
        out: dict[str, Any] = {"figure": figure, "now": text(now), "level": text(level) if level else "—",
                               "run": text(run), "how": how}
        if level and interval and _intervals(level, interval) is not None:
            out["interval"] = _intervals(level, interval)
        return out

    def only(figure: str, run_text: str, how: str, level_text: str = "") -> dict[str, str]:
        return {"figure": figure, "now": "", "level": level_text, "run": run_text, "how": how}

    def tokens(f: dict[str, Any]) -> str:
        return f"{_num(f['output_tokens_mean'])} / {_num(f['output_tokens_p50'], 0)}"

    drafting = run["acceptance"] is not None
    rows = [
        row("Decode tok/s", _rate("decode_tok_s"),
            "output tokens of completed requests ÷ seconds (a request counts when it ends)", "decode_tok_s"),
        row("Prefill tok/s", _rate("prefill_tok_s"), "prompt tokens of completed requests ÷ seconds", "prefill_tok_s"),
        row("Completed requests/s", _rate("requests_per_s", 2),
            "since start (this level): ÷ seconds since its first request was sent", "requests_per_s"),
        row("TTFT p50 / p90 / p99 (ms)", _latency("ttft_ms"),
            f"send → first token of any kind (reasoning or answer); nearest rank, since start = last "
            f"{KEEP_VALUES:,} requests", "ttft_ms"),
        row("TTFO p50 / p90 / p99 (ms)", lambda f: _pcts(f["ttfo_ms"]),
            "send → first token of the answer, after any reasoning (= TTFT for a model that does not reason)"),
        row("TPOT p50 / p90 / p99 (ms)", _latency("tpot_ms"), "(E2E − TTFT) ÷ (output tokens − 1)", "tpot_ms"),
        row("ITL p50 / p90 / p99 (ms)", lambda f: _pcts(f["itl_ms"]),
            f"gaps between content chunks, weighted by tokens per chunk; last {KEEP_VALUES:,} gaps"),
        row("Output tokens per request (mean / p50)", tokens, "completed requests"),
        row("Reasoning share of output", lambda f: _share(_ratio(f["reasoning_tokens"], f["output_tokens"])),
            "reasoning tokens ÷ output tokens (reasoning_content or reasoning; the server's count when it gives one)"),
        row("Draft acceptance", lambda f: _share(f["acceptance"]),
            "Σ accepted ÷ Σ drafted tokens" if drafting else "no draft model: speculative decoding is off"),
        *([row("Inputs/s", _rate("inputs_per_s"), "embeddings' texts or rerank's documents of completed requests "
               "÷ seconds", "inputs_per_s"),
           row("E2E p50 / p90 / p99 (ms)", _latency("e2e_ms"), "send → the reply's last byte (one body: no TTFT or "
               "TPOT)", "e2e_ms")] if run["inputs"] else []),
        *([row("Valid replies", lambda f: _share(f["valid_share"]), "parsed and matched the JSON schema, or made "
               "calls that match the tools sent")] if run["checked"] else []),
        row("Requests completed", lambda f: f"{f['completed']:,}", "ended with a complete stream"),
        only("Requests in flight", "—" if snap["in_flight"] is None else f"{snap['in_flight']:,}",
             "handed out, not answered yet"),
        row("Errors", lambda f: f"{f['errors']:,}", "requests that did not end in a complete stream"),
    ]
    rows += [row(f"    {cls}", _count(_errors_of(cls)), "error class") for cls in run["errors_by_class"]]
    if run["cancelled"]:
        rows.append(row("Cancelled", lambda f: f"{f['cancelled']:,}", "cut off by a stop"))
    if level:
        rows.append(only("User level", "", "the user count set in the form, and the requests sent under it: the "
                         "report's step for this level (summary.md's web UI steps); [low–high]: a figure's 95 % "
                         f"interval, by the report's methods, from {MIN_COMPLETED} requests on (percentiles: order "
                         "statistics, ? = too few requests to bound that side; rates: batch means over 10 slices, "
                         f"once the level is held {MIN_RATE_S:.0f} s)",
                         f"{level['users']:,} users, set {level['set_s_ago']:,.0f} s ago"))
    if budget is not None:
        planned, sent, ended = budget
        rows.append(only("Prompt budget", f"{sent:,} sent, {ended:,} ended, {max(planned - ended, 0):,} left of "
                         f"{planned:,}", "the run ends when every planned request has ended (answered, failed or "
                         "cancelled), at the time cap, or at Stop; Locust's user count does not end it"))
    rows.append(only("Live charts", charts_url, "tokens/s, TTFT and users over time, from the first second: "
                     "click to open (also under Download Data)"))
    return rows


def _value(key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda figures: figures[key]


def _percentile(metric: str, p: str) -> Callable[[dict[str, Any]], Any]:
    return lambda figures: (figures[metric] or {}).get(p)


def _count(get: Callable[[dict[str, Any]], int]) -> Callable[[dict[str, Any]], str]:
    return lambda figures: f"{get(figures):,}"


def _errors_of(cls: str) -> Callable[[dict[str, Any]], int]:
    return lambda figures: int(figures["errors_by_class"].get(cls, 0))


def figures_csv_rows(snap: dict[str, Any]) -> list[list[Any]]:
    """``figure,last_10s,this_level,since_start``: plain numbers (empty = none yet), one figure per row."""
    now, run, level = snap["now"], snap["run"], snap.get("level")

    def across(get: Callable[[dict[str, Any]], Any]) -> list[Any]:
        return [get(now), get(level) if level else None, get(run)]

    rows: list[list[Any]] = [["figure", "last_10s", "this_level", "since_start"]]
    for key in ("decode_tok_s", "prefill_tok_s", "requests_per_s"):
        rows.append([key, *across(_value(key))])
    for metric in ("ttft_ms", "ttfo_ms", "tpot_ms", "itl_ms"):
        for p in ("p50", "p90", "p99"):
            rows.append([f"{metric}_{p}", *across(_percentile(metric, p))])
    for key in ("output_tokens_mean", "output_tokens_p50", "acceptance", "completed", "errors", "cancelled",
                "prompt_tokens", "output_tokens", "reasoning_tokens"):
        rows.append([key, *across(_value(key))])
    rows.append(["users", None, level["users"] if level else None, None])
    rows.append(["in_flight", None, None, snap["in_flight"]])
    rows.append(["seconds", snap["span_s"], level["seconds"] if level else None, snap["elapsed_s"]])
    rows += [[f"errors:{cls}", *across(_errors_of(cls))] for cls in run["errors_by_class"]]
    return [["" if v is None else v for v in r] for r in rows]
