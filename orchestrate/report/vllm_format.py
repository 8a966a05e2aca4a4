"""``vllm_bench.json``: a variant's result in the JSON of ``vllm bench serve --save-result`` (with ``--save-detailed``:
its per-request lists too).

Stage: report. Written so that dashboards built on vLLM's result files read tokenswarm's; the field
names, units and aggregates are those of vLLM's ``vllm/benchmarks/serve.py`` (``benchmark()``'s
``result`` plus ``main_async``'s ``result_json``): per-request lists in SECONDS (``ttfts``, ``itls``,
``latencies``), aggregates in ms.

Taken from the variant's typed ``Summary`` (``summary.json``) as they are (the same definition in both
tools): ``duration`` (first send → last end; vLLM times the same span), ``completed``, ``total_input_tokens``
and ``total_output_tokens`` (Σ over completed requests, from ``usage``), ``request_throughput``,
``output_throughput``, ``total_token_throughput`` (their sum with prefill), and ``request_goodput``
(``goodput.requests_per_s``; null without an SLO, as in vLLM).

Recomputed with vLLM's own estimators (``aggregates/vllmstats.py``), so the numbers are what vLLM
would print for these per-request values, over completed requests.

Where the per-request definitions coincide and where not (tokenswarm's are in docs/metrics.md):

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
- The per-request lists (``DETAILED``) are written only as vLLM writes them, with ``--save-detailed``
  (``tokenswarm run|report --save-detailed``): a million requests' ``itls`` are 0.7 GB and most of the
  report's time.
- ``itls`` are written to 0.1 µs, the records' own resolution (chunk offsets carry 4 decimals of ms), so a
  gap reads as the exact difference of its offsets rather than with the float subtraction's last digits;
  a long run's million lists are written block by block, never held as Python lists.
- ``request_rate``, ``burstiness``, ``max_concurrency`` come from the load the result ran (its typed
  ``LoadSpec``; none for a sweep's own summary, of several loads: ``"inf"``, 1.0 and null).
  ``request_rate``: the open-loop ``load.rate``, else ``"inf"`` (vLLM's spelling) for closed-loop
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

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from locustfiles.records import CANCELLED, OK
from orchestrate.report.aggregates.chunkcolumn import ChunkOffsets, chunk_offsets, within_row_diffs
from orchestrate.report.aggregates.chunks import gap_blocks, output_tokens_per_second
from orchestrate.report.aggregates.concurrency import peak_in_flight
from orchestrate.report.aggregates.stats import numeric_column
from orchestrate.report.aggregates.vllmstats import column_blocks, vllm_stats
from orchestrate.report.schema import Summary
from orchestrate.scenario.spec import LoadSpec

BACKEND = "openai-chat"
"""vLLM's backend for streaming ``/v1/chat/completions``, the API tokenswarm drives."""
USED = frozenset({"send_ts", "status", "error_class", "error_detail", "prompt_tokens", "expected_prompt_tokens",
                  "output_tokens", "ttft_ms", "tpot_ms", "e2e_ms", "tokens_per_chunk", "chunk_offsets_ms"})
"""The record fields a ``vllm_bench.json`` is made of."""
DETAILED = ("input_lens", "output_lens", "start_times", "ttfts", "itls", "generated_texts", "errors")
"""The per-request lists vLLM leaves out without ``--save-detailed`` (``vllm/benchmarks/serve.py``)."""
DATE_FORMAT = "%Y%m%d-%H%M%S"
"""vLLM's ``date`` (``datetime.now().strftime``), local time."""
RESOLUTION_DECIMALS = 7
"""Seconds are written to 0.1 µs, the records' resolution (offsets carry 4 decimals of ms): a gap is
then the exact difference of its two offsets, without the float subtraction's noise in the last digits."""


@dataclass(frozen=True)
class RequestGaps:
    """``itls``: every request's gaps in seconds, in row order, made as they are read or written (a
    million requests have ~64 million: as Python lists they would not fit)."""

    offsets: ChunkOffsets

    def __len__(self) -> int:
        return len(self.offsets.counts)

    def __iter__(self) -> Iterator[list[float]]:
        for block in self._blocks():
            yield from (gaps.tolist() for gaps in block)

    def _blocks(self) -> Iterator[list[np.ndarray]]:
        for _, flat, counts in self.offsets.blocks():
            gaps = np.round(within_row_diffs(flat, counts) / 1000, RESOLUTION_DECIMALS)
            ends = np.cumsum(np.maximum(counts - 1, 0)).tolist()
            yield [gaps[a:b] for a, b in zip([0] + ends[:-1], ends)]

    def write_json(self, f: Any) -> None:
        """The list of lists as JSON, a block at a time."""
        f.write(b"[")
        for i, block in enumerate(self._blocks()):
            if i:
                f.write(b", ")
            f.write(memoryview(orjson.dumps(block, option=orjson.OPT_SERIALIZE_NUMPY))[1:-1])
        f.write(b"]")


def _error_text(status: Any, cls: Any, detail: Any) -> str:
    """vLLM's ``errors`` entry: empty for a completed request, else what went wrong."""
    if status == OK:
        return ""
    if status == CANCELLED:
        return "cancelled"
    parts = [str(x) for x in (cls, detail) if isinstance(x, str) and x]
    return ": ".join(parts) or "error"


