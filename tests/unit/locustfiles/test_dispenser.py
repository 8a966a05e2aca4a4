"""locustfiles/dispenser.py: exactly N prompts, in order, and one on_drained after the last one ends.

``on_drained`` runs in its own greenlet: ``gevent.sleep(0)`` yields to the hub so it can run.
"""

from __future__ import annotations

import gevent
import pytest

from locustfiles.dataset import Prompt
from locustfiles.dispenser import PromptDispenser


def prompts(n: int) -> list[Prompt]:
    return [Prompt(index=i, conversation_id=f"conv-{i}", messages=({"role": "user", "content": f"q{i}"},),
                   prompt_tokens=10 + i, max_tokens=32) for i in range(n)]


class Drained:
    """Counts ``on_drained`` calls and remembers how many were finished at each call."""

    def __init__(self) -> None:
        self.calls = 0
        self.dispenser: PromptDispenser | None = None
        self.finished_at_call: list[int] = []

    def __call__(self) -> None:
        self.calls += 1
        if self.dispenser is not None:
            self.finished_at_call.append(self.dispenser.finished)


def make(n: int, limit: int) -> tuple[PromptDispenser, Drained]:
    drained = Drained()
    dispenser = PromptDispenser(prompts(n), limit, drained)
    drained.dispenser = dispenser
    return dispenser, drained


def settle() -> None:
    """Let spawned greenlets (``on_drained``) run."""
    gevent.sleep(0)


def test_hands_out_limit_prompts_in_order_then_none():
    dispenser, _ = make(5, 3)
    assert dispenser.limit == 3
    taken = [dispenser.take() for _ in range(3)]
    assert [p.index for p in taken] == [0, 1, 2]
    assert dispenser.take() is None
    assert dispenser.take() is None
    assert dispenser.handed_out == 3


def test_on_drained_after_the_last_request_ends_not_when_it_is_handed_out():
    dispenser, drained = make(5, 3)
    for _ in range(3):
        dispenser.take()
    assert dispenser.take() is None  # all handed out ...
    settle()
    assert drained.calls == 0        # ... but three still in flight
    assert dispenser.in_flight == 3
    dispenser.done()
    dispenser.done()
    settle()
    assert drained.calls == 0        # one still in flight
    dispenser.done()
    assert drained.calls == 0        # spawned, not called inline
    settle()
    assert drained.calls == 1
    assert drained.finished_at_call == [3]
    assert dispenser.in_flight == 0


def test_on_drained_only_once():
    dispenser, drained = make(2, 2)
    dispenser.take()
    dispenser.take()
    dispenser.done()
    dispenser.done()
    settle()
    dispenser.done()  # a stray extra report
    assert dispenser.take() is None
    settle()
    assert drained.calls == 1


def test_requests_finishing_early_do_not_drain():
    # one user finishes its request before the others have taken theirs: in_flight hits 0 mid-run
    dispenser, drained = make(3, 3)
    dispenser.take()
    dispenser.done()
    settle()
    assert drained.calls == 0
    dispenser.take()
    dispenser.take()
    dispenser.done()
    settle()
    assert drained.calls == 0
    dispenser.done()
    settle()
    assert drained.calls == 1


@pytest.mark.parametrize("n, limit, expected", [
    pytest.param(4, 0, 4, id="zero_means_all"),
    pytest.param(4, -1, 4, id="negative_means_all"),
    pytest.param(4, 10, 4, id="more_than_there_are"),
    pytest.param(4, 4, 4, id="exactly_all"),
    pytest.param(4, 1, 1, id="one"),
])
def test_limit(n: int, limit: int, expected: int):
    dispenser, drained = make(n, limit)
    assert dispenser.limit == expected
    indices = []
    while (p := dispenser.take()) is not None:
        indices.append(p.index)
        dispenser.done()
    assert indices == list(range(expected))
    settle()
    assert drained.calls == 1


def test_empty_prompt_list_drains_immediately():
    dispenser, drained = make(0, 5)
    assert dispenser.limit == 0
    assert dispenser.take() is None
    settle()
    assert drained.calls == 1
    dispenser.done()
    settle()
    assert drained.calls == 1


def test_in_flight_counts_handed_out_minus_finished():
    dispenser, _ = make(5, 5)
    dispenser.take()
    dispenser.take()
    assert dispenser.in_flight == 2
    dispenser.done()
    assert (dispenser.handed_out, dispenser.finished, dispenser.in_flight) == (2, 1, 1)


def test_a_conversation_counts_one_request_per_turn():
    turns = ((10, 4), (30, 4), (50, 4))
    conversation = Prompt(index=0, conversation_id="c", messages=({"role": "user", "content": "q"},) * 5,
                          prompt_tokens=50, max_tokens=4, turns=turns)
    drained = Drained()
    dispenser = PromptDispenser([conversation, *prompts(2)[1:]], 0, drained)
    assert dispenser.planned == 4  # the budget in requests: three turns and one prompt
    assert dispenser.take() is conversation and dispenser.in_flight == 3
    assert dispenser.take() is not None and dispenser.take() is None
    for _ in range(3):  # the conversation's turns and the single prompt: not yet every request
        dispenser.done()
    settle()
    assert drained.calls == 0 and dispenser.in_flight == 1
    dispenser.done()
    settle()
    assert drained.calls == 1
