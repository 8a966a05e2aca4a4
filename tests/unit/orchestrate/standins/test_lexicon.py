"""orchestrate/standins/lexicon.py: seeded pseudo-words shared by the tiny model's vocabulary and the dataset."""

from __future__ import annotations

import re

import pytest

from orchestrate.standins.lexicon import pseudo_words


def test_exact_count_of_distinct_lowercase_words() -> None:
    """Each is a distinct lowercase word of two letters or more (one letter would be a byte token)."""
    words = pseudo_words(2000)
    assert len(words) == 2000 == len(set(words))
    assert all(re.fullmatch(r"[a-z]{2,}", w) for w in words)


def test_same_seed_same_list_other_seed_other_list() -> None:
    """The model and the dataset are generated apart; they agree only because a seed gives one list."""
    assert pseudo_words(500, seed=3) == pseudo_words(500, seed=3)
    assert pseudo_words(500, seed=3) != pseudo_words(500, seed=4)
    assert pseudo_words(500) == pseudo_words(500, seed=0)


@pytest.mark.parametrize("small, large", [(300, 2000), (1, 50), (2000, 6000)])
def test_a_shorter_list_is_a_prefix_of_a_longer_one(small: int, large: int) -> None:
    """A 300-word tiny model's vocabulary is the start of the 2000-word dataset's, so its words are in-vocab."""
    assert pseudo_words(large)[:small] == pseudo_words(small)


def test_short_words_first_then_longer_once_one_syllable_runs_out() -> None:
    """One-syllable words (at most 6 letters) lead; past a few thousand, longer words appear."""
    words = pseudo_words(6000)
    assert all(len(w) <= 6 for w in words[:1000])
    assert max(len(w) for w in words[-500:]) > 6
    # the mean length grows from the first thousand to the last
    assert sum(map(len, words[:1000])) < sum(map(len, words[-1000:]))


def test_zero_words() -> None:
    assert pseudo_words(0) == []
