"""orchestrate/load/fixedprompts.py: prompts cut to exact lengths by a tokenizer's counts, seeded, disjoint.

The counters here are small tokenizers with the habits that make exactness hard (a chat template's own
tokens, trimmed trailing whitespace, a whitespace run that is a token of its own); the real tokenizer is
``tests/integration/test_real_workloads.py``'s.
"""

from __future__ import annotations

import re

import pytest

from locustfiles.dataset import DataFileError
from orchestrate.load.fixedprompts import Counters, cut_to, fixed_length_prompts
from orchestrate.scenario.spec import LoadSpec, TokenLength

TEMPLATE = 7
"""Tokens a chat template adds around the message."""
TOKEN = re.compile(r"\w{1,4}|[^\w\s]|\s{2,}")
"""Words in pieces of up to four letters, each punctuation mark, and whitespace runs of two or more."""


def count_text(text: str) -> int:
    return len(TOKEN.findall(text))


COUNTERS = Counters(text=count_text, prompt=lambda text: TEMPLATE + count_text(text.strip()))


def load(n: int = 12, **fields: object) -> LoadSpec:
    return LoadSpec(dataset="random", num_prompts=n, max_tokens=32, **fields)  # type: ignore[arg-type]


def test_every_prompt_has_exactly_its_length_through_the_template() -> None:
    fixed = fixed_length_prompts(load(input_tokens=TokenLength(40, 400), output_tokens=TokenLength(8, 16)),
                                 COUNTERS, "server_tokenize", per_slot_ctx=None)
    prompts = fixed.sample.prompts
    assert fixed.inexact == 0 and len(prompts) == 12
    for p in prompts:
        assert COUNTERS.prompt(p.messages[0]["content"]) == p.prompt_tokens
        assert 40 <= p.prompt_tokens <= 400 and 8 <= p.max_tokens <= 16
    assert len({p.prompt_tokens for p in prompts}) > 6


def test_no_two_prompts_share_text_and_a_larger_sample_keeps_the_first_prompts() -> None:
    small = fixed_length_prompts(load(5, input_tokens=TokenLength.fixed(120)), COUNTERS, "c", None).sample.prompts
    large = fixed_length_prompts(load(10, input_tokens=TokenLength.fixed(120)), COUNTERS, "c", None).sample.prompts
    assert small == large[:5]
    openings = {p.messages[0]["content"][:60] for p in large}
    assert len(openings) == 10
    longer = fixed_length_prompts(load(10, input_tokens=TokenLength.fixed(480)), COUNTERS, "c", None).sample.prompts
    assert all(b.messages[0]["content"].startswith(a.messages[0]["content"][:200]) for a, b in zip(large, longer)), \
        "prompt i opens with the same text at every length: a comparison of lengths reads the same prompts"
    assert all(p.max_tokens == 32 for p in large)  # no output_tokens: max_tokens


def test_a_shared_prefix_opens_every_prompt() -> None:
    prompts = fixed_length_prompts(load(6, input_tokens=TokenLength.fixed(200), prefix_tokens=80), COUNTERS, "c",
                                   None).sample.prompts
    texts = [p.messages[0]["content"] for p in prompts]
    common = min(len(t) for t in texts)
    while any(t[:common] != texts[0][:common] for t in texts):
        common -= 1
    assert count_text(texts[0][:common].rstrip()) in (80, 81)  # the prefix (and its paragraph break)
    assert all(p.prompt_tokens == 200 for p in prompts)


def test_a_length_no_cut_reaches_is_padded_to_exact() -> None:
    """"word\\n\\nNext": cutting after the run trims it, one more letter adds the run and the letter at once."""
    text = "alpha beta\n\ngamma delta\n\nepsilon"
    assert cut_to(count_text, "", text, 3, 4.0) == ("alpha beta", 3)  # "alph" "a" "beta"
    assert cut_to(count_text, "", text, 4, 4.0) == ("alpha beta", 3)  # the next cut, "…beta\n\ng", is 5: none is 4
    fixed = fixed_length_prompts(load(30, input_tokens=TokenLength(20, 60)), COUNTERS, "c", None)
    assert fixed.inexact == 0
    assert all(COUNTERS.prompt(p.messages[0]["content"]) == p.prompt_tokens for p in fixed.sample.prompts)


def test_without_a_tokenizer_lengths_are_the_four_characters_estimate() -> None:
    prompts = fixed_length_prompts(load(3, input_tokens=TokenLength.fixed(50)), None, "estimate_chars_div_4",
                                   None).sample.prompts
    assert [len(p.messages[0]["content"]) for p in prompts] == [200] * 3
    assert [p.prompt_tokens for p in prompts] == [50] * 3


@pytest.mark.parametrize("fields, ctx, message", [
    ({"input_tokens": TokenLength.fixed(2000), "output_tokens": TokenLength.fixed(100)}, 2048,
     "load.input_tokens: a prompt of 2000 tokens with max_tokens 100 does not fit the server's per-slot context of "
     "2048 tokens (ctx-size / parallel)"),
    ({"input_tokens": TokenLength.fixed(7)}, None,
     "load.input_tokens: 7 tokens leave no room for text: the chat template takes 7"),
])
def test_lengths_the_server_cannot_take_are_one_line(fields: dict[str, object], ctx: int | None, message: str) -> None:
    with pytest.raises(DataFileError) as info:
        fixed_length_prompts(load(2, **fields), COUNTERS, "c", ctx)
    assert str(info.value) == message
