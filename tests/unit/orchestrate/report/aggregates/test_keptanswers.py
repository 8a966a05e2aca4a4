"""orchestrate/report/aggregates/keptanswers.py: answers kept by the object they came from, while it lives."""

from __future__ import annotations

import gc

import numpy as np

from orchestrate.report.aggregates.keptanswers import KeptAnswers


def test_an_answer_is_kept_for_the_same_object_and_key_only() -> None:
    kept: KeptAnswers[str] = KeptAnswers(2)
    a, b = np.zeros(3), np.zeros(3)  # equal, not the same
    assert kept.keep(a, 1.0, "a at 1") == "a at 1"
    assert kept.get(a, 1.0) == "a at 1" and kept.get(a, 0.5) is None and kept.get(b, 1.0) is None


def test_the_oldest_goes_and_a_freed_object_is_never_matched() -> None:
    kept: KeptAnswers[str] = KeptAnswers(2)
    first, second, third = np.zeros(1), np.zeros(1), np.zeros(1)
    kept.keep(first, "k", "1")
    kept.keep(second, "k", "2")
    kept.keep(third, "k", "3")
    assert kept.get(first, "k") is None and kept.get(second, "k") == "2" and kept.get(third, "k") == "3"
    del third
    gc.collect()
    assert all(kept.get(obj, "k") is None for obj in [np.zeros(1) for _ in range(50)])  # one may reuse its address
    kept.clear()
    assert kept.get(second, "k") is None
