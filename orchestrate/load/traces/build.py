"""A fitted trace → the prompts that reproduce it: lengths as the server counts them, shared prefixes as its blocks.

Stage: dataset (``load.prompts`` calls it once per variant, against the server, before Locust starts).

**Blocks.** Each ``hash_ids`` id becomes one fixed run of ``block_tokens`` tokens of natural text
(``fixedprompts.ConversationText``: no two ids share text), cut from the server's own tokens (``/tokenize`` with
pieces, one call for many blocks; ``BlockTexts``). A prompt is its blocks' texts in order, the last one cut where
the prompt's length is exact, so two requests whose ids share a leading run share that text, and their prompts the
same leading tokens: the server's prompt cache serves them as it would the real ones. Each run starts at a word,
so a block's tokens do not merge with the end of the one before it.

**Exact lengths.** The last block is cut by its pieces and the whole prompt, chat template included, counted once
(about two counts a prompt: the template's share at a text's edges can differ by a token); where that misses, the
cut is searched for by counting (``fixedprompts.exact_message``). A length it cannot reach (below the chat
template's own tokens, or a cut no text allows) is counted in ``inexact``. Without ``/tokenize`` lengths are
``chars / 4`` estimates, as for ``dataset: random``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from locustfiles.dataset import DataFileError, Prompt, SampleResult
from orchestrate.load.fixedprompts import (
    FALLBACK_CHARS_PER_TOKEN,
    ConversationText,
    Counters,
    cut_to,
    exact_reading,
    pad_to,
    template_share,
)
from orchestrate.load.traces.window import TraceRequest
from orchestrate.scenario.trace import TraceConditions
from orchestrate.server.preflight import Messages

MIN_TAIL_TOKENS = 1
"""The last block keeps at least this many tokens of its own."""
MAX_TRIES = 3
"""Cuts of the last block by its pieces, each checked by one count, before the cut is searched for by counting."""


@dataclass(frozen=True)
class TracePrompts:
    """The prompts of a trace, in send order, and how exact they are."""

    sample: SampleResult
    text: str
    """Where the blocks' text came from: ``sharegpt-v3`` or ``synthetic``."""
    inexact: int = 0


CHUNK_BLOCKS = 32
"""Blocks cut from the pieces of one ``/tokenize`` call."""


class BlockTexts:
    """One text per block id, cut once to ``tokens`` tokens and kept (a trace's blocks are stored once).

    With the server's pieces (``Counters.pieces``) a block is a run of ``tokens`` consecutive tokens of natural
    text, cut from one ``/tokenize`` call for ``CHUNK_BLOCKS`` blocks; a run starts at a word (pieces before the
    next word are skipped), so a block's tokens do not merge with the end of whichever block comes before it.
    Without pieces each block is cut by counting (``fixedprompts.cut_to``: a few calls a block), and without a
    counter it is ``tokens × 4`` characters.
    """

    def __init__(self, source: ConversationText, tokens: int, counters: Counters | None) -> None:
        self.source, self.tokens, self.counters = source, tokens, counters
        self.texts: dict[int, str] = {}
        self.pieces: dict[int, tuple[str, ...]] = {}
        """Block id → its tokens' texts (with the server's pieces only): the last block of a prompt is cut by them."""
        self.ratio = float(FALLBACK_CHARS_PER_TOKEN)
        """Characters per token of the text so far: how much to read for the next cut."""
        self._stream = source.stream()
        self._runs: list[tuple[str, ...]] = []

    def _run(self) -> tuple[str, ...]:
        """The next ``tokens`` pieces of the text, starting at a word."""
        assert self.counters is not None and self.counters.pieces is not None
        while not self._runs:
            parts: list[str] = []
            size, want = 0, round(self.tokens * CHUNK_BLOCKS * self.ratio * 1.2) + 200
            while size < want:
                parts.append(next(self._stream))
                size += len(parts[-1]) + 2
            text = "\n\n".join(parts)
            pieces = self.counters.pieces(text)
            self.ratio = max(0.5, len(text) / max(1, len(pieces)))
            k = 0
            while k + self.tokens <= len(pieces):
                if pieces[k][:1] in (" ", "\n"):  # a word starts here
                    self._runs.append(tuple(pieces[k:k + self.tokens]))
                    k += self.tokens
                else:
                    k += 1
        return self._runs.pop(0)

    def text(self, block: int) -> str:
        """The block's text: ``tokens`` tokens as the server counts them (estimated without a counter)."""
        found = self.texts.get(block)
        if found is None:
            if self.counters is not None and self.counters.pieces is not None:
                self.pieces[block] = run = self._run()
                found = "".join(run)
            else:
                raw = " " + self.source.for_prompt(len(self.texts), round(self.tokens * self.ratio * 2) + 80).lstrip()
                if self.counters is None:
                    found = raw[:self.tokens * FALLBACK_CHARS_PER_TOKEN]
                else:
                    found, got = cut_to(self.counters.text, "", raw, self.tokens, self.ratio)
                    self.ratio = max(0.5, len(found) / max(1, got))
            self.texts[block] = found
        return found


