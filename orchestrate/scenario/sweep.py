"""Sweeps: one load key listing values (``users: [1, 2, 4, 8, 16, 32]``), each value a step run
against the same server start.

Stage: scenario → load. The scenario parser pulls the swept key out of a variant's merged load section
(``extract_sweep``), so every other module sees plain scalar ``LoadSpec``s: the variant's own (the first
value) and one per step (``Variant.steps``). Prompts are sampled once per variant for the warm-up and
every step together and dealt out in order (``deal_prompts``): no step replays another step's prompts,
so the prompt cache cannot flatter a later step.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from locustfiles.dataset import Prompt
from orchestrate.scenario.spec import DEFAULT_SETTLE_S, DEFAULT_WARMUP_PROMPTS, LoadSpec, Sweep, Variant
from orchestrate.scenario.yamlsource import Checker

SWEEP_KEYS = ("users", "max_tokens", "num_prompts", "spawn_rate", "rate")
"""Load keys whose value may be a list of step values."""
SWEEP_SETTINGS = ("warmup_prompts", "settle_s")
"""Load keys a sweep reads for itself (validated here; a plain variant's ``warmup_prompts`` is ``LoadSpec``'s)."""
def extract_sweep(check: Checker, load_raw: dict[str, Any], at: Callable[..., tuple[Any, ...]]
                  ) -> tuple[dict[str, Any], Sweep | None, list[dict[str, Any]]]:
    """Split a merged load section into its first step, the sweep, and every step's section.

    Returns ``(first, sweep, steps)``: without a list-valued key ``first`` is the section without
    the sweep settings, ``sweep`` is None and ``steps`` is empty. Each step section is validated by
    the caller like any load section, so a bad value names its key.
    """
    base = {k: v for k, v in load_raw.items() if k not in SWEEP_SETTINGS}
    swept = [k for k, v in base.items() if isinstance(v, list)]
    if not swept:
        if "settle_s" in load_raw:
            raise check.fail(at("settle_s"), "only means something in a sweep (a load key listing values, "
                                             "e.g. users: [1, 2, 4])")
        return {**base, **{k: v for k, v in load_raw.items() if k == "warmup_prompts"}}, None, []
    if len(swept) > 1:
        raise check.fail(at(swept[1]), f"only one load key may list values in a variant; "
                                       f"{' and '.join(swept)} both do (use a matrix for the other)")
    key, values = swept[0], base[swept[0]]
    if key not in SWEEP_KEYS:
        raise check.fail(at(key), f"cannot be swept; a sweep lists values of one of: {', '.join(SWEEP_KEYS)}")
    if not values:
        raise check.fail(at(key), "a sweep needs at least one value")
    if len(set(map(repr, values))) != len(values):
        raise check.fail(at(key), f"lists a value twice: {values}")
    warmup = check.number(load_raw.get("warmup_prompts", DEFAULT_WARMUP_PROMPTS), at("warmup_prompts"), int, 0)
    settle = check.number(load_raw.get("settle_s", DEFAULT_SETTLE_S), at("settle_s"), float, 0)
    steps = [{**base, key: value} for value in values]
    return steps[0], Sweep(key, tuple(values), warmup, float(settle)), steps


def sampling_load(variant: Variant) -> LoadSpec:
    """The load section prompts are sampled with: enough for the warm-up and every step, under the
    largest ``max_tokens`` (each step then caps its own)."""
    assert variant.sweep is not None
    return replace(variant.load, num_prompts=variant.sweep.warmup_prompts + sum(s.num_prompts for s in variant.steps),
                   max_tokens=max(s.max_tokens for s in variant.steps))


def warmup_load(variant: Variant) -> LoadSpec:
    """The warm-up runs at the sweep's highest concurrency (every slot touched), without a time cap."""
    assert variant.sweep is not None
    return replace(variant.steps[0], users=max(s.users for s in variant.steps), max_seconds=None)


def deal_prompts(prompts: list[Prompt], steps: list[LoadSpec], sweep: Sweep) -> tuple[list[Prompt], list[list[Prompt]]]:
    """The warm-up's prompts and each step's, in sampling order, numbered from 0 within each.

    A step gets fewer than its ``num_prompts`` only when the dataset ran short (the sampling
    summary says by how much); a step's ``max_tokens`` caps its prompts' output lengths.
    """
    dealt: list[list[Prompt]] = []
    pos = 0
    for n, cap in [(sweep.warmup_prompts, steps[0].max_tokens if steps else None),
                   *((step.num_prompts, step.max_tokens) for step in steps)]:
        chunk = prompts[pos:pos + n]
        pos += len(chunk)
        dealt.append([replace(p, index=i, max_tokens=min(p.max_tokens, cap) if cap else p.max_tokens,
                              turns=tuple((n, min(m, cap) if cap else m) for n, m in p.turns))  # multi-turn
                      for i, p in enumerate(chunk)])
    return dealt[0], dealt[1:]
