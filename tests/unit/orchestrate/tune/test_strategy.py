"""orchestrate/tune/strategy.py: the climb against simulated servers whose capacity the test knows, over every
place the best can be, against the full grid (both counted); pruning, the floor and the budget."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from orchestrate.report.aggregates.tune import incumbent
from orchestrate.report.schema.tune import Standing
from orchestrate.scenario.search import next_probe
from orchestrate.scenario.spec import Search, Tune
from orchestrate.tune.strategy import (
    budget_spent,
    floor,
    middle,
    needs_as_much,
    neighbours,
    next_candidate,
    pruned,
)

SEARCH = Search("users", 1, 64)


def grid(axes: dict[str, list[str]], **kw: object) -> Tune:
    named = tuple((axis, tuple(values)) for axis, values in axes.items())
    points = {"_".join(f"{a}-{named[i][1][j]}" for i, (a, j) in enumerate(zip(axes, point))): point
              for point in itertools.product(*(range(len(v)) for v in axes.values()))}
    return Tune(named, points, **kw)  # type: ignore[arg-type]


def capacity_search(true_capacity: int, search: Search) -> int | None:
    """What a capacity search with ``search`` finds on a server that holds exactly ``true_capacity`` users."""
    history: list[tuple[float, bool]] = []
    while (value := next_probe(search, history)) is not None:
        history.append((value, value <= true_capacity))
    passing = [v for v, ok in history if ok]
    return int(max(passing)) if passing else None


def tune(t: Tune, capacity: Callable[[dict[str, str]], int], out_of_memory: Callable[[dict[str, str]], bool]
         = lambda v: False) -> tuple[dict[str, Standing], dict[str, float | None]]:
    """The whole tune against the simulated server: the standings in the order run, and each one's floor."""
    tried: dict[str, Standing] = {}
    floors: dict[str, float | None] = {}
    while (name := next_candidate(t, tried)) is not None:
        values = {a: t.axes[i][1][j] for i, (a, j) in enumerate(zip(dict(t.axes), t.points[name]))}
        if out_of_memory(values):
            tried[name] = Standing(out_of_memory=True, why="ran out")
            continue
        low = floors[name] = floor(SEARCH, t, tried)
        search = SEARCH if low is None else Search("users", low, 64, start=low)
        found = capacity_search(capacity(values), search)
        tried[name] = Standing(found, found, why=None if found else "no probe passed")
    return tried, floors


