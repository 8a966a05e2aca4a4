"""Multi-turn replay: figures per turn index (``turns``) and what became of the conversations
(``conversations``).

Stage: report. ``aggregates/turns.py:summarize_turns`` computes both from ``requests.jsonl``, the prompts file
and ``conversations.json`` (the sampler's cuts); a sweep's own summary has ``turns`` only (its steps count
their conversations).
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrate.report.jsontypes import mapping


@dataclass(frozen=True)
class TurnRow:
    """``turns[]``: one turn index; token means over its completed requests."""

    turn: int = 0
    """The turn index, from 0 (turn k resends turn k−1's prompt and reply)."""
    requests: int = 0
    """Requests sent at this turn."""
    completed: int = 0
    """Of those, completed."""
    ttft_p50_ms: float | None = None
    """TTFT median, ms."""
    ttft_p99_ms: float | None = None
    """TTFT p99, ms."""
    prompt_tokens_mean: float | None = None
    """Mean prompt tokens."""
    cached_tokens_mean: float | None = None
    """Mean prompt tokens served from the cache."""
    prefill_tokens_mean: float | None = None
    """Mean prompt tokens prefilled (``timings.prompt_n``: the prefill work actually done)."""
    cache_hit_share: float | None = None
    """Σ cached ÷ Σ prompt tokens (requests reporting both), 0–1."""


@dataclass(frozen=True)
class Conversations:
    """``conversations``: the conversations planned, played to the end, and cut short by the sampler."""

    planned: int = 0
    """Conversations in the prompts file."""
    completed: int = 0
    """Conversations whose every planned turn completed."""
    cut: int = 0
    """Conversations the sampler cut short."""
    turns_dropped: int = 0
    """Turns those cuts dropped."""
    turns_planned: int = 0
    """Turns planned over all conversations (requests)."""
    cut_by: dict[str, int] = mapping("rule", doc="Why a conversation was cut short (`empty_turn`, `exceeds_slot_context`) and how many were.")
    """Cuts by rule (``empty_turn``, ``exceeds_slot_context``)."""
    max_turns: int | None = None
    """The cap on user turns per conversation (``load.max_turns``); None without one."""
