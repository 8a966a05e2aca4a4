"""The Locust side's judge of a lost server: refusals for a window, reset by any answer."""

from __future__ import annotations

from locustfiles.serverwatch import BACKOFF_S, RefusalWatch, backoff_s


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lost_only_after_every_connection_was_refused_for_the_window() -> None:
    clock, lost = Clock(), []
    watch = RefusalWatch(5.0, on_lost=lost.append, clock=clock)
    assert not watch.refused()
    clock.now += 4.9
    assert not watch.refused() and not lost
    clock.now += 0.1
    assert watch.refused() and lost == [5.0]
    clock.now += 1
    assert watch.refused() and lost == [5.0], "on_lost runs once"
    assert watch.refusals == 4


def test_an_answer_resets_the_window() -> None:
    clock = Clock()
    watch = RefusalWatch(5.0, clock=clock)
    watch.refused()
    clock.now += 4
    watch.answered()
    clock.now += 4
    assert not watch.refused(), "a new outage starts its own window"
    clock.now += 5
    assert watch.refused()


def test_backoff_grows_then_holds() -> None:
    assert [backoff_s(i) for i in range(len(BACKOFF_S) + 2)] == [*BACKOFF_S, BACKOFF_S[-1], BACKOFF_S[-1]]
    assert list(BACKOFF_S) == sorted(BACKOFF_S)
