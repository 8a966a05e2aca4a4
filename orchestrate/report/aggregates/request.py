"""The ``request`` block: what each request was and the figures its kind asks for, from the records alone.

Stage: records → report. Embeddings and rerank: inputs (texts, documents) and prompt tokens per second over the
run's duration. A checked run: the share of valid replies and why the others were not. Images: image tokens as
the server counted them, and TTFT of image-bearing requests against text-only ones, overall and by image size.
"""

from __future__ import annotations

import pandas as pd

from locustfiles.endpoints import CHAT, ENDPOINTS, ONE_BODY
from locustfiles.records import OK
from orchestrate.report.aggregates.stats import numeric_column, per_second, value_stats
from orchestrate.report.schema.request import Images, ImageSize, Inputs, Request, Validity


def request_block(records: pd.DataFrame, duration_s: float) -> Request | None:
    """The block; None for plain text chat (and for records written before requests had a kind)."""
    if records.empty or "endpoint" not in records:
        return None
    ok = records[records["status"] == OK]
    endpoints = records["endpoint"].dropna()
    endpoint = str(endpoints.mode().iloc[0]) if not endpoints.empty else CHAT
    block = Request(endpoint=endpoint, inputs=inputs(ok, endpoint, duration_s), validity=validity(ok),
                    images=images(ok))
    return None if block == Request() else block


def inputs(ok: pd.DataFrame, endpoint: str, duration_s: float) -> Inputs | None:
    """Embeddings' texts or rerank's documents per second; None for the streaming endpoints."""
    if endpoint not in ONE_BODY:
        return None
    total = int(numeric_column(ok, "inputs").fillna(0).sum())
    tokens = float(numeric_column(ok, "prompt_tokens").fillna(0).sum())
    return Inputs(unit=ENDPOINTS[endpoint].unit, total=total, per_s=per_second(total, duration_s),
                  per_request=total / len(ok) if len(ok) else None, tokens_per_s=per_second(tokens, duration_s))


def validity(ok: pd.DataFrame) -> Validity | None:
    """The checked replies' verdicts; None when none was checked."""
    if "valid" not in ok:
        return None
    judged = ok[ok["valid"].notna()]
    if judged.empty:
        return None
    valid = int(judged["valid"].astype(bool).sum())
    reasons = judged.loc[~judged["valid"].astype(bool), "invalid_reason"].value_counts().sort_index()
    calls = numeric_column(ok, "tool_calls")
    return Validity(checked=len(judged), valid=valid, share=valid / len(judged),
                    by_reason={str(k): int(v) for k, v in reasons.items()}, with_tool_calls=int((calls > 0).sum()))


def images(ok: pd.DataFrame) -> Images | None:
    """Image-bearing requests against text-only ones; None when no completed request carried an image."""
    count = numeric_column(ok, "images")
    has = count > 0
    if not has.any():
        return None
    with_images, text_only = ok[has], ok[~has]
    tokens = numeric_column(with_images, "image_tokens")
    prompt = numeric_column(with_images, "prompt_tokens")
    counted = tokens.notna() & prompt.notna()
    ttft_with = value_stats(numeric_column(with_images, "ttft_ms").dropna().to_numpy())
    ttft_without = value_stats(numeric_column(text_only, "ttft_ms").dropna().to_numpy())
    ratio = (ttft_with.p50 / ttft_without.p50 if ttft_with and ttft_without and ttft_with.p50 is not None
             and ttft_without.p50 else None)
    by_size = tuple(ImageSize(size=str(size), requests=len(group),
                              image_tokens=value_stats(numeric_column(group, "image_tokens").dropna().to_numpy()),
                              ttft_ms=value_stats(numeric_column(group, "ttft_ms").dropna().to_numpy()))
                    for size, group in with_images.groupby("image_size", sort=True))
    return Images(requests=int(has.sum()), images=int(count[has].sum()), text_only=len(text_only),
                  image_tokens=value_stats(tokens.dropna().to_numpy()),
                  image_share_of_prompt=float(tokens[counted].sum() / prompt[counted].sum())
                  if counted.any() and prompt[counted].sum() else None,
                  ttft_ms_with_images=ttft_with, ttft_ms_text_only=ttft_without, ttft_ratio=ratio, by_size=by_size)
