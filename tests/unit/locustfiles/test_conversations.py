"""locustfiles/conversations.py: conversations sampled turn by turn, cut at the per-slot context,
and each turn's request; the ``turns`` field of a prompts line."""

from __future__ import annotations

import argparse
import random
from typing import Any

import pytest

from locustfiles.conversations import (
    ThinkTime,
    add_arguments,
    check_mode,
    conversation_pairs,
    planned_requests,
    sample_conversations,
    turn_prompt,
)
from locustfiles.dataset import DataFileError, Prompt, SamplingConfig, estimate_tokens, sample_prompts
from orchestrate.standins.sharegpt_synth import generate_sharegpt


def words(texts: list[str]) -> list[int]:
    """A counter a reader can check by eye: one token per word."""
    return [len(t.split()) for t in texts]


def history_words(histories: list[list[dict[str, str]]]) -> list[int]:
    """A chat counter: one token per word plus 2 per message (its role markers, as a template adds)."""
    return [sum(len(m["content"].split()) + 2 for m in h) for h in histories]


def conv(conv_id: str, *turns: tuple[str, int]) -> dict[str, Any]:
    """A ShareGPT entry from (role, n_words) turns; words are numbered so texts differ."""
    return {"id": conv_id, "conversations": [{"from": role, "value": " ".join(f"w{i}" for i in range(n))}
                                             for role, n in turns]}


def config(**kw: Any) -> SamplingConfig:
    return SamplingConfig(**{"num_prompts": 10, "seed": 0, **kw})


def test_pairs_stop_where_the_alternation_breaks() -> None:
    entry = conv("a", ("human", 5), ("gpt", 6), ("human", 7), ("gpt", 8), ("human", 9), ("human", 3), ("gpt", 4))
    assert [(len(u.split()), len(r.split())) for u, r in conversation_pairs(entry)] == [(5, 6), (7, 8)]
    assert conversation_pairs(conv("b", ("human", 5), ("gpt", 6), ("human", 7))) == [("w0 w1 w2 w3 w4",
                                                                                     "w0 w1 w2 w3 w4 w5")]
    assert conversation_pairs(conv("c", ("system", 5), ("human", 6), ("gpt", 7))) == []
    assert conversation_pairs(conv("d", ("gpt", 5), ("human", 6))) == []
    assert conversation_pairs(conv("e", ("human", 5))) == []


