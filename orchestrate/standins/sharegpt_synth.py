"""Seeded ShareGPT-format files for the demo and tests (no text is copied from anywhere).

Ground floor (imports no stage; the scenario's ``synthetic`` datasets and the load's prompts call it).
Allowed imports: the standard library and ``orchestrate.standins.lexicon`` (the same pseudo-words the demo
model's vocabulary is built from).

Shape of the data (per conversation, drawn from one ``random.Random(seed)``):

* prompt (first human turn) words: log-normal, median 60, sigma 0.95, clipped to 900;
* reply words: log-normal, median 180, sigma 0.8, clipped to 1200, mildly correlated with the
  prompt (long questions get longer answers);
* rare shapes, so every sampler rule fires on a ~2000-conversation file: one human turn only
  (3%), a system turn first (3%), a reply first (a split conversation, 2%), an empty value (1.5%),
  a 1-3 word prompt (2%) or reply (2%), a pasted-document prompt of 1030-1500 words (0.8%), a long
  exchange whose prompt + reply exceed 2048 words with the prompt under 1024 (0.8%);
* 15% multi-turn (4-8 turns, alternating human/gpt).

Words follow a Zipf-like skew over ``pseudo_words(2000, seed=0)`` (the demo vocabulary) with
sentence capitalisation and punctuation; about 2% are out-of-vocabulary (pseudo-words past the
first 2000, accented variants, numbers, snake_case) so byte/letter fallback happens too. Every
text with n words has exactly n whitespace-separated tokens.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

from orchestrate.standins.lexicon import pseudo_words

VOCAB_SIZE = 2000
PROMPT_MEDIAN, PROMPT_SIGMA, PROMPT_CLIP = 60, 0.95, 900
REPLY_MEDIAN, REPLY_SIGMA, REPLY_CLIP = 180, 0.8, 1200
OOV_RATE = 0.02

_ALL_WORDS = pseudo_words(VOCAB_SIZE + 400, seed=0)
_VOCAB, _EXTRA = _ALL_WORDS[:VOCAB_SIZE], _ALL_WORDS[VOCAB_SIZE:]
_CUM = list(itertools.accumulate(1.0 / (k + 2.7) for k in range(VOCAB_SIZE)))  # Zipf-Mandelbrot
_ACCENTS = {"a": "á", "e": "é", "i": "ï", "o": "ø", "u": "ü"}
_ID_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

# Rare conversation shapes, with their probabilities (the rest are ordinary).
_SHAPES = (("single_turn", 0.03), ("system_first", 0.03), ("reply_first", 0.02),
           ("empty_value", 0.015), ("tiny_prompt", 0.02), ("tiny_reply", 0.02),
           ("huge_prompt", 0.008), ("long_exchange", 0.008))
MULTI_TURN_RATE = 0.15


def _oov_word(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.4:
        return rng.choice(_EXTRA)
    if kind < 0.6:
        word = rng.choice(_VOCAB)
        return "".join(_ACCENTS.get(c, c) if rng.random() < 0.5 else c for c in word)
    if kind < 0.8:
        return str(rng.randint(0, 99999))
    return f"{rng.choice(_VOCAB)}_{rng.choice(_VOCAB)}"


def _text(rng: random.Random, n_words: int) -> str:
    """``n_words`` whitespace-separated words in sentences; "" for 0."""
    if n_words <= 0:
        return ""
    words = rng.choices(_VOCAB, cum_weights=_CUM, k=n_words)
    parts: list[str] = []
    left = rng.randint(4, 18)
    capital = True
    for i, word in enumerate(words):
        if rng.random() < OOV_RATE:
            word = _oov_word(rng)
        if capital or rng.random() < 0.01:
            word = word[:1].upper() + word[1:]
        capital = False
        left -= 1
        end = left == 0 or i == n_words - 1
        if end:
            word += rng.choices(".?!", weights=(8, 2, 1))[0]
            left, capital = rng.randint(4, 18), True
        elif rng.random() < 0.06:
            word += ","
        parts.append(word)
        if i < n_words - 1:
            parts.append("\n\n" if end and rng.random() < 0.15 else " ")
    return "".join(parts)


def _lengths(rng: random.Random) -> tuple[int, int]:
    """(prompt words, reply words) of an ordinary opening pair."""
    zp, zr = rng.gauss(0, 1), rng.gauss(0, 1)
    zr = 0.3 * zp + math.sqrt(1 - 0.3 ** 2) * zr
    prompt = round(PROMPT_MEDIAN * math.exp(PROMPT_SIGMA * zp))
    reply = round(REPLY_MEDIAN * math.exp(REPLY_SIGMA * zr))
    return min(max(prompt, 1), PROMPT_CLIP), min(max(reply, 1), REPLY_CLIP)


def _shape(rng: random.Random) -> str:
    r = rng.random()
    for name, p in _SHAPES:
        if r < p:
            return name
        r -= p
    return "ordinary"


def _conversation(rng: random.Random, conv_id: str, multi_turn_rate: float = MULTI_TURN_RATE) -> dict[str, Any]:
    shape = _shape(rng)
    prompt, reply = _lengths(rng)
    if shape == "tiny_prompt":
        prompt = rng.randint(1, 3)
    elif shape == "tiny_reply":
        reply = rng.randint(1, 3)
    elif shape == "huge_prompt":
        prompt = rng.randint(1030, 1500)
    elif shape == "long_exchange":
        prompt = rng.randint(900, 1000)
        reply = rng.randint(2060 - prompt, 1250)
    turns = [("human", prompt), ("gpt", reply)]
    if shape != "single_turn" and rng.random() < multi_turn_rate:
        for k in range(rng.randint(4, 8) - 2):
            more_prompt, more_reply = _lengths(rng)
            turns.append(("human", more_prompt) if k % 2 == 0 else ("gpt", more_reply))
    if shape == "single_turn":
        turns = turns[:1]
    elif shape == "reply_first":
        turns = turns[1:] + [("human", _lengths(rng)[0]), ("gpt", _lengths(rng)[1])]
    elif shape == "system_first":
        turns.insert(0, ("system", rng.randint(8, 40)))
    elif shape == "empty_value":
        k = rng.randrange(2)
        turns[k] = (turns[k][0], 0)
    return {"id": conv_id,
            "conversations": [{"from": role, "value": _text(rng, n)} for role, n in turns]}


SYNTHETIC_KINDS = {"synthetic": MULTI_TURN_RATE, "synthetic-multiturn": 1.0}
"""Dataset names that mean a generated file, and the share of its conversations that go on past
the opening pair (``synthetic-multiturn``: every one, for multi-turn replay)."""
DEFAULT_CONVERSATIONS = 2000


def parse_synthetic(name: str) -> tuple[str, int, float] | None:
    """``synthetic[:N]`` or ``synthetic-multiturn[:N]`` → (kind, N, multi-turn rate); None for a path.

    Raises ``ValueError`` for such a name with an N that is not a whole number ≥ 1.
    """
    kind, sep, count = name.partition(":")
    if kind not in SYNTHETIC_KINDS:
        return None
    if sep and (not count.isdigit() or int(count) < 1):
        raise ValueError(f"{kind}:N needs a whole number N >= 1, got {name!r}")
    return kind, int(count) if sep else DEFAULT_CONVERSATIONS, SYNTHETIC_KINDS[kind]


def generate_sharegpt(n_conversations: int, seed: int = 0, multi_turn_rate: float = MULTI_TURN_RATE
                      ) -> list[dict[str, Any]]:
    """``n_conversations`` ShareGPT V3 entries (``{"id", "conversations"}``), the same per seed.

    ``multi_turn_rate``: the share of conversations that go on past the opening pair (4-8 turns in
    all); 1.0 makes a file for multi-turn replay.
    """
    if n_conversations < 0:
        raise ValueError(f"n_conversations must be >= 0, got {n_conversations}")
    rng = random.Random(seed)
    seen: set[str] = set()
    data = []
    for _ in range(n_conversations):
        conv_id = "".join(rng.choices(_ID_CHARS, k=7))
        while conv_id in seen:
            conv_id = "".join(rng.choices(_ID_CHARS, k=7))
        seen.add(conv_id)
        data.append(_conversation(rng, f"{conv_id}_{rng.choice((0, 0, 0, 1, 2))}", multi_turn_rate))
    return data


def write_sharegpt(path: Path, n_conversations: int, seed: int = 0, multi_turn_rate: float = MULTI_TURN_RATE
                   ) -> Path:
    """Write a generated file (UTF-8, indent 2, like the real one); byte-identical per seed."""
    path = Path(path)
    text = json.dumps(generate_sharegpt(n_conversations, seed, multi_turn_rate), ensure_ascii=False, indent=2)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    """``python -m orchestrate.standins.sharegpt_synth OUT.json --conversations N --seed S``."""
    parser = argparse.ArgumentParser(prog="python -m orchestrate.standins.sharegpt_synth",
                                     description="Write a seeded synthetic ShareGPT-format file.")
    parser.add_argument("out", type=Path, help="output JSON path")
    parser.add_argument("--conversations", type=int, default=2000, help="how many (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--multi-turn-rate", type=float, default=MULTI_TURN_RATE,
                        help=f"share of conversations past the opening pair (default {MULTI_TURN_RATE}; "
                        "1 for multi-turn replay)")
    args = parser.parse_args(argv)
    if args.conversations < 0:
        parser.error("--conversations must be >= 0")
    if not 0 <= args.multi_turn_rate <= 1:
        parser.error("--multi-turn-rate must be between 0 and 1")
    path = write_sharegpt(args.out, args.conversations, args.seed, args.multi_turn_rate)
    print(f"wrote {args.conversations} conversations to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
