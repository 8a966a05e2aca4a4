"""The load section's replay keys: ``mode``, ``history``, ``think_time_s``, ``max_turns``.

Stage: scenario → load. ``scenario._load`` validates them here; ``locust_run`` passes them to Locust as
flags.
"""

from __future__ import annotations

from typing import Any, Callable

from locustfiles.conversations import HISTORY_DATASET, HISTORY_SOURCES, MODES, MULTI_TURN, SINGLE, ThinkTime
from orchestrate.scenario.spec import LoadSpec
from orchestrate.scenario.yamlsource import Checker

REPLAY_KEYS = ("mode", "history", "think_time_s", "max_turns")
"""Load keys of the replay; all but ``mode`` only mean something with ``mode: multi_turn``."""


def hide_think_time(load_raw: dict[str, Any]) -> dict[str, Any]:
    """The merged load section with ``think_time_s: [min, max]`` as a tuple: one value, not a sweep."""
    think = load_raw.get("think_time_s")
    return {**load_raw, "think_time_s": tuple(think)} if isinstance(think, list) else load_raw


def parse_replay(check: Checker, raw: dict[str, Any], at: Callable[..., tuple[Any, ...]]) -> dict[str, Any]:
    """The replay fields of ``LoadSpec`` from a merged load section, validated."""
    mode = raw.get("mode", SINGLE)
    if mode not in MODES:
        raise check.fail(at("mode"), f"must be {' or '.join(MODES)}, got {mode!r}")
    if mode != MULTI_TURN:
        for key in REPLAY_KEYS[1:]:
            if key in raw:
                raise check.fail(at(key), "only means something with mode: multi_turn")
    elif raw.get("rate") is not None:
        raise check.fail(at("mode"), "multi_turn plays each conversation at its user's pace (think_time_s); "
                                     "it does not combine with rate (open loop)")
    elif raw.get("warmup_prompts"):
        raise check.fail(at("warmup_prompts"), "a warm-up sends single prompts; it does not combine with "
                                               "mode: multi_turn (yet)")
    history = raw.get("history", HISTORY_DATASET)
    if history not in HISTORY_SOURCES:
        raise check.fail(at("history"), f"must be {' or '.join(HISTORY_SOURCES)} (whose replies grow the "
                                        f"history), got {history!r}")
    think = raw.get("think_time_s", 0.0)
    if isinstance(think, (list, tuple)):
        if len(think) != 2:
            raise check.fail(at("think_time_s"), f"must be seconds or [min, max], got {list(think)!r}")
        think = tuple(check.number(v, at("think_time_s") + (i,), float, 0) for i, v in enumerate(think))
        if think[0] > think[1]:
            raise check.fail(at("think_time_s"), f"[min, max] needs min <= max, got {list(think)!r}")
    else:
        think = check.number(think, at("think_time_s"), float, 0)
    return {"mode": mode, "history": history, "think_time_s": think,
            "max_turns": check.number(raw.get("max_turns"), at("max_turns"), int, 1, optional=True)}


def think_time(load: LoadSpec) -> ThinkTime:
    value = load.think_time_s
    return ThinkTime(*value) if isinstance(value, tuple) else ThinkTime(value, value)


def locust_args(load: LoadSpec) -> tuple[str, ...]:
    """The Locust flags of the replay (``--seed`` seeds the think times); none in single mode."""
    if load.mode != MULTI_TURN:
        return ()
    return ("--mode", MULTI_TURN, "--history", load.history, "--think-time", think_time(load).to_arg(),
            "--seed", str(load.seed))


def replay_settings(load: LoadSpec) -> dict[str, Any]:
    """``Variant.settings`` entries: only a multi-turn variant has them (single mode's stay as they were)."""
    if load.mode != MULTI_TURN:
        return {}
    return {f"load.{key}": getattr(load, key) for key in REPLAY_KEYS}
