"""A fitted trace → the prompts that reproduce it: lengths as the server counts them, shared prefixes as its blocks.

Stage: dataset (``load.prompts`` calls it once per variant, against the server, before Locust starts).

**Blocks.** Each ``hash_ids`` id becomes one fixed text of ``block_tokens`` tokens (counted by the server's
``/tokenize``), cut from its own natural text (``fixedprompts.ConversationText``: no two ids share text).
A prompt is its blocks' texts in order, the last one cut where the prompt's length is exact, so two requests
whose ids share a leading run share that text, and their prompts the same leading tokens: the server's prompt
cache serves them as it would the real ones. Each text starts with a space and a word, so a block's tokens
do not merge with the one before it.

**Exact lengths.** The last block is cut (``fixedprompts.exact_message``) until the whole prompt, chat template
included, is the row's scaled length as the server counts it; one it cannot reach (below the chat template's own
tokens, or a cut no text allows) is counted in ``inexact``.
Without ``/tokenize`` lengths are ``chars / 4`` estimates, as for ``dataset: random``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from locustfiles.dataset import DataFileError, Prompt, SampleResult
from orchestrate.load.fixedprompts import FALLBACK_CHARS_PER_TOKEN, ConversationText, Counters, cut_to, exact_message
from orchestrate.load.traces.window import TraceRequest
from orchestrate.scenario.trace import TraceConditions
from orchestrate.server.preflight import Messages

MIN_TAIL_TOKENS = 1
"""The last block keeps at least this many tokens of its own."""


@dataclass(frozen=True)
class TracePrompts:
    """The prompts of a trace, in send order, and how exact they are."""

    sample: SampleResult
    text: str
    """Where the blocks' text came from: ``sharegpt-v3`` or ``synthetic``."""
    inexact: int = 0


class BlockTexts:
    """One text per block id, read once and cut once to ``tokens`` tokens (a trace's blocks are stored once)."""

    def __init__(self, source: ConversationText, tokens: int, count: Callable[[str], int] | None) -> None:
        self.source, self.tokens, self.count = source, tokens, count
        self.raws: dict[int, str] = {}
        """Block id → the natural text it is cut from (its own: the ``k``-th id reads the ``k``-th opening)."""
        self.texts: dict[int, str] = {}
        self.ratio = float(FALLBACK_CHARS_PER_TOKEN)
        """Characters per token of the cuts so far: where the next cut starts."""

    def raw(self, block: int) -> str:
        found = self.raws.get(block)
        if found is None:
            chars = round(self.tokens * self.ratio * 2) + 80
            found = self.raws[block] = " " + self.source.for_prompt(len(self.raws), chars).lstrip()
        return found

    def text(self, block: int) -> str:
        """The block's text: ``tokens`` tokens as the server counts them (estimated without a counter)."""
        found = self.texts.get(block)
        if found is None:
            raw = self.raw(block)
            if self.count is None:
                found = raw[:self.tokens * FALLBACK_CHARS_PER_TOKEN]
            else:
                found, got = cut_to(self.count, "", raw, self.tokens, self.ratio)
                self.ratio = max(0.5, len(found) / max(1, got))
            self.texts[block] = found
        return found


