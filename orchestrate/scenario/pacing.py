"""How load arrives besides a fixed number of closed-loop users: a request rate (open loop) or ramp stages.

Stage: scenario → load. The scenario parser hands the merged load section here (``with_load_modes``) and
gets the ``LoadSpec`` back with ``rate``, ``arrival``, ``burstiness``, ``late_ms`` and ``stages``
validated; ``locust_args`` turns them into the Locust flags of ``locustfiles/arrivals.py`` and
``locustfiles/stages.py``.

```yaml
load:
  rate: 20            # requests/s: open loop; users is then the cap on requests in flight
  arrival: poisson    # or constant
  burstiness: 1.0     # gamma shape (vLLM's --burstiness); poisson only
  late_ms: 10         # a request sent more than this after its scheduled time is late
# or
load:
  stages: [{duration_s: 10, users: 4}, {duration_s: 10, users: 16, spawn_rate: 8}]
```
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from typing import Any, Callable

from locustfiles.pacing_params import ARRIVALS, DEFAULT_LATE_MS, Stage, default_spawn_rate
from orchestrate.scenario.spec import TRACE_DATASET, LoadSpec
from orchestrate.scenario.yamlsource import Checker

MODE_KEYS = ("rate", "arrival", "burstiness", "late_ms", "stages")
"""Load keys this module validates (added to ``scenario.LOAD_KEYS``)."""
STAGE_KEYS = {"duration_s", "users", "spawn_rate"}
RATE_ONLY = ("arrival", "burstiness", "late_ms")


def hide_stages(load_raw: dict[str, Any]) -> dict[str, Any]:
    """The merged load section with ``stages`` as a tuple: a list-valued key is a sweep to ``sweep.py``,
    and the stages list is one value, not a list of steps."""
    stages = load_raw.get("stages")
    return {**load_raw, "stages": tuple(stages)} if isinstance(stages, list) else load_raw


def with_load_modes(check: Checker, raw: dict[str, Any], at: Callable[..., tuple[Any, ...]],
                    load: LoadSpec) -> LoadSpec:
    """``load`` with its rate or stages from ``raw`` (the merged load section), validated.

    One line each for: a mode key without its mode, ``stages`` with ``rate``, ``stages`` with ``users``.
    """
    has_rate, has_stages = raw.get("rate") is not None, "stages" in raw
    if has_rate and has_stages:
        raise check.fail(at("stages"), "cannot be combined with rate: choose a request rate (open loop) or "
                                       "ramp stages of users")
    if has_stages:
        return _stages(check, raw, at, load)
    trace = raw.get("dataset") == TRACE_DATASET  # open loop on the trace's own clock: late_ms means something
    for key in RATE_ONLY:
        if key in raw and not has_rate and not (trace and key == "late_ms"):
            raise check.fail(at(key), "only means something with rate (open-loop arrivals), e.g. rate: 20")
    if not has_rate:
        return replace(load, late_ms=check.number(raw["late_ms"], at("late_ms"), float, 0)) if "late_ms" in raw else load
    rate = check.number(raw["rate"], at("rate"), float, 0)
    if rate <= 0:
        raise check.fail(at("rate"), f"must be > 0 requests/s, got {raw['rate']!r}")
    arrival = raw.get("arrival", "poisson")
    if arrival not in ARRIVALS:
        raise check.fail(at("arrival"), f"must be one of {', '.join(ARRIVALS)}, got {arrival!r}")
    if "burstiness" in raw and arrival != "poisson":
        raise check.fail(at("burstiness"), "only applies to arrival: poisson (constant arrivals are evenly spaced)")
    burstiness = check.number(raw.get("burstiness", 1.0), at("burstiness"), float, 0)
    if burstiness <= 0:
        raise check.fail(at("burstiness"), f"must be > 0 (1 = Poisson, < 1 burstier, > 1 more regular), "
                                           f"got {raw['burstiness']!r}")
    late_ms = check.number(raw.get("late_ms", DEFAULT_LATE_MS), at("late_ms"), float, 0)
    return replace(load, rate=rate, arrival=arrival, burstiness=burstiness, late_ms=late_ms)


def _stages(check: Checker, raw: dict[str, Any], at: Callable[..., tuple[Any, ...]], load: LoadSpec) -> LoadSpec:
    if "users" in raw:
        raise check.fail(at("users"), "stages set the users of each stage; remove users (or stages)")
    for key in RATE_ONLY:
        if key in raw:
            raise check.fail(at(key), "only means something with rate (open-loop arrivals), not with stages")
    items = raw["stages"]
    if not isinstance(items, (list, tuple)) or not items:
        raise check.fail(at("stages"), "must be a non-empty list of {duration_s, users, spawn_rate}, "
                                       f"got {list(items) if isinstance(items, tuple) else items!r}")
    default_rate = raw.get("spawn_rate")
    stages: list[Stage] = []
    for i, item in enumerate(items):
        item = check.mapping(item, at("stages", i), STAGE_KEYS)
        for key in ("duration_s", "users"):
            if key not in item:
                raise check.fail(at("stages", i), f"each stage needs duration_s and users; {key} is missing")
        duration = check.number(item["duration_s"], at("stages", i, "duration_s"), float, 0)
        if duration <= 0:
            raise check.fail(at("stages", i, "duration_s"), f"must be > 0 seconds, got {item['duration_s']!r}")
        users = check.number(item["users"], at("stages", i, "users"), int, 1)
        spawn = check.number(item.get("spawn_rate", default_rate), at("stages", i, "spawn_rate"), float, 0.01,
                             optional=True)
        stages.append(Stage(duration, users, spawn if spawn is not None
                            else default_spawn_rate(users, stages[-1] if stages else None)))
    return replace(load, users=max(s.users for s in stages), stages=tuple(stages),
                   spawn_rate=load.spawn_rate if default_rate is not None else max(s.spawn_rate for s in stages))


def stages_duration_s(load: LoadSpec) -> float:
    return sum(s.duration_s for s in load.stages)


def locust_args(load: LoadSpec) -> list[str]:
    """The Locust flags of the load's mode (none for plain closed-loop users)."""
    if load.rate is not None:
        return ["--rate", f"{load.rate:g}", "--arrival", load.arrival, "--burstiness", f"{load.burstiness:g}",
                "--late-ms", f"{load.late_ms:g}", "--seed", str(load.seed)]
    if load.trace is not None:  # a session is a conversation, its replies the server's (single rows play as one)
        return ["--time-scale", f"{load.trace.time_scale:g}", "--late-ms", f"{load.late_ms:g}", "--mode", "multi_turn",
                "--history", "model"]
    if load.stages:
        return ["--stages", json.dumps([asdict(s) for s in load.stages], separators=(",", ":"))]
    return []