def slots_and_cost(values: dict[str, str]) -> int:
    """A server of ``parallel`` slots whose per-token time grows ``cost`` ms per busy slot, under a TPOT limit of
    60 ms over a 10 ms base: min(slots, 1 + (60 - 10) // cost) users."""
    return min(int(values["parallel"]), 1 + (60 - 10) // int(values["cost"]))


SPACE = {"parallel": ["2", "4", "8", "16", "32"], "cost": ["1", "2", "5", "10", "25"]}


def test_the_climb_finds_the_grids_best_with_fewer_starts() -> None:
    t = grid(SPACE)
    tried, floors = tune(t, slots_and_cost)
    truth = {name: slots_and_cost({"parallel": SPACE["parallel"][p[0]], "cost": SPACE["cost"][p[1]]})
             for name, p in t.points.items()}
    best = incumbent(t, tried)
    assert best is not None and tried[best].capacity == max(truth.values()) == 32
    assert len(tried) < len(t.points) == 25, list(tried)
    assert list(tried)[0] == "parallel-8_cost-5"  # the middle of the grid
    full = grid(SPACE, strategy="grid")
    every, _ = tune(full, slots_and_cost)
    assert len(every) == 25 and incumbent(full, every) == best
    assert any(low is not None for low in floors.values())


@pytest.mark.parametrize("peak", list(itertools.product(range(5), range(5))))
def test_the_climb_finds_a_single_peak_wherever_it_is(peak: tuple[int, int]) -> None:
    """Capacity falling away from one best point (each setting, the others held, has one best value)."""
    t = grid(SPACE)

    def capacity(values: dict[str, str]) -> int:
        i, j = SPACE["parallel"].index(values["parallel"]), SPACE["cost"].index(values["cost"])
        return 40 - 6 * abs(i - peak[0]) - 5 * abs(j - peak[1])

    tried, _ = tune(t, capacity)
    best = incumbent(t, tried)
    assert best is not None and t.points[best] == peak and tried[best].capacity == 40
    assert len(tried) <= 13 < 25


def test_a_candidate_below_the_floor_is_out_after_one_probe() -> None:
    t = grid({"parallel": ["4", "8"]}, strategy="grid")
    tried = {"parallel-4": Standing(20, 20)}
    low = floor(SEARCH, t, tried)
    assert low == 19  # 5 % of 20 is one user: one below
    search = Search("users", 19, 64, start=19)
    assert next_probe(search, []) == 19 and next_probe(search, [(19, False)]) is None
    assert floor(Search("users", 1, 64, precision=0.2), t, {"a": Standing(20, 20)}) == 16
    assert floor(Search("rate", 1, 64), t, {"a": Standing(10.0, 10.0)}) == pytest.approx(9.5)
    assert floor(SEARCH, t, {"a": Standing(2, 2)}) is None  # the range's low end: a full search
    assert floor(SEARCH, grid({"p": ["1"]}, objective="decode_tok_s"), {"a": Standing(300.0, 8)}) is None


def test_a_memory_failure_prunes_whatever_needs_as_much() -> None:
    t = grid({"parallel": ["4", "8", "16"], "ubatch-size": ["128", "512"], "flash-attn": ["on", "off"]})
    failed = t.points["parallel-8_ubatch-size-512_flash-attn-on"]
    assert needs_as_much(t, failed, t.points["parallel-16_ubatch-size-512_flash-attn-on"])
    assert not needs_as_much(t, failed, t.points["parallel-16_ubatch-size-128_flash-attn-on"])
    assert not needs_as_much(t, failed, t.points["parallel-16_ubatch-size-512_flash-attn-off"])  # not a memory axis
    out = pruned(t, {"parallel-8_ubatch-size-512_flash-attn-on": Standing(out_of_memory=True)})
    assert out == {"parallel-16_ubatch-size-512_flash-attn-on": "parallel-8_ubatch-size-512_flash-attn-on"}
    kv = grid({"cache-type-k": ["q4_0", "q8_0", "f16", "f32"], "np": ["2"]})
    assert pruned(kv, {"cache-type-k-q8_0_np-2": Standing(out_of_memory=True)}) == {
        "cache-type-k-f16_np-2": "cache-type-k-q8_0_np-2", "cache-type-k-f32_np-2": "cache-type-k-q8_0_np-2"}


def test_the_climb_walks_around_what_runs_out_of_memory() -> None:
    """Above 8 slots the server does not load: the best that loads is found, the larger ones never started."""
    t = grid(SPACE)
    tried, _ = tune(t, slots_and_cost, lambda v: int(v["parallel"]) > 8)
    best = incumbent(t, tried)
    assert best is not None and tried[best].capacity == 8
    started_big = [n for n in tried if int(n.split("_")[0].split("-")[1]) > 8]
    assert len(started_big) == 1, started_big  # the first failure at 16 pruned 32


def test_neighbours_middle_and_the_budget() -> None:
    t = grid({"parallel": ["2", "4", "8", "16"], "flash-attn": ["on", "off", "auto"]})
    assert middle(t) == (1, 1)
    assert neighbours(t, (1, 0), (2, 0)) and not neighbours(t, (0, 0), (2, 0))
    assert neighbours(t, (1, 0), (1, 2))  # a named axis: any other value
    assert not neighbours(t, (1, 0), (2, 1))
    assert budget_spent(grid(SPACE, server_starts=3), 3, 0.0) == "the budget of 3 server starts was spent"
    assert budget_spent(grid(SPACE, server_starts=3), 2, 0.0) is None
    assert budget_spent(grid(SPACE, wall_s=60.0), 1, 61.0) == "the budget of 60 s was spent (61 s)"


def test_lower_is_better_for_energy() -> None:
    t = grid({"parallel": ["2", "4"]}, objective="joules_per_output_token")
    assert incumbent(t, {"parallel-2": Standing(0.5, 4), "parallel-4": Standing(0.3, 8)}) == "parallel-4"
    assert incumbent(t, {"parallel-2": Standing(0.3, 4), "parallel-4": Standing(0.5, 8)}) == "parallel-2"


def test_between_equal_capacities_clearly_more_decode_wins() -> None:
    """Capacities are whole users and often equal: the same users with 10 % more decode tok/s win; 3 % is noise."""
    t = grid({"parallel": ["2", "4", "8"]})
    first = Standing(4, 4, 0.5, decode_tok_s=66.7)
    assert incumbent(t, {"parallel-2": first, "parallel-4": Standing(4, 4, 0.6, decode_tok_s=83.7)}) == "parallel-4"
    assert incumbent(t, {"parallel-2": first, "parallel-4": Standing(4, 4, 0.6, decode_tok_s=68.7)}) == "parallel-2"
    assert incumbent(t, {"parallel-2": first, "parallel-4": Standing(3, 3, 0.6, decode_tok_s=99.0)}) == "parallel-2"
    assert incumbent(t, {"parallel-2": Standing(why="failed"), "parallel-8": Standing(2, 2)}) == "parallel-8"


def test_an_axis_measured_not_to_change_memory_prunes_across_its_values() -> None:
    t = grid({"parallel": ["4", "8", "16"], "threads": ["2", "4"]})
    failed = {"parallel-16_threads-2": Standing(out_of_memory=True)}
    assert pruned(t, failed) == {}  # threads might change memory: nothing known yet
    same = {"parallel-4_threads-2": Standing(4, 4, 1.00), "parallel-4_threads-4": Standing(4, 4, 1.03), **failed}
    assert pruned(t, same) == {"parallel-16_threads-4": "parallel-16_threads-2"}
    apart = {"parallel-4_threads-2": Standing(4, 4, 1.0), "parallel-4_threads-4": Standing(4, 4, 1.2), **failed}
    assert pruned(t, apart) == {}
