"""A capacity search (``search:``): which load to probe next, and each probe's load section.

Stage: scenario → load. ``search`` is a top-level key and a variant key (a variant's values override the
top level's key by key), and needs ``slo:`` limits to judge each probe by:

```yaml
slo: {ttft_ms: 2000, tpot_ms: 100}
search:
  over: users          # or rate (open loop: requests/s; load.users caps the requests in flight), or
                       # time_scale (a trace replayed faster or slower: dataset: trace)
  range: [1, 256]
  precision: 0.05      # stop when the highest passing and lowest failing loads differ by <= 5 %
  attainment: 0.99     # share of the requests sent in a probe's steady state that met every limit
  warmup_prompts: 8    # sent once before the first probe, counted nowhere
```

The search bisects the range in log space (each probe at the geometric middle of the highest load that
passed and the lowest that failed, the range's ends until then), so every probe halves the ratio between
them: 8 or 9 probes find the answer to 5 % anywhere in [1, 1000], where growing ×2 from the low end and
then bisecting takes up to 16. Then it probes the two loads at the boundary once more (``confirm``): a load
passes only when every probe of it passed, so one lucky probe cannot set the answer. Users are whole numbers, so a users
search also ends when the boundary loads are neighbours. Whether a probe passed is the report
stage's judgement (``orchestrate.report.aggregates.capacity``), from its summary alone.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from orchestrate.scenario.spec import DEFAULT_SETTLE_S, DEFAULT_WARMUP_PROMPTS, LoadSpec, Search
from orchestrate.scenario.yamlsource import Checker

SEARCH_KEYS = {"over", "range", "precision", "attainment", "prompts_per_user", "probe_s", "max_probes", "settle_s",
               "confirm", "warmup_prompts"}
OVER = ("users", "rate", "time_scale")
DEFAULT_RANGE = (1, 256)
CANNOT_PASS = "cannot_pass"
"""``stopped_by`` of a probe stopped once it could no longer reach its attainment (``load.probewatch``)."""
MIN_RATE_PROMPTS = 40
"""An open-loop probe sends at least this many prompts (its window needs 20 on schedule)."""


def parse_search(check: Checker, top: Any, own: Any, own_at: tuple[Any, ...], load: LoadSpec, has_slo: bool,
                 swept: bool) -> Search | None:
    """The top level's ``search`` overridden key by key by a variant's; None when neither has one.

    Errors name the line of the value that is wrong, in whichever section holds it.
    """
    base = check.mapping(top, ("search",), SEARCH_KEYS)
    override = check.mapping(own, own_at, SEARCH_KEYS)
    if not base and not override:
        return None
    merged = {**base, **override}

    def at(key: str) -> tuple[Any, ...]:
        return own_at + (key,) if key in override else ("search", key)

    where = own_at if override else ("search",)
    over = merged.get("over", "users")
    if over not in OVER:
        raise check.fail(at("over"), f"must be users, rate or time_scale, got {over!r}")
    low, high = _range(check, merged.get("range", list(DEFAULT_RANGE)), at("range"), over)
    n = check.number
    precision = n(merged.get("precision", 0.05), at("precision"), float, 0)
    attainment = n(merged.get("attainment", 0.99), at("attainment"), float, 0)
    confirm = merged.get("confirm", True)
    if not isinstance(confirm, bool):
        raise check.fail(at("confirm"), f"must be true or false, got {confirm!r}")
    search = Search(over, low, high, precision, attainment,
                    prompts_per_user=n(merged.get("prompts_per_user", 4), at("prompts_per_user"), int, 3),
                    probe_s=n(merged.get("probe_s", 30.0), at("probe_s"), float, 1),
                    max_probes=n(merged.get("max_probes", 16), at("max_probes"), int, 2),
                    settle_s=n(merged.get("settle_s", DEFAULT_SETTLE_S), at("settle_s"), float, 0), confirm=confirm,
                    warmup_prompts=n(merged.get("warmup_prompts", DEFAULT_WARMUP_PROMPTS), at("warmup_prompts"), int, 0))
    found = problem(search, load, has_slo, swept)
    if found is not None:
        key, message = found
        raise check.fail(at(key) if key else where, message)
    return search


def problem(search: Search, load: LoadSpec, has_slo: bool, swept: bool) -> tuple[str | None, str] | None:
    """What makes a search impossible for a variant: (the search key at fault or None, why); None if nothing.
    The scenario parser and ``tokenswarm capacity``'s flags both ask."""
    if not has_slo:
        return None, ("a capacity search needs SLO limits to judge each probe by: slo: {ttft_ms: 2000, tpot_ms: 100} "
                      "in a scenario, --slo ttft_ms=2000,tpot_ms=100 on the command line")
    if swept:
        return None, "a capacity search chooses its own loads: no load key may list values (a sweep) in the same variant"
    if load.stages:
        return None, "a capacity search sets the load itself: remove load.stages"
    if search.over == "users" and load.rate is not None:
        return "over", "over users is a closed loop: remove load.rate, or search over rate"
    if (search.over == "time_scale") != (load.trace is not None):
        return "over", ("a trace sets its own arrivals: search over time_scale (how fast it is replayed)"
                        if load.trace is not None else "over time_scale replays a trace: set load.dataset: trace")
    if not 0 < search.low < search.high:
        return "range", f"must be 0 < low < high, got [{search.low:g}, {search.high:g}]"
    if not 0 < search.precision < 1:
        return "precision", f"must be a share between 0 and 1 (0.05: 5 %), got {search.precision!r}"
    if not 0 < search.attainment <= 1:
        return "attainment", f"must be a share above 0 and at most 1 (0.99: 99 %), got {search.attainment!r}"
    return None