def _errors(rows: pd.DataFrame, done: np.ndarray) -> list[str]:
    """Every request's ``errors`` entry; only the failed ones are looked at one by one."""
    out = [""] * len(rows)
    failed = rows[~done]
    columns = [failed[c] if c in failed else pd.Series(None, index=failed.index, dtype=object)
               for c in ("status", "error_class", "error_detail")]
    for i, status, cls, detail in zip(np.flatnonzero(~done), *columns):
        out[i] = _error_text(status, cls, detail)
    return out


def _traffic(load: LoadSpec | None) -> dict[str, Any]:
    """vLLM's ``request_rate``/``burstiness``/``max_concurrency`` of the load the result ran (None: a sweep's own
    summary, of several loads)."""
    rate = load.rate if load is not None else None
    if load is None or rate is None:  # closed loop: every user sends its next request at once, vLLM's rate inf
        burstiness: float | str = 1.0
    elif load.arrival == "constant":
        burstiness = "inf"  # vLLM's limit of constant gaps; a string, like its "inf" rate, to stay strict JSON
    else:
        burstiness = float(load.burstiness) or 1.0
    users = None if load is None else max((s.users for s in load.stages), default=load.users)  # ramp: its most
    return {"request_rate": "inf" if rate is None else float(rate), "burstiness": burstiness,
            "max_concurrency": users}


def vllm_bench(summary: Summary, records: pd.DataFrame, load: LoadSpec | None = None,
               detailed: bool = False) -> dict[str, Any] | None:
    """The ``vllm bench serve`` result of a variant; None when it sent no request (vLLM writes none).
    The per-request lists are numpy arrays (a long run has a million requests), ``itls`` a
    ``RequestGaps``; ``write_vllm_bench`` writes them as JSON lists. ``detailed``: with the ``DETAILED`` ones."""
    if records is None or records.empty or "status" not in records:
        return None
    used = [c for c in records if c in USED]  # sorted below: not every column, a long run's frame is large
    rows = records[used].sort_values("send_ts", kind="stable")  # vLLM lists requests in the order it sent them
    done = (rows["status"] == OK).to_numpy()
    ok = rows[done]
    req, tokens, thr = summary.requests, summary.tokens, summary.throughput
    facts = summary.server.facts
    model = (facts.model_id or facts.model_path) if facts else None
    goodput = summary.goodput
    sends = numeric_column(rows, "send_ts").to_numpy(dtype=float)
    ends = sends + numeric_column(rows, "e2e_ms").fillna(0).to_numpy() / 1000  # as the headline's window
    prompt = numeric_column(rows, "prompt_tokens").fillna(numeric_column(rows, "expected_prompt_tokens")).fillna(0)
    output = np.where(done, numeric_column(rows, "output_tokens").fillna(0), 0)
    prefill, decode = thr.prefill_tok_s, thr.decode_tok_s
    per_second = output_tokens_per_second(ok)
    result: dict[str, Any] = {
        "date": datetime.fromtimestamp(float(np.nanmax(ends))).strftime(DATE_FORMAT),
        "endpoint_type": BACKEND, "backend": BACKEND,
        "label": f"{summary.scenario}/{summary.variant}",
        "model_id": model, "tokenizer_id": model,
        "num_prompts": int(summary.planned_prompts or req.sent),
        **_traffic(load),
        "duration": float(summary.duration_s),
        "completed": int(req.completed), "failed": int(req.sent - req.completed),
        "total_input_tokens": int(tokens.prompt), "total_output_tokens": int(tokens.output),
        "request_throughput": thr.requests_per_s,
        "request_goodput": goodput.requests_per_s if goodput else None,
        "output_throughput": decode,
        "total_token_throughput": prefill + decode if prefill is not None and decode is not None else None,
        **({"input_lens": prompt.to_numpy().astype(np.int64), "output_lens": output.astype(np.int64),
            "ttfts": (numeric_column(rows, "ttft_ms").fillna(0) / 1000).to_numpy(),
            "itls": RequestGaps(chunk_offsets(rows))} if detailed else {}),
        "latencies": np.where(done, numeric_column(rows, "e2e_ms").fillna(0) / 1000, 0.0),
        **({"start_times": sends, "generated_texts": [""] * len(rows), "errors": _errors(rows, done)}
           if detailed else {}),
        "max_output_tokens_per_s": float(per_second.max()) if not per_second.empty else 0.0,
        "max_concurrent_requests": peak_in_flight(sends[done], ends[done]),
    }
    for name, (blocks, count) in (("ttft", column_blocks(ok, "ttft_ms")), ("tpot", column_blocks(ok, "tpot_ms")),
                                  ("itl", gap_blocks(ok)), ("e2el", column_blocks(ok, "e2e_ms"))):
        result.update(vllm_stats(name, blocks, count))
    return result


def write_vllm_bench(summary: Summary, records: pd.DataFrame | None, path: Path,
                     load: LoadSpec | None = None, detailed: bool = False) -> Path | None:
    """Write ``vllm_bench.json`` (``load``: the load the result ran; ``detailed``: ``--save-detailed``'s lists too); a
    variant that sent nothing has none (a stale one is removed)."""
    result = vllm_bench(summary, records, load, detailed) if records is not None else None
    if result is None:
        path.unlink(missing_ok=True)
        return None
    with path.open("wb") as f:
        f.write(b"{")
        for i, (key, value) in enumerate(result.items()):
            f.write((b", " if i else b"") + orjson.dumps(key) + b": ")
            if isinstance(value, RequestGaps):
                value.write_json(f)
            else:
                f.write(orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY))
        f.write(b"}\n")
    return path
