"""``vllm_bench.json``: a variant's result in the JSON of ``vllm bench serve --save-result --save-detailed``.

Stage: report. Imports: stdlib, numpy, pandas, ``locustfiles.metrics`` (``itl_gaps_ms``),
``locustfiles.records``, ``orchestrate.summarize`` (``output_tokens_per_second``). Written so that
dashboards built on vLLM's result files read tokenswarm's; the field names, units and aggregates
are those of vLLM's ``vllm/benchmarks/serve.py`` (``benchmark()``'s ``result`` plus ``main_async``'s
``result_json``): per-request lists in SECONDS (``ttfts``, ``itls``, ``latencies``), aggregates in ms.

Taken from ``summary.json`` as they are (the same definition in both tools): ``duration`` (first
send → last end; vLLM times the same span), ``completed``, ``total_input_tokens`` and
``total_output_tokens`` (Σ over completed requests, from ``usage``), ``request_throughput``,
``output_throughput``, ``total_token_throughput`` (their sum with prefill), and ``request_goodput``
(``goodput.requests_per_s``; null without an SLO, as in vLLM).

Recomputed here with vLLM's own estimators, so the numbers are what vLLM would print for these
per-request values: ``mean``/``median``/``std`` (numpy, population std) and ``pXX`` (``np.percentile``,
linear interpolation) over completed requests; ``summary.json``'s percentiles are nearest-rank
instead, so a median here can lie between two measured values where ``p50`` there is one of them.
An empty list gives 0.0, as vLLM's ``np.mean(x or 0)`` does. Percentiles: p50, p90, p95 and p99
(vLLM's ``--metric-percentiles 50,90,95,99``) for ttft, tpot, itl and e2el (its
``--percentile-metrics ttft,tpot,itl,e2el``), as the flat keys vLLM writes (``p99_ttft_ms``) and also
as ``percentiles_ttft_ms``: ``[[99.0, ms], ...]``, the shape of vLLM's ``BenchmarkMetrics``.

Where the per-request definitions coincide and where not (tokenswarm's are in DESIGN.md):

- TPOT: the same, (E2E − TTFT) / (output_tokens − 1) for requests with more than one output token;
  the record's ``tpot_ms`` is used as is.
- ITL: vLLM's, not tokenswarm's: every gap between consecutive chunks, unweighted, listed per
  request (``itls``) and pooled over completed requests for the aggregates; ``summary.json``'s ITL
  weights a gap by the tokens its chunk carried. With one token per chunk (llama.cpp) they agree.
  The gaps are between content chunks; vLLM's also include the gap from a role-only first chunk to
  the first content chunk and from the last content chunk to the finish chunk.
- TTFT: tokenswarm's, from send to the first chunk with content; vLLM's ends at the first chunk with
  ``choices``, which for llama.cpp is the role-only chunk before the first token.
- E2E (``latencies``, ``e2el``): tokenswarm's, send → end of the stream (``[DONE]``); vLLM's ends at
  its last chunk with ``choices`` (the finish chunk), just before the usage chunk and ``[DONE]``.
- ``input_lens``: ``usage.prompt_tokens``, else the length measured before the run (vLLM: the same
  order). ``output_lens``: 0 for a request that did not complete, as vLLM writes.
- Failed requests: vLLM has no cancelled ones (it waits for every request); here a request cancelled
  by the stop is a failed one (``errors``: ``cancelled``). ``ttfts`` keeps a failed request's TTFT
  when a chunk arrived, 0.0 otherwise; ``latencies`` is 0.0 for it, as in vLLM.
- ``start_times``: wall-clock send times (``time.time()``); vLLM's are ``perf_counter()`` values, so
  only their differences mean anything in either.
- ``generated_texts``: empty strings; tokenswarm does not keep the text.
- ``request_rate``: the open-loop ``load.rate``, else ``"inf"`` (vLLM's spelling) for closed-loop
  users; ``burstiness``: ``load.burstiness`` (poisson), ``"inf"`` for constant arrivals (vLLM's limit
  of constant gaps; a string to stay strict JSON, where vLLM would write ``Infinity``), 1.0 (vLLM's
  default) in a closed loop; ``max_concurrency``: ``load.users`` (the cap on requests in flight,
  also with a rate; with ramp stages the largest stage's users); ``backend``/``endpoint_type``
  ``openai-chat``; ``tokenizer_id`` is the model id (vLLM's default; the prompts were measured with
  the server's own ``/tokenize``); ``date`` is when the last request ended, local time, vLLM's format.
- ``max_output_tokens_per_s``: the busiest whole second of ``output_tokens_per_second`` over completed
  requests; vLLM counts one token per chunk, this counts the chunk's tokens (the same with one
  token per chunk). ``max_concurrent_requests``: the most completed requests in flight at once
  (half-open intervals, as vLLM's sweep line).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from locustfiles.metrics import itl_gaps_ms
from locustfiles.records import CANCELLED, OK
from orchestrate.summarize import output_tokens_per_second

BACKEND = "openai-chat"
"""vLLM's backend for streaming ``/v1/chat/completions``, the API tokenswarm drives."""
PERCENTILES = (50, 90, 95, 99)
METRICS = ("ttft", "tpot", "itl", "e2el")
DATE_FORMAT = "%Y%m%d-%H%M%S"
"""vLLM's ``date`` (``datetime.now().strftime``), local time."""