def settings(load: LoadSpec) -> dict[str, Any]:
    """The mode's entries of ``settings.variant_settings`` (none in a closed loop, so those settings stay as they were)."""
    if load.rate is not None:
        return {"load.rate": load.rate, "load.arrival": load.arrival,
                "load.burstiness": load.burstiness if load.arrival == "poisson" else None}
    if load.stages:
        return {"load.stages": [asdict(s) for s in load.stages]}
    return {}


def stopped_by(load: LoadSpec, stopped: str, all_sent: Callable[[], bool]) -> str:
    """With stages, a run that ends before every prompt was sent ended with its last stage (``stages_end``)
    unless the time cap came first (the wall clock also counts Locust's start, so it cannot tell)."""
    if not load.stages or stopped not in ("num_prompts", "time_cap") or all_sent():
        return stopped
    capped = load.max_seconds is not None and load.max_seconds < stages_duration_s(load)
    return "time_cap" if capped else "stages_end"


def describe(load: LoadSpec) -> str:
    """``open loop 20 req/s (poisson), at most 16 in flight`` or ``3 stages: 4 → 16 → 32 users over 40 s``."""
    if load.rate is not None:
        shape = (f"poisson, burstiness {load.burstiness:g}" if load.arrival == "poisson" and load.burstiness != 1
                 else load.arrival)
        return f"open loop {load.rate:g} req/s ({shape}), at most {load.users} in flight"
    if load.trace is not None:
        return f"trace replay at {load.trace.time_scale:g}× its speed, at most {load.users} in flight"
    if load.stages:
        return (f"{len(load.stages)} stages: " + " → ".join(str(s.users) for s in load.stages)
                + f" users over {stages_duration_s(load):g} s")
    return f"{load.users} users"
