"""The load section's dataset keys (``dataset``, ``allow_truncated``) and the names a dataset may have.

Stage: scenario. ``scenario._load`` validates the keys here; the files themselves are read once per run,
before any server starts (``prompts.check_datasets``).
"""

from __future__ import annotations

from typing import Any, Callable

from locustfiles.dataset import PACKAGED
from orchestrate.scenario.spec import RANDOM_DATASET, TRACE_DATASET
from orchestrate.scenario.yamlsource import Checker
from orchestrate.standins.sharegpt_synth import parse_synthetic

DATASET_KEYS = ("dataset", "allow_truncated")
TRUNCATED_HINT = "pass --allow-truncated (load.allow_truncated: true) to use them"
"""How to go on with a file cut short, in the orchestrator's words (the flag and the scenario key)."""


def parse_dataset(check: Checker, raw: dict[str, Any], at: Callable[..., tuple[Any, ...]]) -> dict[str, Any]:
    """The dataset fields of ``LoadSpec`` from a merged load section, validated (not yet read)."""
    dataset = raw.get("dataset", "synthetic")
    valid = isinstance(dataset, str) and bool(dataset)
    try:
        if valid:
            parse_synthetic(dataset)  # a generated file's count must be a whole number >= 1
    except ValueError:
        valid = False
    if not valid:
        names = ", ".join(f"'{name}'" for name in PACKAGED)
        raise check.fail(at("dataset"), f"must be a file path, {names}, 'synthetic[:N]', "
                                        f"'synthetic-multiturn[:N]' (N >= 1), '{RANDOM_DATASET}' or '{TRACE_DATASET}', got {dataset!r}")
    if dataset.endswith(".jsonl") and raw.get("mode", "single") != "single":
        raise check.fail(at("mode"), "a JSONL of prompts holds single prompts; multi-turn replay needs a ShareGPT file")
    allow = raw.get("allow_truncated", False)
    if not isinstance(allow, bool):
        raise check.fail(at("allow_truncated"), f"must be true or false, got {allow!r}")
    return {"dataset": dataset, "allow_truncated": allow}