def trace_prompts(requests: Sequence[TraceRequest], conditions: TraceConditions, counters: Counters | None,
                  count_chats: Callable[[list[Messages]], list[int]] | None, token_counter: str,
                  per_slot_ctx: int | None, seed: int) -> TracePrompts:
    """One prompt per request, numbered in send order, each with its ``at_s`` (trace time) and ``max_tokens``."""
    source = ConversationText(seed)
    blocks = BlockTexts(source, conditions.block_tokens, counters)
    overhead = template_share(counters)
    prompts: list[Prompt] = []
    inexact = 0
    for i, request in enumerate(requests):
        if request.messages:
            messages = request.messages
            got = count_chats([list(messages)])[0] if count_chats is not None else \
                sum(len(m["content"]) for m in messages) // FALLBACK_CHARS_PER_TOKEN + 1
        else:
            assert request.input_tokens is not None  # a row without text has its length (files.py)
            content, got, overhead = _content(request, max(request.input_tokens, overhead + MIN_TAIL_TOKENS), blocks,
                                              source, counters, overhead, i)  # below the template: its shortest
            inexact += got != request.input_tokens
            messages = ({"role": "user", "content": content},)
        if per_slot_ctx is not None and got + request.output_tokens > per_slot_ctx:
            raise DataFileError(f"{conditions.path}:{request.line}: a prompt of {got} tokens with max_tokens "
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
             counters: Counters | None, overhead: int, i: int) -> tuple[str, int, int]:
    """The prompt's text: its full blocks, then its last block cut to the exact length (or text of its own when
    the trace has no blocks), the length as counted, and the chat template's share as seen at this text (where
    the next prompt's cut starts).

    With the server's pieces the cut is the last block's first pieces that make up the length, checked by one
    count of the whole prompt; where that count differs (tokens merged at a block's edge), or without pieces,
    the cut is searched for by counting (``fixedprompts.exact_reading``)."""
    ids = request.blocks
    full = list(ids[:-1])
    while full and len(full) * blocks.tokens >= want - overhead:  # a length cut or rounded: the last keeps a token
        full.pop()
    prefix = "".join(blocks.text(h) for h in full)
    if ids:
        run = blocks.pieces.get(ids[len(full)])
        needed = want - overhead - len(full) * blocks.tokens
        for _ in range(MAX_TRIES):
            if counters is None or run is None or not 0 < needed <= len(run):
                break
            content = (prefix + "".join(run[:needed])).rstrip()
            got = counters.prompt(content)
            seen = got - needed - len(full) * blocks.tokens  # the template's share at this text
            content, got = pad_to(counters, content, got, want)  # a cut after whitespace (trimmed) falls short
            if got == want:
                return content, got, seen
            needed -= got - want  # the template's share at this text's edges differs: cut again by the miss
    head = blocks.text(ids[len(full)]) if ids else ""  # the cut starts in the last block's own text

    def read(chars: int) -> str:
        return head + " " + source.for_prompt(i, chars).lstrip()
    chars = round(want * blocks.ratio * (1 if ids else 1.5)) + 200
    if counters is None:
        return (prefix + read(chars))[:max(1, want * FALLBACK_CHARS_PER_TOKEN)].strip(), want, overhead
    content, got, _ = exact_reading(counters, prefix, read, chars, want, overhead, blocks.ratio)
    return content, got, overhead
