"""Multi-turn replay: conversations sampled turn by turn, and what a user needs to play them.

Stage: dataset (sampling, before the run) and load (the flags, each turn's request). Allowed
imports: the standard library and ``locustfiles.dataset`` (it runs inside Locust workers).

A sampled conversation is one ``Prompt`` whose ``turns`` hold each user turn's (prompt_tokens,
max_tokens) and whose ``messages`` run from the first user message to the last one kept; turn k
sends the first 2k + 1 messages, so one user playing the turns in order resends a growing prefix
and the server's prompt cache can serve it. Conversations are picked as single mode picks prompts
(the same seeded shuffle and the same rules for the opening pair), then cut where a later turn no
longer fits: the server's per-slot context is what a turn's history must fit in, and nothing else
limits later turns.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from locustfiles.dataset import (
    DROP_RULES,
    HUMAN_ROLES,
    NON_REPLY_ROLES,
    DataFileError,
    Prompt,
    SampleResult,
    SamplingConfig,
    TokenCounter,
    _drop_rule,
)

SINGLE = "single"
MULTI_TURN = "multi_turn"
MODES = (SINGLE, MULTI_TURN)
HISTORY_DATASET = "dataset"
HISTORY_MODEL = "model"
HISTORY_SOURCES = (HISTORY_DATASET, HISTORY_MODEL)
"""Whose replies grow the history: the conversation's own, or what the server answered."""
CUT_RULES = ("empty_turn", "exceeds_slot_context")
"""Why a conversation ends before its last pair: a turn with no user text or no reply to size
``max_tokens`` from, or a turn whose history + ``max_tokens`` overflow the per-slot context."""

HistoryCounter = Callable[[list[list[dict[str, str]]]], list[int]]
"""Prompt tokens of each message list, as the server will count them (chat template included)."""


def add_arguments(parser: Any) -> None:
    """The replay flags, on Locust's parser (they also work in ``locust.conf``)."""
    group = parser.add_argument_group("tokenswarm multi-turn", "replay whole conversations, turn by turn")
    group.add_argument("--mode", choices=MODES, default=SINGLE,
                       help="single: one request per prompt (the opening pair); multi_turn: each user plays "
                       "one conversation turn by turn, history included (picks the user class at start)")
    group.add_argument("--history", choices=HISTORY_SOURCES, default=HISTORY_DATASET,
                       help="multi_turn: replies in the history are the dataset's or the server's own")
    group.add_argument("--think-time", default="0", metavar="S[,MAX]",
                       help="multi_turn: seconds between a reply and the next turn; MIN,MAX draws uniformly "
                       "(seeded by --seed and the conversation)")
    group.add_argument("--max-turns", type=int, default=0,
                       help="multi_turn with --dataset: at most this many user turns per conversation (0 = all)")


@dataclass(frozen=True)
class ThinkTime:
    """Pause before each turn after the first: fixed, or uniform in [low, high], seeded per conversation."""

    low: float = 0.0
    high: float = 0.0

    @classmethod
    def parse(cls, text: str) -> ThinkTime:
        """``"1.5"`` or ``"0.5,2"``; ``ValueError`` names what is wrong."""
        try:
            parts = [float(p) for p in str(text).split(",")]
        except ValueError:
            raise ValueError(f"--think-time must be S or MIN,MAX in seconds, got {text!r}") from None
        if len(parts) not in (1, 2) or min(parts) < 0 or parts[0] > parts[-1]:
            raise ValueError(f"--think-time must be S or MIN,MAX with 0 <= MIN <= MAX, got {text!r}")
        return cls(parts[0], parts[-1])

    def rng(self, seed: int, conversation: int) -> random.Random:
        """The draws of one conversation: the same whichever user or worker plays it."""
        return random.Random(f"{seed}:{conversation}")

    def draw(self, rng: random.Random) -> float:
        return self.low if self.high == self.low else rng.uniform(self.low, self.high)

    def to_arg(self) -> str:
        """The ``--think-time`` value that parses back to this."""
        return f"{self.low:g}" if self.high == self.low else f"{self.low:g},{self.high:g}"


def conversation_pairs(entry: dict[str, Any]) -> list[tuple[str, str]]:
    """The (human, reply) pairs a conversation opens with, up to the first turn that breaks the
    alternation (two human turns in a row, a system turn, a trailing question without a reply).

    The first pair is exactly single mode's opening pair; ``[]`` where single mode has none.
    """
    turns = entry["conversations"]
    pairs = []
    for i in range(0, len(turns) - 1, 2):
        human, reply = turns[i], turns[i + 1]
        if human["from"].lower() not in HUMAN_ROLES or reply["from"].lower() in NON_REPLY_ROLES:
            break
        pairs.append((human["value"], reply["value"]))
    return pairs


def _messages(pairs: Sequence[tuple[str, str]], n_turns: int) -> list[dict[str, str]]:
    """The request of turn ``n_turns - 1``: every earlier pair, then that turn's user message."""
    out: list[dict[str, str]] = []
    for user, reply in pairs[:n_turns]:
        out += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
    return out[:-1]


def turn_prompt(conversation: Prompt, turn: int, replies: Sequence[str | None] = ()) -> Prompt:
    """The request of one turn: the conversation's first ``2 * turn + 1`` messages.

    :param replies: the server's replies to earlier turns (``history: model``); where one is None
        or missing (that turn failed) the dataset's reply stands in.
    """
    if not conversation.turns:  # a single-request prompt plays as a one-turn conversation
        return conversation
    messages = list(conversation.messages[:2 * turn + 1])
    for j, text in enumerate(replies[:turn]):
        if text is not None:
            messages[2 * j + 1] = {"role": "assistant", "content": text}
    prompt_tokens, max_tokens = conversation.turns[turn]
    return replace(conversation, messages=tuple(messages), prompt_tokens=prompt_tokens,
                   max_tokens=max_tokens, turns=())