def trace_prompts(requests: Sequence[TraceRequest], conditions: TraceConditions, counters: Counters | None,
                  count_chats: Callable[[list[Messages]], list[int]] | None, token_counter: str,
                  per_slot_ctx: int | None, seed: int) -> TracePrompts:
    """One prompt per request, numbered in send order, each with its ``at_s`` (trace time) and ``max_tokens``."""
    source = ConversationText(seed)
    blocks = BlockTexts(source, conditions.block_tokens, counters.text if counters is not None else None)
    overhead = 0
    if counters is not None:
        probe = "Hello there."
        overhead = counters.prompt(probe) - counters.text(probe)
    prompts: list[Prompt] = []
    inexact = 0
    for i, request in enumerate(requests):
        if request.messages:
            messages = request.messages
            got = count_chats([list(messages)])[0] if count_chats is not None else \
                sum(len(m["content"]) for m in messages) // FALLBACK_CHARS_PER_TOKEN + 1
        else:
            assert request.input_tokens is not None  # a row without text has its length (files.py)
            content, got = _content(request, max(request.input_tokens, overhead + MIN_TAIL_TOKENS), blocks, source,
                                    counters, overhead, i)  # shorter than the chat template: as short as it can be
            inexact += got != request.input_tokens
            messages = ({"role": "user", "content": content},)
        if per_slot_ctx is not None and got + request.output_tokens > per_slot_ctx:
            raise DataFileError(f"trace line {request.line}: a prompt of {got} tokens with max_tokens "
                                f"{request.output_tokens} does not fit the server's per-slot context of {per_slot_ctx} "
                                "tokens (ctx-size / parallel); set load.trace.max_input_tokens or input_scale")
        prompts.append(Prompt(i, f"trace-{request.line}", messages, got, request.output_tokens, at_s=request.at_s))
    prompts = sessions(prompts, requests, count_chats)
    sample = SampleResult(prompts, {}, len(prompts), token_counter, len(prompts))
    return TracePrompts(sample, source.name, inexact)


def sessions(prompts: list[Prompt], requests: Sequence[TraceRequest],
             count_chats: Callable[[list[Messages]], list[int]] | None) -> list[Prompt]:
    """The requests of each session folded into one conversation (``multiturn.MultiTurnUser`` plays it): due at
    its first turn's time, each later turn ``delay_s`` after the reply before it, with the server's replies in
    its history (empty here: a turn's ``prompt_tokens`` counts the history without them). The rest stay single
    requests; all in time order, numbered again."""
    turns: dict[str, list[tuple[Prompt, TraceRequest]]] = {}
    out: list[Prompt] = []
    for prompt, request in zip(prompts, requests):
        if request.session is None:
            out.append(prompt)
        else:
            turns.setdefault(request.session, []).append((prompt, request))
    for session, played in turns.items():
        messages: list[dict[str, str]] = []
        counts = []
        for k, (prompt, request) in enumerate(played):
            messages += ([{"role": "assistant", "content": ""}] if k else []) + list(prompt.messages)
            got = count_chats([messages])[0] if count_chats is not None and k else prompt.prompt_tokens
            counts.append((got, request.output_tokens))
        first = played[0][0]
        out.append(Prompt(0, f"session-{session}", tuple(messages), *counts[-1], turns=tuple(counts),
                          at_s=first.at_s, pauses_s=tuple(request.delay_s or 0.0 for _, request in played[1:])))
    out.sort(key=lambda p: p.at_s or 0.0)  # stable: rows sharing a time keep their order
    return [replace(p, index=i) for i, p in enumerate(out)]


def _content(request: TraceRequest, want: int, blocks: BlockTexts, source: ConversationText,
             counters: Counters | None, overhead: int, i: int) -> tuple[str, int]:
    """The prompt's text: its full blocks, then its last block cut to the exact length (or its own text when
    the trace has no blocks), and the length as counted."""
    ids = request.blocks
    full = list(ids[:-1])
    while full and (len(full) + 1) * blocks.tokens > want - overhead:  # rounding: leave the tail some room
        full.pop()
    prefix = "".join(blocks.text(h) for h in full)
    tail = blocks.raw(ids[len(full)]) if ids else \
        " " + source.for_prompt(i, round(want * blocks.ratio * 1.5) + 200).lstrip()
    if counters is None:
        return (prefix + tail)[:max(1, want * FALLBACK_CHARS_PER_TOKEN)].strip(), want
    content, got, _ = exact_message(counters, prefix, tail, want, overhead, blocks.ratio)
    more = len(tail)
    while got < want and len(content) >= len((prefix + tail).rstrip()):  # ran out of text: read on
        more *= 2
        tail = tail + " " + source.for_prompt(i + 1, more).lstrip()
        content, got, _ = exact_message(counters, prefix, tail, want, overhead, blocks.ratio)
    return content, got