def _number(value: Any) -> float | None:
    """A record's field as a float; None for missing or NaN."""
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if value != value else value


def _stats(name: str, values_ms: list[float]) -> dict[str, Any]:
    """vLLM's ``mean_/median_/std_/pXX_<name>_ms`` (0.0 for no values) and ``percentiles_<name>_ms``."""
    arr = np.asarray(values_ms if values_ms else [0.0], dtype=float)
    out: dict[str, Any] = {f"mean_{name}_ms": float(np.mean(arr)), f"median_{name}_ms": float(np.median(arr)),
                           f"std_{name}_ms": float(np.std(arr))}
    pairs = [[float(p), float(np.percentile(arr, p))] for p in PERCENTILES]
    out.update({f"p{int(p)}_{name}_ms": value for p, value in pairs})
    out[f"percentiles_{name}_ms"] = pairs
    return out


def _error_text(row: dict[str, Any]) -> str:
    """vLLM's ``errors`` entry: empty for a completed request, else what went wrong."""
    if row.get("status") == OK:
        return ""
    if row.get("status") == CANCELLED:
        return "cancelled"
    cls, detail = row.get("error_class"), row.get("error_detail")
    parts = [str(x) for x in (cls, detail) if isinstance(x, str) and x]
    return ": ".join(parts) or "error"


def _max_concurrent(starts: list[float], ends: list[float]) -> int:
    """The most intervals [start, end) open at once (an end at t closes before a start at t opens)."""
    events = sorted([(t, 1) for t in starts] + [(t, -1) for t in ends], key=lambda e: (e[0], e[1]))
    peak = current = 0
    for _, delta in events:
        current += delta
        peak = max(peak, current)
    return peak


def _real(value: Any) -> float | None:
    """A settings value as a number; None for anything else (a list of swept values, a bool, missing)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _traffic(summary: dict[str, Any]) -> dict[str, Any]:
    """vLLM's ``request_rate``/``burstiness``/``max_concurrency`` from the settings ``orchestrate.loadmodes`` writes."""
    settings = summary.get("settings") or {}
    rate, users = _real(settings.get("load.rate")), _real(settings.get("load.users"))
    stages = settings.get("load.stages")
    if rate is None:  # closed loop: every user sends its next request at once, vLLM's rate inf
        burstiness: float | str = 1.0
    elif settings.get("load.arrival") == "constant":
        burstiness = "inf"  # vLLM's limit of constant gaps; a string, like its "inf" rate, to stay strict JSON
    else:
        burstiness = _real(settings.get("load.burstiness")) or 1.0
    if isinstance(stages, list) and stages:  # ramp stages: the most users any stage allows in flight
        users = max((u for s in stages if isinstance(s, dict) and (u := _real(s.get("users"))) is not None),
                    default=None)
    return {"request_rate": "inf" if rate is None else rate, "burstiness": burstiness,
            "max_concurrency": None if users is None else int(users)}