def _range(check: Checker, raw: Any, at: tuple[Any, ...], over: str) -> tuple[float, float]:
    if not isinstance(raw, list) or len(raw) != 2:
        raise check.fail(at, f"must be [low, high], the loads to search between (e.g. [1, 256]), got {raw!r}")
    kind = int if over == "users" else float
    return (check.number(raw[0], at + (0,), kind, 1 if over == "users" else 0),
            check.number(raw[1], at + (1,), kind, 1 if over == "users" else 0))


def verdicts(history: list[tuple[float, bool]]) -> dict[float, bool]:
    """Each load probed → whether every probe of it passed."""
    out: dict[float, bool] = {}
    for value, passed in history:
        out[value] = out.get(value, True) and passed
    return out


def boundary(history: list[tuple[float, bool]]) -> tuple[float | None, float | None]:
    """(max_passing, min_failing): the lowest load that failed, and the highest that passed below it
    (a load above a failing one that passed is noise, not capacity)."""
    judged = verdicts(history)
    failing = [v for v, ok in judged.items() if not ok]
    min_failing = min(failing) if failing else None
    passing = [v for v, ok in judged.items() if ok and (min_failing is None or v < min_failing)]
    return (max(passing) if passing else None), min_failing


def converged(search: Search, max_passing: float | None, min_failing: float | None) -> bool:
    """The boundary is as close as the search asks: within ``precision``, or neighbouring user counts."""
    if max_passing is None or min_failing is None:
        return True  # below the range's low end, or at least its high end
    if search.over == "users" and min_failing - max_passing <= 1:
        return True
    return (min_failing - max_passing) / max_passing <= search.precision


def _between(search: Search, low: float, high: float) -> float:
    """The geometric middle of two loads: a whole number of users strictly between, or a rate to 3 digits."""
    middle = math.sqrt(low * high)
    if search.over == "users":
        return float(min(max(math.floor(middle), low + 1), high - 1))
    for digits in (3, 4, 5, 6):  # short, unless that lands on a bound (a precision finer than 1 %)
        if low < (rounded := float(f"{middle:.{digits}g}")) < high:
            return rounded
    return middle


def next_probe(search: Search, history: list[tuple[float, bool]]) -> float | None:
    """The next load to probe given every probe so far ``(load, passed)``, in order; None when done.

    Bisection in log space between the highest passing load (else the range's low end) and the lowest
    failing one (else its high end): each probe halves the ratio of the two, so the answer to 5 % over
    [1, 1000] takes 8 or 9 probes wherever it lies; the range's ends are probed only when every probe passed
    (its high end) or failed (its low end). Then the boundary's two loads are probed again (``confirm``).
    """
    if len(history) >= search.max_probes:
        return None
    if not history and search.start is not None:
        return search.start
    max_passing, min_failing = boundary(history)
    if min_failing == search.low or max_passing == search.high:
        return None  # below the range, or at least its high end
    low = search.low if max_passing is None else max_passing
    high = search.high if min_failing is None else min_failing
    if not converged(search, low, high):
        return _between(search, low, high)
    if max_passing is None:
        return search.low
    if min_failing is None:
        return search.high
    if search.confirm:
        probed = [value for value, _ in history]
        for value in (max_passing, min_failing):
            if probed.count(value) < 2:
                return value
    return None


def probe_load(search: Search, load: LoadSpec, value: float) -> LoadSpec:
    """A probe's load section: ``value`` users (spawned at once) or a rate, with enough prompts for a window."""
    if search.over == "users":
        users = int(value)
        return replace(load, users=users, spawn_rate=float(max(users, load.spawn_rate)),
                       num_prompts=search.prompts_per_user * users, warmup_prompts=0)
    if search.over == "time_scale":  # the whole trace, replayed ``value`` times as fast
        assert load.trace is not None  # ``problem`` holds it
        return replace(load, trace=replace(load.trace, time_scale=value), warmup_prompts=0)
    return replace(load, rate=value, num_prompts=max(MIN_RATE_PROMPTS, math.ceil(round(value * search.probe_s, 6))),
                   warmup_prompts=0)


def first_pool_size(search: Search, load: LoadSpec) -> int:
    """A search's first sample: its warm-up and twice its first probe's prompts (more come as needed)."""
    first = next_probe(search, []) or search.low
    return search.warmup_prompts + 2 * probe_load(search, load, first).num_prompts


def settings(search: Search | None) -> dict[str, Any]:
    """What a search adds to a variant's settings: the loads it may try and what a pass is."""
    if search is None:
        return {}
    return {"search.over": search.over, "search.range": [search.low, search.high],
            "search.attainment": search.attainment, "search.precision": search.precision}