def test_turns_grow_the_history_and_size_max_tokens_from_each_reply() -> None:
    data = [conv("a", ("human", 5), ("gpt", 6), ("human", 7), ("gpt", 20), ("human", 9), ("gpt", 4))]
    sample = sample_conversations(data, config(max_tokens=10), words, count_history=history_words)
    (c,) = sample.prompts
    # turn k's history: every earlier pair + its question, 2 tokens per message on top of the words
    assert c.turns == ((5 + 2, 6), (5 + 6 + 7 + 3 * 2, 10), (5 + 6 + 7 + 20 + 9 + 5 * 2, 4))
    assert [m["role"] for m in c.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert (c.prompt_tokens, c.max_tokens, c.requests) == (c.turns[-1][0], 4, 3)
    assert sample.plan() == {"planned": 1, "turns_planned": 3, "cut": 0, "turns_dropped": 0,
                             "cut_by": {"empty_turn": 0, "exceeds_slot_context": 0}, "max_turns": None}


def test_a_turn_that_overflows_the_slot_cuts_the_conversation_there() -> None:
    data = [conv("a", ("human", 10), ("gpt", 30), ("human", 10), ("gpt", 30), ("human", 10), ("gpt", 30),
                 ("human", 10), ("gpt", 30)),
            conv("b", ("human", 10), ("gpt", 5), ("human", 10), ("gpt", 5))]
    # conversation a: turn 0 = 12 (+8 to generate), turn 1 = 12+32+12 = 56 (+8), turn 2 = 100 (+8) > 90
    sample = sample_conversations(data, config(max_tokens=8, per_slot_context=90), words,
                                  count_history=history_words)
    a, b = sample.prompts
    assert [t[0] for t in a.turns] == [12, 56] and len(a.messages) == 3
    assert all(p + m <= 90 for p, m in a.turns + b.turns)
    assert b.turns == ((12, 5), (12 + 7 + 12, 5))
    assert (sample.cut_by, sample.turns_dropped) == ({"empty_turn": 0, "exceeds_slot_context": 1}, 2)
    assert sample.plan()["cut"] == 1 and sample.turns_planned == 4


def test_an_opening_pair_that_does_not_fit_drops_the_conversation_as_single_mode_does() -> None:
    data = [conv("a", ("human", 80), ("gpt", 30), ("human", 5), ("gpt", 5)),
            conv("b", ("human", 10), ("gpt", 5))]
    sample = sample_conversations(data, config(max_tokens=20, per_slot_context=90), words,
                                  count_history=history_words)
    assert [p.conversation_id for p in sample.prompts] == ["b"]
    assert sample.dropped["exceeds_slot_context"] == 1 and sample.plan()["cut"] == 0


def test_an_empty_question_or_reply_ends_the_conversation() -> None:
    data = [conv("a", ("human", 5), ("gpt", 6), ("human", 7), ("gpt", 0), ("human", 9), ("gpt", 4)),
            conv("b", ("human", 5), ("gpt", 6), ("human", 0), ("gpt", 5))]
    sample = sample_conversations(data, config(), words, count_history=history_words)
    assert [p.requests for p in sample.prompts] == [1, 1]
    assert (sample.cut_by["empty_turn"], sample.turns_dropped) == (2, 3)


def test_fixed_output_tokens_and_max_turns_apply_to_every_turn() -> None:
    data = [conv("a", *[(role, 5) for _ in range(5) for role in ("human", "gpt")])]
    sample = sample_conversations(data, config(fixed_output_tokens=40, max_tokens=16), words, max_turns=3)
    (c,) = sample.prompts
    assert [m for _, m in c.turns] == [16, 16, 16]
    assert sample.turns_dropped == 0 and sample.plan()["max_turns"] == 3  # not asked for is not dropped


def test_max_turns_1_samples_exactly_the_single_mode_prompts() -> None:
    data = generate_sharegpt(300, seed=3)
    cfg = config(num_prompts=40, seed=7, max_tokens=64)
    single = sample_prompts(data, cfg, estimate_tokens)
    multi = sample_conversations(data, cfg, estimate_tokens, max_turns=1)
    assert [(p.conversation_id, p.messages, p.prompt_tokens, p.max_tokens) for p in single.prompts] == \
        [(p.conversation_id, p.messages, p.prompt_tokens, p.max_tokens) for p in multi.prompts]
    assert (single.examined, single.dropped) == (multi.examined, multi.dropped)


def test_the_synthetic_data_has_multi_turn_conversations_and_sampling_is_seeded() -> None:
    data = generate_sharegpt(400, seed=1)
    first = sample_conversations(data, config(num_prompts=60, seed=5), estimate_tokens)
    again = sample_conversations(data, config(num_prompts=60, seed=5), estimate_tokens)
    assert first.prompts == again.prompts
    assert max(p.requests for p in first.prompts) >= 3  # the default file already has some
    rich = generate_sharegpt(40, seed=1, multi_turn_rate=1.0)
    assert sum(len(conversation_pairs(c)) >= 2 for c in rich) >= 30


def test_nothing_survives_is_one_error() -> None:
    with pytest.raises(DataFileError, match="no conversation survived"):
        sample_conversations([conv("a", ("human", 5))], config(), words)


def test_turn_prompt_sends_the_first_2k_plus_1_messages() -> None:
    data = [conv("a", ("human", 5), ("gpt", 6), ("human", 7), ("gpt", 8), ("human", 9), ("gpt", 4))]
    c = sample_conversations(data, config(max_tokens=100), words, count_history=history_words).prompts[0]
    t1 = turn_prompt(c, 1)
    assert t1.messages == c.messages[:3] and (t1.prompt_tokens, t1.max_tokens) == c.turns[1]
    assert (t1.index, t1.conversation_id, t1.turns) == (c.index, "a", ())
    assert turn_prompt(c, 2).messages == c.messages
    # history: model, the server's replies replace the dataset's; a failed turn (None) keeps the dataset's
    t2 = turn_prompt(c, 2, ["first reply", None])
    assert t2.messages[1] == {"role": "assistant", "content": "first reply"}
    assert t2.messages[3] == c.messages[3] and t2.messages[4] == c.messages[4]
    single = Prompt(0, "x", ({"role": "user", "content": "hi"},), 3, 4)
    assert turn_prompt(single, 0) is single and single.requests == 1


def test_a_conversation_line_round_trips_and_a_single_line_is_unchanged() -> None:
    data = [conv("a", ("human", 5), ("gpt", 6), ("human", 7), ("gpt", 8))]
    c = sample_conversations(data, config(), words).prompts[0]
    assert Prompt.from_json(c.to_json()) == c and '"turns":[[5,6],[18,8]]' in c.to_json()
    single = Prompt(0, "x", ({"role": "user", "content": "hi"},), 3, 4)
    assert "turns" not in single.to_json() and Prompt.from_json(single.to_json()) == single
    assert planned_requests([c, single]) == 3


@pytest.mark.parametrize("turns", ['[[1,2]]', '[[1,2],[3]]', '[[1,"2"],[3,4]]', '{"a":1}'])
def test_a_bad_turns_field_is_named(turns: str) -> None:
    line = ('{"index":0,"conversation_id":"a","messages":[{"role":"user","content":"q"},{"role":"assistant",'
            '"content":"r"},{"role":"user","content":"q2"}],"prompt_tokens":5,"output_tokens":4,"turns":' + turns + '}')
    with pytest.raises(DataFileError, match="prompt field 'turns'"):
        Prompt.from_json(line)


def test_think_time_fixed_or_uniform_and_the_same_per_conversation() -> None:
    assert ThinkTime.parse("1.5") == ThinkTime(1.5, 1.5) and ThinkTime.parse("1.5").to_arg() == "1.5"
    think = ThinkTime.parse("0.5,2")
    assert think.to_arg() == "0.5,2" and ThinkTime.parse(think.to_arg()) == think
    draws = [think.draw(think.rng(7, 3)) for _ in range(2)]
    assert draws[0] == draws[1] and 0.5 <= draws[0] <= 2
    assert think.draw(think.rng(7, 4)) != draws[0]
    assert ThinkTime(1.0, 1.0).draw(random.Random(0)) == 1.0
    for bad in ("x", "2,1", "-1", "1,2,3"):
        with pytest.raises(ValueError, match="--think-time"):
            ThinkTime.parse(bad)


def test_flags_and_a_conversations_file_in_single_mode() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    opts = parser.parse_args(["--mode", "multi_turn", "--history", "model", "--think-time", "0,1"])
    assert (opts.mode, opts.history, opts.think_time, opts.max_turns) == ("multi_turn", "model", "0,1", 0)
    c = Prompt(0, "a", ({"role": "user", "content": "q"},), 3, 4, turns=((3, 4),))
    with pytest.raises(SystemExit, match="--mode multi_turn"):
        check_mode([c], "single")
    check_mode([c], "multi_turn")
    check_mode([Prompt(0, "a", ({"role": "user", "content": "q"},), 3, 4)], "single")
