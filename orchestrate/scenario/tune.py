"""``tune:``: a grid of server settings searched for the one that serves the most within the SLO.

Stage: scenario, a helper of ``orchestrate.scenario.parse``. ``tune.space`` is written like a ``matrix:`` of
server keys and llama-server flags and expands the same way, each point a variant (a candidate) that runs a
capacity search (``search:``, users by default, judged by ``slo:``); the rest says what wins and what the
search may spend:

```yaml
slo: {ttft_ms: 2000, tpot_ms: 100}
tune:
  space: {parallel: [2, 4, 8, 16], flash-attn: [on, off], ubatch-size: [128, 256, 512]}
  objective: capacity          # or decode_tok_s, joules_per_output_token, usd_per_mtok
  constraints: {peak_memory_gib: 8}
  budget: {server_starts: 12}  # and/or wall_s
  strategy: climb              # or grid
```

List each numeric axis's values in order: ``climb`` moves between neighbouring values, and a memory failure
prunes the larger ones (``orchestrate.tune.prune``).
"""

from __future__ import annotations

from typing import Any

from orchestrate.scenario.matrix import Combination, Target, axis_values, expand_matrix
from orchestrate.scenario.spec import TUNE_OBJECTIVES, Tune
from orchestrate.scenario.yamlsource import Checker

TUNE_KEYS = {"space", "objective", "constraints", "budget", "strategy"}
CONSTRAINT_KEYS = {"peak_memory_gib"}
BUDGET_KEYS = {"server_starts", "wall_s"}
STRATEGIES = ("climb", "grid")
REFUSED_BESIDE = {
    "matrix": "tune.space is the tune's matrix: move these axes into it",
    "variants": "a tune's candidates are the points of tune.space: put the shared settings at the top level",
    "on_load_failure": "a tune tries each setting once; one that fails to load is recorded and pruned, not retried",
}
DEFAULT_SEARCH = {"over": "users"}
"""A tune's capacity search when the scenario has no ``search:`` (its other keys take their defaults)."""


def tune_space(check: Checker, top: dict[str, Any], target: Target) -> tuple[Tune, list[Combination]]:
    """``tune:`` checked: its settings (``points`` still empty: the variants are named later) and the grid's
    combinations, each a candidate; errors name the line. ``target`` resolves an axis key as a matrix's does."""
    raw = check.mapping(top.get("tune"), ("tune",), TUNE_KEYS)
    for key, why in REFUSED_BESIDE.items():
        if key in top:
            raise check.fail((key,), f"not with tune: {why}")
    if top.get("repeats", 1) != 1:
        raise check.fail(("repeats",), "not with tune: a tune runs each candidate once; rerun its winner with "
                                       "repeats to confirm it")
    if "space" not in raw:
        raise check.fail(("tune",), "needs space: the settings to search, e.g. {parallel: [4, 8, 16], "
                                    "flash-attn: [on, off]}")

    def server_only(key: Any, at: tuple[Any, ...]) -> tuple[str, ...]:
        to = target(key, at)
        if to[0] != "server":
            raise check.fail(at, f"is a load key; a tune searches the server's settings (its capacity search sets "
                                 f"the load): set {key} under load:")
        return to

    space = raw["space"]
    axes = axis_values(space, check.fail, server_only, ("tune", "space"))
    combos = expand_matrix(space, check.fail, server_only, ("tune", "space"))
    objective = raw.get("objective", "capacity")
    if objective not in TUNE_OBJECTIVES:
        raise check.fail(("tune", "objective"), f"must be one of {', '.join(TUNE_OBJECTIVES)}, got {objective!r}")
    strategy = raw.get("strategy", "climb")
    if strategy not in STRATEGIES:
        raise check.fail(("tune", "strategy"), f"must be climb or grid, got {strategy!r}")
    constraints = check.mapping(raw.get("constraints"), ("tune", "constraints"), CONSTRAINT_KEYS)
    budget = check.mapping(raw.get("budget"), ("tune", "budget"), BUDGET_KEYS)
    n = check.number
    return Tune(axes, {}, objective,
                max_memory_gib=n(constraints.get("peak_memory_gib"), ("tune", "constraints", "peak_memory_gib"),
                                 float, 0.001, optional=True),
                server_starts=n(budget.get("server_starts"), ("tune", "budget", "server_starts"), int, 1,
                                optional=True),
                wall_s=n(budget.get("wall_s"), ("tune", "budget", "wall_s"), float, 1, optional=True),
                strategy=strategy), combos