@dataclass(frozen=True)
class ConversationSample(SampleResult):
    """``SampleResult`` of conversations (``prompts`` hold one per conversation), plus the cuts."""

    cut_by: dict[str, int] = field(default_factory=dict)
    """Conversations cut before their last pair, by the rule of the turn that ended them."""
    turns_dropped: int = 0
    """User turns the cuts removed (turns beyond ``max_turns`` are not counted: they were not asked for)."""
    max_turns: int | None = None

    @property
    def turns_planned(self) -> int:
        return sum(p.requests for p in self.prompts)

    def plan(self) -> dict[str, Any]:
        """What the report needs about the sample: ``conversations.json`` beside ``prompts.jsonl``."""
        return {"planned": len(self.prompts), "turns_planned": self.turns_planned,
                "cut": sum(self.cut_by.values()), "turns_dropped": self.turns_dropped,
                "cut_by": dict(self.cut_by), "max_turns": self.max_turns}


def estimate_history(count_tokens: TokenCounter) -> HistoryCounter:
    """A history counter from a text counter: the sum over the messages' texts (no template)."""
    def count(histories: list[list[dict[str, str]]]) -> list[int]:
        return [sum(count_tokens([m["content"] for m in h])) for h in histories]
    return count


def _count1(counter: Callable[[list[Any]], list[int]], item: Any, name: str) -> int:
    counts = list(counter([item]))
    if len(counts) != 1:
        raise DataFileError(f"token counter {name!r} returned {len(counts)} counts for 1 text")
    return int(counts[0])


def sample_conversations(conversations: Sequence[dict[str, Any]], config: SamplingConfig,
                         count_tokens: TokenCounter, *, count_history: HistoryCounter | None = None,
                         max_turns: int | None = None, token_counter: str | None = None
                         ) -> ConversationSample:
    """Shuffle with ``config.seed`` and keep the first ``num_prompts`` conversations that pass.

    The opening pair must pass single mode's rules (``sample_prompts``: lengths, total, per-slot
    context), so ``max_turns=1`` samples exactly single mode's prompts. Each later pair (up to
    ``max_turns``) becomes a turn while its user text is non-empty, its reply gives a max_tokens
    of at least 1 (``min(reply tokens or fixed_output_tokens, max_tokens)``), and its history
    + max_tokens fit ``per_slot_context`` when that is known; the first that does not cuts the
    conversation there. Replies are counted with ``count_tokens``, histories with
    ``count_history`` (default: the sum of their texts' ``count_tokens``).
    Raises ``DataFileError`` when nothing survives.
    """
    name = token_counter or str(getattr(count_tokens, "__name__", "custom"))
    history = count_history or estimate_history(count_tokens)
    order = list(range(len(conversations)))
    random.Random(config.seed).shuffle(order)  # the same order as sample_prompts
    cap, fixed, ctx = config.max_tokens, config.fixed_output_tokens, config.per_slot_context
    dropped = dict.fromkeys(DROP_RULES, 0)
    cut_by = dict.fromkeys(CUT_RULES, 0)
    kept: list[Prompt] = []
    examined = turns_dropped = 0

    def requested(reply_tokens: int) -> int:
        output = reply_tokens if fixed is None else fixed
        return output if cap is None else min(output, cap)

    for i in order:
        if len(kept) == config.num_prompts:
            break
        examined += 1
        entry = conversations[i]
        pairs = conversation_pairs(entry)[:max_turns or None]
        if not pairs:
            dropped["too_few_turns"] += 1
            continue
        prompt0 = _count1(history, _messages(pairs, 1), name)
        reply0 = _count1(count_tokens, pairs[0][1], name) if fixed is None else fixed
        rule = _drop_rule(prompt0, reply0, requested(reply0), config)
        if rule is not None:
            dropped[rule] += 1
            continue
        turns = [(prompt0, requested(reply0))]
        for k in range(1, len(pairs)):
            user, reply = pairs[k]
            max_tokens = requested(_count1(count_tokens, reply, name) if fixed is None else fixed)
            cut = "empty_turn" if not user.strip() or max_tokens < 1 else None
            if cut is None:
                prompt_k = _count1(history, _messages(pairs, k + 1), name)
                if ctx is not None and prompt_k + max_tokens > ctx:
                    cut = "exceeds_slot_context"
            if cut is not None:
                cut_by[cut] += 1
                turns_dropped += len(pairs) - k
                break
            turns.append((prompt_k, max_tokens))
        messages = _messages(pairs, len(turns))
        kept.append(Prompt(len(kept), entry["id"], tuple(messages), turns[-1][0], turns[-1][1],
                           turns=tuple(turns)))
    if not kept:
        rules = ", ".join(f"{rule}={n}" for rule, n in dropped.items())
        raise DataFileError(f"no conversation survived sampling ({examined} examined, token counter "
                           f"{name!r}; dropped: {rules})")
    return ConversationSample(kept, dropped, examined, name, config.num_prompts, cut_by=cut_by,
                              turns_dropped=turns_dropped, max_turns=max_turns)


def planned_requests(prompts: Sequence[Prompt]) -> int:
    """How many requests prompts make (a conversation one per turn): what a run plans to send."""
    return sum(p.requests for p in prompts)


def check_mode(prompts: Sequence[Prompt], mode: str) -> None:
    """A conversations file played in single mode would send one request per conversation and
    then wait for turns that never come: refuse it with the flag to add."""
    if mode != MULTI_TURN and any(p.turns for p in prompts[:1]):
        raise SystemExit("tokenswarm: the prompts file holds multi-turn conversations; run with --mode multi_turn")
