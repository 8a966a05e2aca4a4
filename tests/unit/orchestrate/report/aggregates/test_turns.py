"""orchestrate/report/aggregates/turns.py: the per-turn table and the conversations block, on fixed records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from locustfiles.dataset import Prompt
from locustfiles.records import CANCELLED, ERROR, OK, RequestRecord
from orchestrate.report.aggregates.turns import Turns, summarize_turns
from orchestrate.report.schema.turns import Conversations, TurnRow
from orchestrate.results import VariantPaths

T0 = 1_000.0


def rec(i: int, conv: int, turn: int | None, *, status: str = OK, ttft: float = 10.0, prompt: int = 100,
        cached: int | None = 0) -> dict[str, Any]:
    r = RequestRecord(request_id=f"local-{i}", prompt_index=conv, worker="local", send_ts=T0 + i, status=status,
                      ttft_ms=ttft if status == OK else None, e2e_ms=50.0, output_tokens=8 if status == OK else None,
                      prompt_tokens=prompt if status == OK else None, cached_tokens=cached if status == OK else None,
                      prefill_tokens=prompt - (cached or 0) if status == OK else None,
                      conversation=None if turn is None else f"c{conv}", turn=turn)
    return vars(r)


def variant(tmp_path: Path, turns_per_conversation: list[int], plan: dict[str, Any] | None) -> VariantPaths:
    paths = VariantPaths.create(tmp_path, "v")
    paths.prompts.write_text("".join(
        Prompt(i, f"c{i}", tuple({"role": "user" if k % 2 == 0 else "assistant", "content": "x"}
                                 for k in range(2 * n - 1)), 10, 8, turns=((10, 8),) * n).to_json() + "\n"
        for i, n in enumerate(turns_per_conversation)))
    if plan is not None:
        paths.conversations.write_text(json.dumps(plan))
    return paths


RECORDS = [
    # conversation 0: three turns, each turn's prompt cached from the one before
    rec(0, 0, 0, ttft=10.0, prompt=100, cached=0), rec(1, 0, 1, ttft=20.0, prompt=300, cached=108),
    rec(2, 0, 2, ttft=30.0, prompt=500, cached=308),
    # conversation 1: two turns, the second failed
    rec(3, 1, 0, ttft=12.0, prompt=200, cached=4), rec(4, 1, 1, status=ERROR),
    # conversation 2: two turns, the second cancelled by the stop
    rec(5, 2, 0, ttft=14.0, prompt=60, cached=0), rec(6, 2, 1, status=CANCELLED),
]


def test_per_turn_rows(tmp_path: Path) -> None:
    paths = variant(tmp_path, [3, 2, 2], {"planned": 3, "cut": 1, "turns_dropped": 2,
                                          "cut_by": {"empty_turn": 0, "exceeds_slot_context": 1}, "max_turns": 4})
    out = summarize_turns(paths, pd.DataFrame(RECORDS))
    t0, t1, t2 = out.turns
    assert t0 == TurnRow(turn=0, requests=3, completed=3, ttft_p50_ms=12.0, ttft_p99_ms=14.0,
                         prompt_tokens_mean=120.0, cached_tokens_mean=pytest.approx(4 / 3),
                         prefill_tokens_mean=pytest.approx(356 / 3), cache_hit_share=pytest.approx(4 / 360))
    assert (t1.requests, t1.completed, t1.ttft_p50_ms, t1.ttft_p99_ms) == (3, 1, 20.0, 20.0)
    assert (t1.cached_tokens_mean, t1.prefill_tokens_mean) == (108.0, 192.0)
    assert t1.cache_hit_share == pytest.approx(108 / 300)
    assert (t2.turn, t2.requests, t2.cache_hit_share) == (2, 1, pytest.approx(308 / 500))
    assert out.conversations == Conversations(planned=3, completed=1, cut=1, turns_dropped=2, turns_planned=7,
                                              cut_by={"empty_turn": 0, "exceeds_slot_context": 1}, max_turns=4)


def test_without_a_plan_file_cuts_are_zero_and_no_cache_reads_zero(tmp_path: Path) -> None:
    paths = variant(tmp_path, [2], None)
    records = [rec(0, 0, 0, prompt=100, cached=0), rec(1, 0, 1, prompt=300, cached=0)]
    out = summarize_turns(paths, pd.DataFrame(records))
    assert [r.cached_tokens_mean for r in out.turns] == [0.0, 0.0]
    assert [r.cache_hit_share for r in out.turns] == [0.0, 0.0]
    assert out.conversations is not None and out.conversations.completed == 1 and out.conversations.cut == 0


def test_single_requests_have_no_turns(tmp_path: Path) -> None:
    paths = variant(tmp_path, [1], None)
    assert summarize_turns(paths, pd.DataFrame([rec(0, 0, None)])) == Turns()
    assert summarize_turns(paths, pd.DataFrame()) == Turns()
