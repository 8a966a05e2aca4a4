"""The headline block of ``summary.json``: requests, duration, tokens, throughput, latency percentiles,
llama.cpp's own timings and the drafter's acceptance.

Stage: records → report. ``summarize_records`` returns them typed (``Headline``: the schema's blocks, by their
``summary.json`` names). Headline numbers come from ``requests.jsonl`` (exact floats);
``client.locust_crosscheck`` is derived from Locust's own stats files alone and never feeds them, and
neither do the server's own counters from ``metrics.jsonl`` (``servermetrics.server_metrics``): they
are a second, independent count of the same tokens.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from locustfiles.endpoints import ONE_BODY
from locustfiles.records import CANCELLED, ERROR, OK
from orchestrate.report.aggregates.chunks import itl_stats
from orchestrate.report.aggregates.concurrency import request_ends
from orchestrate.report.aggregates.stats import as_stats, column_sum, numeric_column, per_second, value_stats
from orchestrate.report.schema.common import Stats
from orchestrate.report.schema.headline import (
    Headline,
    LatencyMs,
    Reasoning,
    Requests,
    ServerTimings,
    Speculative,
    Throughput,
    Tokens,
    TokenSources,
)


def _stat(df: pd.DataFrame, column: str) -> Stats | None:
    return value_stats(df[column].dropna().to_numpy()) if column in df else None


_COMPLETED_FIELDS = frozenset({"endpoint", "prompt_index", "ttft_ms", "ttfo_ms", "tpot_ms", "answer_tpot_ms", "e2e_ms",
                               "n_chunks", "tokens_per_chunk", "prompt_tokens", "cached_tokens", "cached_tokens_source",
                               "prefill_tokens", "output_tokens", "output_tokens_source", "max_tokens",
                               "reasoning_tokens", "reasoning_tokens_source", "prompt_ms", "predicted_ms",
                               "draft_tokens", "draft_accepted"})
"""What the headline block reads of the completed records (a copy of only these: a long run's frame is large)."""


def summarize_records(df: pd.DataFrame) -> Headline:
    """The headline blocks of ``summary.json`` from the per-request records."""
    if df.empty:
        return Headline()
    completed = (df["status"] == OK).to_numpy()
    ok = df.loc[completed, [c for c in df if c in _COMPLETED_FIELDS]]  # the offsets stay put: read through a mask
    errors = df.loc[df["status"] == ERROR, [c for c in ("error_class", "error_detail") if c in df]]
    duration = float(request_ends(df).max() - df["send_ts"].min())
    tokens = Tokens(prompt=column_sum(ok, "prompt_tokens") or 0, cached=column_sum(ok, "cached_tokens") or 0,
                    output=column_sum(ok, "output_tokens") or 0)
    chunks = column_sum(ok, "n_chunks")
    return Headline(
        requests=Requests(sent=int(len(df)), completed=int(len(ok)), errors=int(len(errors)),
                          cancelled=int((df["status"] == CANCELLED).sum()),
                          no_content=no_content(ok),
                          short_replies=short_replies(ok),
                          errors_by_class={str(k): int(v) for k, v in
                                           errors["error_class"].value_counts().sort_index().items()},
                          first_error=first_error(errors)),
        duration_s=duration,
        tokens=tokens,
        throughput=Throughput(prefill_tok_s=per_second(tokens.prompt, duration),
                              decode_tok_s=per_second(tokens.output, duration),
                              requests_per_s=per_second(len(ok), duration)),
        latency_ms=LatencyMs(ttft=_stat(ok, "ttft_ms"), ttfo=_stat(ok, "ttfo_ms"), tpot=_stat(ok, "tpot_ms"),
                             itl=as_stats(itl_stats(df, completed)), e2e=_stat(ok, "e2e_ms")),
        reasoning=reasoning(ok),
        tokens_per_chunk=tokens.output / chunks if chunks else None,
        output_tokens_source=_sources(ok, "output_tokens_source"),
        token_sources=TokenSources(*(_sources(ok, f"{kind}_tokens_source") for kind in ("output", "cached", "reasoning"))),
        server_timings=server_timings(ok),
        speculative=speculative(ok),
        completed_prompts=tuple(sorted({int(i) for i in numeric_column(ok, "prompt_index").dropna()})),
    )


def first_error(errors: pd.DataFrame) -> dict[str, str]:
    """Per error class, the first message a request of it got (in the records' order), sorted by class."""
    if "error_detail" not in errors:
        return {}
    firsts = errors.dropna(subset=["error_detail"]).drop_duplicates("error_class")
    return {str(k): str(v) for k, v in sorted(zip(firsts["error_class"], firsts["error_detail"]))}


def no_content(ok: pd.DataFrame) -> int:
    """Completed streamed replies without content (no TTFT); a one-body reply (embeddings, rerank) has none to
    have."""
    missing = numeric_column(ok, "ttft_ms").isna()
    if "endpoint" in ok:
        missing &= ~ok["endpoint"].isin(ONE_BODY)
    return int(missing.sum())


def _sources(ok: pd.DataFrame, column: str) -> tuple[str, ...]:
    """Where a token count came from, over the completed requests (``usage``, ``timings``, ``chunks``)."""
    return tuple(sorted(str(v) for v in ok[column].dropna().unique())) if column in ok else ()


def short_replies(ok: pd.DataFrame) -> int:
    """Completed replies with fewer output tokens than their ``max_tokens``: the model ended them (EOS), or
    a server that ignores ``ignore_eos`` did."""
    if "max_tokens" not in ok or "output_tokens" not in ok:
        return 0
    return int((numeric_column(ok, "output_tokens") < numeric_column(ok, "max_tokens")).sum())


def reasoning(ok: pd.DataFrame) -> Reasoning | None:
    """A reasoning model's thinking apart from its answer; None when no completed reply reasoned.

    TTFT counts the first token of either; TTFO (time to first output token of the answer) and the
    answer's own TPOT leave the thinking out.
    """
    thought = numeric_column(ok, "reasoning_tokens") if "reasoning_tokens" in ok else pd.Series(dtype=float)
    if not (thought > 0).any():
        return None
    return Reasoning(requests=int((thought > 0).sum()), tokens=int(thought.fillna(0).sum()),
                     tokens_per_request=value_stats(thought.dropna().to_numpy()),
                     share_of_output=float(thought.fillna(0).sum() / numeric_column(ok, "output_tokens").sum()),
                     tokens_source=_sources(ok, "reasoning_tokens_source"),
                     ttfo_ms=_stat(ok, "ttfo_ms"), answer_tpot_ms=_stat(ok, "answer_tpot_ms"))


def server_timings(ok: pd.DataFrame) -> ServerTimings | None:
    """llama.cpp's own view: Σ prompt_n / Σ prompt_ms and Σ predicted_n / Σ predicted_ms.

    These are per-slot speeds (what one request saw), not the aggregate over parallel slots.
    """
    if "prompt_ms" not in ok or ok["prompt_ms"].isna().all():
        return None
    timed = ok.dropna(subset=["prompt_ms", "predicted_ms"])
    prompt_ms, predicted_ms = timed["prompt_ms"].sum(), timed["predicted_ms"].sum()
    return ServerTimings(
        per_slot_prefill_tok_s=float(timed["prefill_tokens"].sum() / prompt_ms * 1000) if prompt_ms else None,
        per_slot_decode_tok_s=float(timed["output_tokens"].sum() / predicted_ms * 1000) if predicted_ms else None)


def speculative(ok: pd.DataFrame) -> Speculative | None:
    """Σ draft_n_accepted / Σ draft_n; None when no request carried draft counts (no drafter)."""
    if "draft_tokens" not in ok or ok["draft_tokens"].isna().all():
        return None
    drafted, accepted = int(ok["draft_tokens"].fillna(0).sum()), int(ok["draft_accepted"].fillna(0).sum())
    per_request = (ok["draft_accepted"] / ok["draft_tokens"]).replace([np.inf], np.nan).dropna()
    return Speculative(draft_tokens=drafted, accepted_tokens=accepted,
                       acceptance_rate=accepted / drafted if drafted else None,
                       per_request_acceptance=value_stats(per_request.to_numpy()))
