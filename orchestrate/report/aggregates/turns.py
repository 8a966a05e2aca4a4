"""Multi-turn replay in the summary: figures per turn index, and what became of the conversations.

Stage: records → report. The per-turn view is where prefix caching shows: turn k resends turn k-1's
prompt and reply, so from turn 1 on most of a prompt can come from the server's cache
(``cached_tokens``) and only the rest is prefilled (``prefill_tokens``, llama.cpp's
``timings.prompt_n``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from locustfiles.dataset import DataFileError, Prompt
from locustfiles.records import OK
from orchestrate.report.aggregates.stats import value_stats
from orchestrate.report.schema.turns import Conversations, TurnRow
from orchestrate.results import VariantPaths, read_json


@dataclass(frozen=True)
class Turns:
    """``summary.json``'s ``turns`` and ``conversations`` (multi-turn replay); empty for single requests."""

    turns: tuple[TurnRow, ...] = ()
    conversations: Conversations | None = None


def _mean(df: pd.DataFrame, column: str) -> float | None:
    if column not in df or df[column].isna().all():
        return None
    return float(df[column].mean())


def turn_rows(records: pd.DataFrame) -> tuple[TurnRow, ...]:
    """One row per turn index: requests sent there; TTFT percentiles and token means over the
    completed ones; ``cache_hit_share`` = Σ cached / Σ prompt tokens (of those reporting both)."""
    rows = []
    played = records.dropna(subset=["turn"])
    for turn, group in played.groupby(played["turn"].astype(int), sort=True):
        ok = group[group["status"] == OK]
        ttft = value_stats(ok["ttft_ms"].dropna().to_numpy()) if "ttft_ms" in ok else None
        both = ok.dropna(subset=["prompt_tokens", "cached_tokens"]) if "cached_tokens" in ok else ok.iloc[0:0]
        prompt_sum = float(both["prompt_tokens"].sum()) if len(both) else 0.0
        rows.append(TurnRow(turn=int(turn), requests=int(len(group)), completed=int(len(ok)),
                            ttft_p50_ms=ttft.p50 if ttft else None, ttft_p99_ms=ttft.p99 if ttft else None,
                            prompt_tokens_mean=_mean(ok, "prompt_tokens"),
                            cached_tokens_mean=_mean(ok, "cached_tokens"),
                            prefill_tokens_mean=_mean(ok, "prefill_tokens"),
                            cache_hit_share=float(both["cached_tokens"].sum()) / prompt_sum if prompt_sum else None))
    return tuple(rows)


def conversation_counts(records: pd.DataFrame, planned_turns: dict[int, int], plan: dict[str, Any]
                        ) -> Conversations:
    """``planned``: conversations in the prompts file; ``completed``: those whose every planned turn
    completed; ``cut``/``turns_dropped``: conversations the sampler cut short (``conversations.json``)."""
    played = records.dropna(subset=["turn"])
    ok = played[played["status"] == OK]
    done = ok.groupby("prompt_index")["turn"].nunique() if len(ok) else pd.Series(dtype=int)
    completed = sum(1 for index, turns in planned_turns.items() if int(done.get(index, 0)) >= turns)
    return Conversations(planned=len(planned_turns), completed=completed, cut=int(plan.get("cut") or 0),
                         turns_dropped=int(plan.get("turns_dropped") or 0), turns_planned=sum(planned_turns.values()),
                         cut_by=plan.get("cut_by") or {}, max_turns=plan.get("max_turns"))


def _planned_turns(paths: VariantPaths) -> dict[int, int]:
    """Prompt index → planned turns, from the prompts file the run replayed."""
    try:
        with paths.prompts.open(encoding="utf-8") as f:
            prompts = [Prompt.from_json(line) for line in f if line.strip()]
    except (FileNotFoundError, DataFileError):
        return {}
    return {p.index: p.requests for p in prompts if p.turns}  # a trace's single requests are no conversation


def summarize_turns(paths: VariantPaths, records: pd.DataFrame, conversations: bool = True) -> Turns:
    """``turns`` and ``conversations`` for ``summary.json``; empty for a run of single requests.

    :param conversations: False for a sweep's variant summary: its records are its steps', each
        numbered from 0, so conversations are counted in each step's own summary.
    """
    if records.empty or "turn" not in records or records["turn"].isna().all():
        return Turns()
    if not conversations:
        return Turns(turn_rows(records))
    plan = read_json(paths.conversations) or {}
    return Turns(turn_rows(records), conversation_counts(records, _planned_turns(paths), plan))
