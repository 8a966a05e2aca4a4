"""orchestrate/load/traces/build.py without a server (lengths estimated): blocks are shared text, a prompt's text is
its blocks in order, and a session's rows fold into one conversation with its pauses."""

from __future__ import annotations

from pathlib import Path

from locustfiles.dataset import Prompt
from orchestrate.load.traces.build import trace_prompts
from orchestrate.load.traces.files import TraceFile, TraceRow
from orchestrate.load.traces.window import fit_trace
from orchestrate.scenario.spec import TraceSpec


def build(*rows: TraceRow, **spec: float) -> list[Prompt]:
    requests, conditions = fit_trace(TraceFile(Path("t.jsonl"), "mooncake", rows), TraceSpec("t", **spec))
    return trace_prompts(requests, conditions, None, None, "estimate_chars_div_4", None, 0).sample.prompts


def test_requests_sharing_leading_blocks_share_that_text_and_no_more() -> None:
    a, b, c = build(TraceRow(1, 0.0, 5, 60, (7, 8, 9)), TraceRow(2, 0.5, 6, 60, (7, 8, 4)),
                    TraceRow(3, 1.0, 7, 60, (1, 2, 3)), block_tokens=20)
    text = [p.messages[0]["content"] for p in (a, b, c)]
    shared = len(text[0]) - len(text[0].lstrip())  # the first block's opening space trimmed by neither
    common = next(i for i, (x, y) in enumerate(zip(text[0], text[1])) if x != y)
    assert common >= 2 * 20 * 4 - 2 - shared  # two blocks of about 80 characters
    assert text[0][:common] == text[1][:common] and not text[2].startswith(text[0][:20])
    assert [(p.index, p.at_s, p.max_tokens) for p in (a, b, c)] == [(0, 0.0, 5), (1, 0.5, 6), (2, 1.0, 7)]


def test_a_session_is_one_conversation_due_at_its_first_turn_with_its_pauses() -> None:
    user = ({"role": "user", "content": "hi there"},)
    rows = (TraceRow(1, 0.0, 4, messages=user, session_id="s", delay_ms=None),
            TraceRow(2, 0.2, 5, messages=user),
            TraceRow(3, 3.0, 6, messages=({"role": "user", "content": "and then"},), session_id="s", delay_ms=1500.0),
            TraceRow(4, 4.0, 7, messages=user, session_id="s", delay_ms=250.0))
    first, single = build(*rows)
    assert (first.conversation_id, first.at_s, first.pauses_s) == ("session-s", 0.0, (1.5, 0.25))
    assert [m["role"] for m in first.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert [max_tokens for _, max_tokens in first.turns] == [4, 6, 7] and first.requests == 3
    assert (single.index, single.conversation_id, single.turns) == (1, "trace-2", ())
    assert Prompt.from_json(first.to_json()) == first
