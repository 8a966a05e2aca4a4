"""Seeded pseudo-English words, shared by the tiny model's vocabulary and the synthetic dataset.

Ground floor (imports no stage; the tiny model and the synthetic datasets are built from it).
Nothing here is copied text: words are built from syllables, so the demo model and the demo
dataset agree on what a "word" is (most synthetic words tokenize to one whole-word piece).
"""

from __future__ import annotations

import random

_ONSETS = ("b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w",
           "z", "br", "ch", "cl", "dr", "fl", "gr", "pl", "pr", "sh", "sl", "st", "th", "tr", "")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "oo")
_CODAS = ("", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ng", "rt", "x")


def pseudo_words(count: int, seed: int = 0) -> list[str]:
    """``count`` distinct lowercase pseudo-words, the same list for the same seed.

    Short words come first (one syllable, then two, then three), which gives the model's
    vocabulary and the dataset a Zipf-like feel when indices are drawn with a skew.
    """
    rng = random.Random(seed)
    words: list[str] = []
    seen: set[str] = set()
    syllables = 1
    attempts = 0
    while len(words) < count:
        word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
                       for _ in range(syllables))
        attempts += 1
        if word not in seen and len(word) > 1:
            seen.add(word)
            words.append(word)
        if attempts > 40 * (len(words) + 1):
            syllables += 1
            attempts = 0
    return words