def vllm_bench(summary: dict[str, Any], records: pd.DataFrame) -> dict[str, Any] | None:
    """The ``vllm bench serve`` result of a variant; None when it sent no request (vLLM writes none)."""
    if records is None or records.empty or "status" not in records:
        return None
    rows = records.sort_values("send_ts", kind="stable")  # vLLM lists requests in the order it sent them
    ok = rows[rows["status"] == OK]
    req, tokens, thr = summary["requests"], summary["tokens"], summary["throughput"]
    facts = (summary.get("server") or {}).get("facts") or {}
    model = facts.get("model_id") or facts.get("model_path")
    goodput = summary.get("goodput")
    sends = rows["send_ts"].astype(float)
    ends = sends + pd.to_numeric(rows["e2e_ms"], errors="coerce").fillna(0) / 1000  # as summarize's window
    input_lens, output_lens, ttfts, itls, latencies, errors = [], [], [], [], [], []
    ok_gaps: list[float] = []  # ms, pooled over completed requests
    for r in rows.to_dict("records"):
        done = r["status"] == OK
        prompt = _number(r.get("prompt_tokens"))
        prompt = prompt if prompt is not None else _number(r.get("expected_prompt_tokens"))
        input_lens.append(int(prompt or 0))
        output_lens.append(int(_number(r.get("output_tokens")) or 0) if done else 0)
        ttfts.append((_number(r.get("ttft_ms")) or 0.0) / 1000)
        offsets = r.get("chunk_offsets_ms")
        gaps = itl_gaps_ms(list(offsets) if isinstance(offsets, list) else [])
        itls.append([gap / 1000 for gap in gaps])
        latencies.append((_number(r.get("e2e_ms")) or 0.0) / 1000 if done else 0.0)
        errors.append(_error_text(r))
        if done:
            ok_gaps.extend(gaps)
    prefill, decode = thr.get("prefill_tok_s"), thr.get("decode_tok_s")
    per_second = output_tokens_per_second(ok)
    result: dict[str, Any] = {
        "date": datetime.fromtimestamp(float(ends.max())).strftime(DATE_FORMAT),
        "endpoint_type": BACKEND, "backend": BACKEND,
        "label": f"{summary.get('scenario', '')}/{summary.get('variant', '')}",
        "model_id": model, "tokenizer_id": model,
        "num_prompts": int(summary.get("planned_prompts") or req["sent"]),
        **_traffic(summary),
        "duration": float(summary["duration_s"]),
        "completed": int(req["completed"]), "failed": int(req["sent"] - req["completed"]),
        "total_input_tokens": int(tokens["prompt"]), "total_output_tokens": int(tokens["output"]),
        "request_throughput": thr.get("requests_per_s"),
        "request_goodput": goodput.get("requests_per_s") if goodput else None,
        "output_throughput": decode,
        "total_token_throughput": prefill + decode if prefill is not None and decode is not None else None,
        "input_lens": input_lens, "output_lens": output_lens, "ttfts": ttfts, "itls": itls,
        "latencies": latencies, "start_times": sends.tolist(),
        "generated_texts": [""] * len(rows),
        "errors": errors,
        "max_output_tokens_per_s": float(per_second.max()) if not per_second.empty else 0.0,
        "max_concurrent_requests": _max_concurrent(sends[ok.index].tolist(), ends[ok.index].tolist()),
    }
    by_metric = {"ttft": ok["ttft_ms"], "tpot": ok["tpot_ms"] if "tpot_ms" in ok else pd.Series(dtype=float),
                 "e2el": ok["e2e_ms"]}
    for name in METRICS:
        values = ok_gaps if name == "itl" else pd.to_numeric(by_metric[name], errors="coerce").dropna().tolist()
        result.update(_stats(name, [float(v) for v in values]))
    return result


def write_vllm_bench(summary: dict[str, Any], records: pd.DataFrame | None, path: Path) -> Path | None:
    """Write ``vllm_bench.json``; a variant that sent nothing has none (a stale one is removed)."""
    result = vllm_bench(summary, records) if records is not None else None
    if result is None:
        path.unlink(missing_ok=True)
        return None
    path.write_text(json.dumps(result) + "\n")
    return path
