"""Which candidate a tune starts next, from those tried so far: the climb, the grid, pruning and the floor.

Stage: tune, pure (no server, no files): the loop (``tune/loop.py``) asks, runs the answer, reads its summary
into a ``Standing`` (``report.aggregates.tune.standing``) and asks again, so a resumed tune asks the same
questions and gets the same answers.

**climb** starts at the middle of the grid and tries the best's neighbours one by one (one axis, one step along a
numeric axis in the file's order; any other value of a named one), going on from any that beats it, until none
does. That costs a few starts per axis instead of the product of them all, and finds the grid's best when each
setting, the others held, has one best value (slots: more help until the SLO binds; micro-batch: up to the compute's
width). It can stop at a local best when two settings interact against that (the docs' "Tuning a server").
**grid** tries every candidate. Both start a candidate with a probe at the **floor** (the best capacity so
far less the search's noise, ``floor``): one that cannot hold it is out after that probe; both skip a
candidate a memory failure **prunes** (``pruned``: one that needs at least as much on every axis, an axis
measured not to change memory counting as equal), and both stop at the budget.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Mapping

from orchestrate.report.aggregates.tune import incumbent
from orchestrate.report.schema.tune import Standing
from orchestrate.scenario.flags import canonical_flag
from orchestrate.scenario.spec import Search, Tune

MEMORY_GROWS = {"parallel", "ctx-size", "batch-size", "ubatch-size", "n-gpu-layers", "n-gpu-layers-draft",
                "spec-draft-n-max"}
"""llama-server flags whose larger values never need less memory (more slots, context, batch, layers on the
GPU, draft tokens)."""
CACHE_TYPES = ("q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1", "q8_0", "bf16", "f16", "f32")
"""``cache-type-k``/``-v`` by bytes per element (bf16 and f16 alike)."""
CACHE_BYTES = {name: (i if name != "f16" else CACHE_TYPES.index("bf16")) for i, name in enumerate(CACHE_TYPES)}


def _number(name: str) -> float | None:
    try:
        return float(name)
    except ValueError:
        return None


def _size(axis: str, value: str) -> float | None:
    """How much memory a value needs, as an order along a memory axis; None for an axis memory does not grow on."""
    flag = canonical_flag(axis)
    if flag in ("cache-type-k", "cache-type-v"):
        return CACHE_BYTES.get(value)
    return _number(value) if flag in MEMORY_GROWS else None


NEUTRAL_SHARE = 0.05
"""Two peaks this close (a share of the larger) are the same memory: the axis between them does not change it."""


def neutral_axes(tune: Tune, tried: Mapping[str, Standing]) -> set[int]:
    """The axes seen not to change memory: two candidates measured that differ on that axis only, with peaks
    within ``NEUTRAL_SHARE`` of each other."""
    measured = [(tune.points[n], s.memory_gib) for n, s in tried.items() if s.memory_gib]
    out: set[int] = set()
    for (a, peak_a), (b, peak_b) in itertools.combinations(measured, 2):
        apart = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        if len(apart) == 1 and abs((peak_a or 0) - (peak_b or 0)) <= NEUTRAL_SHARE * max(peak_a or 0, peak_b or 0):
            out.add(apart[0])
    return out


def needs_as_much(tune: Tune, failed: tuple[int, ...], other: tuple[int, ...], neutral: Collection[int] = ()) -> bool:
    """``other`` needs at least the memory of ``failed``: on every axis the same value, one at least as large along
    an axis memory grows on, or any value of an axis seen not to change it (``neutral``)."""
    for i, ((axis, values), a, b) in enumerate(zip(tune.axes, failed, other)):
        if a == b or i in neutral:
            continue
        size_a, size_b = _size(axis, values[a]), _size(axis, values[b])
        if size_a is None or size_b is None or size_b < size_a:
            return False
    return True


def pruned(tune: Tune, tried: Mapping[str, Standing]) -> dict[str, str]:
    """Each untried candidate a memory failure rules out → the failed candidate that does."""
    failures = [name for name, s in tried.items() if s.out_of_memory]
    neutral = neutral_axes(tune, tried) if failures else set()
    out: dict[str, str] = {}
    for name, point in tune.points.items():
        if name in tried:
            continue
        by = next((f for f in failures if needs_as_much(tune, tune.points[f], point, neutral)), None)
        if by is not None:
            out[name] = by
    return out


def neighbours(tune: Tune, a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """One axis apart: by one step along a numeric axis, by any value of a named one."""
    apart = [(i, x, y) for i, (x, y) in enumerate(zip(a, b)) if x != y]
    if len(apart) != 1:
        return False
    i, x, y = apart[0]
    numeric = all(_number(v) is not None for v in tune.axes[i][1])
    return abs(x - y) == 1 or not numeric


def middle(tune: Tune) -> tuple[int, ...]:
    """The climb's start: each axis's middle value (the lower of two middles)."""
    return tuple((len(values) - 1) // 2 for _, values in tune.axes)


def next_candidate(tune: Tune, tried: Mapping[str, Standing]) -> str | None:
    """The candidate to start next (``tried``: the standings so far, in the order run); None when the strategy is
    done (the budget is the loop's)."""
    ruled_out = pruned(tune, tried)
    open_ = [name for name in tune.points if name not in tried and name not in ruled_out]
    if not open_ or tune.strategy == "grid":
        return open_[0] if open_ else None
    best = incumbent(tune, tried)
    if best is None:  # nothing answered yet: the open candidate nearest the middle, the smaller first
        start = middle(tune)
        return min(open_, key=lambda n: (sum(abs(x - y) for x, y in zip(tune.points[n], start)), tune.points[n]))
    return next((n for n in open_ if neighbours(tune, tune.points[n], tune.points[best])), None)


def floor(search: Search, tune: Tune, tried: Mapping[str, Standing]) -> float | None:
    """Where the next candidate's first probe runs: the best capacity so far less the capacity search's
    resolution (``precision``, and one user below it in a users search), so a candidate within the noise of the
    best still gets its full search; None for a full search (no capacity yet, another objective, or a floor at
    the range's low end)."""
    if tune.objective != "capacity" or (best := incumbent(tune, tried)) is None:
        return None
    capacity = tried[best].capacity
    assert capacity is not None  # a capacity objective's value is the capacity
    low = capacity * (1 - search.precision)
    if search.over == "users":  # whole users, as a users search's range is
        low = int(min(math.floor(low), capacity - 1))
    return low if low > search.low else None


def budget_spent(tune: Tune, starts: int, wall_s: float) -> str | None:
    """Why no further candidate may start (in words), given the servers started and the candidates' time; None
    while the budget lasts."""
    if tune.server_starts is not None and starts >= tune.server_starts:
        return f"the budget of {tune.server_starts} server starts was spent"
    if tune.wall_s is not None and wall_s >= tune.wall_s:
        return f"the budget of {tune.wall_s:g} s was spent ({wall_s:.0f} s)"
    return None
